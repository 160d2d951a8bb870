"""The judge audit's export tables through the CLI on the bundled data.

References: the statistics functions on the CLI's own ``scores`` export (the CSV must be the
same table, rendered); the gold-human means by hand (1e-9) where every response is labelled.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from elitr_core.cli.main import main
from elitr_core.errors import UserError
from elitr_core.export.judge_audit import (
    AUDIT_TABLES,
    AuditOptions,
    judge_family,
    response_lengths,
)
from elitr_core.vocab import EXPORT_COLUMNS

PAPER = ("--split", "test2", "--setting", "qa", "--mode", "st")


def export(capsys: pytest.CaptureFixture[str], *args: str) -> pd.DataFrame:
    assert main(["export", *args]) == 0
    return pd.read_csv(io.StringIO(capsys.readouterr().out))


def test_every_audit_table_has_its_contract_columns(bundled_sqlite: str,
                                                    capsys: pytest.CaptureFixture) -> None:
    for table in AUDIT_TABLES:
        if table in ("self-consistency", "ppi-active", "interleaving", "interleaving-span",
                     "study-monitor", "study-monitor-sequences"):
            # one sample per judge; no (sampled) study and no interleaved run in the bundled
            continue  # data (each tested on its own data elsewhere)
        filters = ("--evaluator", "gpt-4") if table in ("turn-effect", "st-vs-mt") else PAPER
        frame = export(capsys, table, "--db", bundled_sqlite, *filters, "--replicates", "50")
        assert tuple(frame.columns) == EXPORT_COLUMNS[table], table
        assert len(frame) > 0, table


def test_ppi_on_the_bundled_data(bundled_sqlite: str, capsys: pytest.CaptureFixture) -> None:
    ppi = export(capsys, "ppi", "--db", bundled_sqlite, *PAPER).set_index("model")
    scores = export(capsys, "scores", "--db", bundled_sqlite, *PAPER)
    gold = scores[scores["evaluator"] == "gold-human"].groupby("model")["score"]
    judge = scores[scores["evaluator"] == "gpt-4"].groupby("model")["score"].mean()
    # gold-human scored every response of three models: PPI is their human mean
    assert sorted(ppi.index[ppi["n_labelled"] > 0]) == sorted(gold.groups)
    for model, values in gold:
        assert ppi.loc[model, "n_labelled"] == 130 and ppi.loc[model, "n_unlabelled"] == 0
        assert ppi.loc[model, "ppi_mean"] == pytest.approx(values.mean(), abs=1e-5)
    # nine models judged; the other six have a judge mean only (CSV: empty cells)
    assert len(ppi) == 9
    assert ppi["judge_mean"].to_numpy() == pytest.approx(judge.loc[ppi.index].to_numpy(),
                                                         abs=1e-5)
    assert ppi.loc["GPT-3.5", ["human_mean", "ppi_mean", "lambda"]].isna().all()


def test_bad_audit_options_are_one_line(bundled_sqlite: str, capsys: pytest.CaptureFixture
                                        ) -> None:
    assert main(["export", "ppi", "--db", bundled_sqlite, "--human", "nobody"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no score from the human evaluator nobody" in err[0]
    assert main(["export", "ppi-designs", "--db", bundled_sqlite, *PAPER,
                 "--budget", "1000"]) == 2
    assert "budget must lie between 2 and 389" in capsys.readouterr().err


def test_judge_family_and_lengths() -> None:
    assert judge_family(AuditOptions(judge="gpt-4")) == "GPT"
    assert judge_family(AuditOptions(judge="prometheus", judge_family="Other")) == "Other"
    with pytest.raises(UserError, match="--judge-family"):
        judge_family(AuditOptions(judge="prometheus"))
    responses = pd.DataFrame([{"meeting": "m", "question_id": 1, "split": "dev",
                               "setting": "qa", "mode": "st", "seed": None, "model": "A",
                               "response": "three short  words"}])
    assert response_lengths(responses)["length"].tolist() == [3.0]


def test_readme_lists_the_audit_columns_of_the_contract() -> None:
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "docs" / "judge-audit.md").read_text()
    for table in AUDIT_TABLES:
        line = re.search(rf"^{re.escape(table)} +(.+)$", readme, re.MULTILINE)
        assert line, f"docs/judge-audit.md lists no columns for {table}"
        assert tuple(c.strip() for c in line.group(1).split(",")) == EXPORT_COLUMNS[table]


def test_self_consistency_of_an_imported_two_sample_judge(
        bundled_sqlite: str, capsys: pytest.CaptureFixture, tmp_path) -> None:
    """A judge with 2 samples per response, imported as a scores CSV, through the CLI."""
    import numpy as np

    scores = export(capsys, "scores", "--db", bundled_sqlite, *PAPER, "--evaluator", "gpt-4",
                    "--model", "GPT-4")
    rng = np.random.default_rng(0)
    second = scores.assign(sample=1, score=np.clip(
        scores["score"] + rng.integers(-2, 3, len(scores)), 1, 10))
    both = pd.concat([scores, second]).assign(evaluator="judge-k")
    path = tmp_path / "judge-k.csv"
    both.to_csv(path, index=False)
    assert main(["import", str(path), "--db", bundled_sqlite]) == 0
    capsys.readouterr()
    out = export(capsys, "self-consistency", "--db", bundled_sqlite, *PAPER, "--model", "GPT-4",
                 "--judge", "judge-k", "--replicates", "100")
    assert out["statistic"].tolist() == ["krippendorff-alpha", "pearson", "pearson"]
    assert out["samples"].tolist() == [2, 1, 2] and out["n"].tolist() == [130, 130, 130]
    assert 0 < out.loc[0, "value"] < 1


def test_judge_effects_that_cannot_be_measured_are_rows_with_a_note(
        bundled_sqlite: str, capsys: pytest.CaptureFixture) -> None:
    """prometheus belongs to no model family: self-preference is a note asking for
    --judge-family, not a row that silently vanishes; the other effects stay."""
    out = export(capsys, "judge-effects", "--db", bundled_sqlite, *PAPER, "--judge",
                 "prometheus", "--replicates", "50")
    self_pref = out[out["effect"] == "self-preference"]
    assert len(self_pref) == 1 and self_pref["estimate"].isna().all()
    assert "pass --judge-family NAME" in self_pref["note"].iloc[0]
    assert out[out["effect"] == "answer position"]["estimate"].notna().all()
    assert set(out["effect"]) == {"verbosity", "self-preference", "answer position"}


def test_missing_texts_and_constant_inputs_name_their_cause() -> None:
    from elitr_core.export.judge_audit import audit_table
    from tests.elitr_core.stats.test_judge_effects import verbose_judge

    df, lengths = verbose_judge()
    options = AuditOptions(judge="gpt-4", human="gold-human", replicates=50)
    out = audit_table("judge-effects", df, options, lengths=None)
    verbosity = out[out["effect"] == "verbosity"].iloc[0]
    assert pd.isna(verbosity["estimate"]) and "no response text" in verbosity["note"]
    same = audit_table("judge-effects", df, options, lengths=lengths.assign(length=50.0))
    assert "same length" in same[same["effect"] == "verbosity"]["note"].iloc[0]
    full = audit_table("judge-effects", df, options, lengths=lengths)
    assert full["note"].fillna("").eq("").all() and len(full) == 2 + 3 + 4
