"""``export interleaving`` and ``export interleaving-span`` end to end: fake runs (Conv-mt,
QA-st and an interleaved Conv-int2 run at a 3,000-word span) of four meetings, judged by the
fake judge, exported by the CLI. The CSV is the statistics computed on the CLI's own ``scores``
export and the stored spans; JSON and LaTeX are the same frame rendered; the fake judge's
scores never include a filler (only the run's questions are responses)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from db.engine import get_engine
from db.runs import ScoreFilter
from db.transaction import reading
from elitr_core.cli.main import main
from elitr_core.data.scores import span_table
from elitr_core.export.formats import render
from elitr_core.stats.interleaving import isolated_vs_interleaved, span_trend
from tests.elitr_core.run_helpers import rows, set_transcripts

FOUR = tuple(f"meeting_en_test2_{i:03d}" for i in range(1, 5))
FILTERS = ("--split", "test2", "--model", "demo", "--evaluator", "fake-judge")


def export(capsys: pytest.CaptureFixture[str], table: str, url: str, *args: str) -> str:
    assert main(["export", table, "--db", url, *FILTERS, "--replicates", "100", *args]) == 0
    return capsys.readouterr().out


@pytest.fixture
def judged(bundled_sqlite: str) -> str:
    url = bundled_sqlite
    set_transcripts(url, FOUR)
    for args in (("--setting", "conv", "--mode", "mt"), ("--setting", "qa", "--mode", "st"),
                 ("--setting", "conv", "--interleave", "2", "--span", "3000")):
        assert main(["generate", "--backend", "fake", "--model", "demo", "--split", "test2",
                     "--meetings", ",".join(FOUR), *args, "--db", url]) == 0
    assert main(["judge", "--backend", "fake", "--judge-model", "fj", "--style", "gpt4",
                 "--evaluator", "fake-judge", "--model", "demo", "--db", url]) == 0
    return url


def test_exports_equal_the_statistics_on_the_cli_scores(
        judged: str, capsys: pytest.CaptureFixture[str]) -> None:
    scores = pd.read_csv(io.StringIO(export(capsys, "scores", judged)))
    assert set(scores["model"]) == {"demo", "demo (3k)"}
    interleaved = scores[scores["mode"] == "int2"]
    (stored,), = rows(judged, "SELECT COUNT(*) FROM response r JOIN run ON run.id = r.run_id "
                              "WHERE run.mode = 'int2'")
    assert len(interleaved) == stored  # one score per question asked, no filler scored
    with reading(get_engine(judged)) as session:
        spans = span_table(session, ScoreFilter(split="test2", models=("demo",)))
    assert len(spans) == stored and spans["span"].notna().all()
    # --interleave 2 over four meetings: two conversations of two, read from the run's plan
    (config,), = rows(judged, "SELECT config FROM run WHERE mode = 'int2'")
    groups = (json.loads(config) if isinstance(config, str) else config)["interleave_plan"]
    asked = {m: "+".join(g["meetings"]) for g in groups["groups"] for m in g["meetings"]}
    assert len(set(asked.values())) == 2
    assert spans["conversation"].tolist() == spans["meeting"].map(asked).tolist()
    for table, build in (("interleaving", lambda: isolated_vs_interleaved(
            scores, spans, n_bootstrap=100, seed=0)),
                         ("interleaving-span", lambda: span_trend(scores, spans))):
        expected = build()
        cli = export(capsys, table, judged)
        assert cli == render(expected, "csv", table), table
        assert export(capsys, table, judged, "--format", "json") == render(
            expected, "json", table)
        assert export(capsys, table, judged, "--format", "latex") == render(
            expected, "latex", table)
        assert json.loads(render(expected, "json", table))  # parses
    table = pd.read_csv(io.StringIO(export(capsys, "interleaving", judged)))
    assert list(table["isolated"]) == ["Conv-mt", "QA-st"]
    assert (table["run"] == "demo (3k)").all() and (table["n_meetings"] == 4).all()
    assert (table["n_conversations"] == 2).all()
    assert table["note"].str.contains("with 2 conversations the sign-flip test cannot").all()
    # the run filter takes an interleaved mode: the span table reads only those runs anyway
    assert export(capsys, "interleaving-span", judged, "--mode", "int2") == export(
        capsys, "interleaving-span", judged)


def test_the_cli_scores_export_of_an_interleaved_run_reads_back(
        bundled_db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``export scores`` names an interleaved run ``demo (3k)``, mode int2; ``import`` of that
    file was refused ("mode 'int2' is not one of st, mt"). It reads back now: the same
    scores, nothing changed, the same export, on SQLite and PostgreSQL."""
    url = bundled_db
    set_transcripts(url, FOUR)
    assert main(["generate", "--backend", "fake", "--model", "demo", "--split", "test2",
                 "--meetings", ",".join(FOUR), "--setting", "conv", "--interleave", "2",
                 "--span", "3000", "--db", url]) == 0
    assert main(["judge", "--backend", "fake", "--judge-model", "fj", "--style", "gpt4",
                 "--evaluator", "fake-judge", "--model", "demo", "--db", url]) == 0
    capsys.readouterr()
    exported = tmp_path / "scores.csv"
    assert main(["export", "scores", "--db", url, "--model", "demo (3k)",
                 "--out", str(exported)]) == 0
    assert "int2" in exported.read_text() and "demo (3k)" in exported.read_text()
    (before,), = rows(url, "SELECT COUNT(*) FROM score")
    assert main(["import", str(exported), "--db", url]) == 0
    assert "60 scores" in capsys.readouterr().out
    assert rows(url, "SELECT COUNT(*) FROM score") == [(before,)]
    again = tmp_path / "again.csv"
    assert main(["export", "scores", "--db", url, "--model", "demo (3k)",
                 "--out", str(again)]) == 0
    assert again.read_text() == exported.read_text()
    changed = exported.read_text().replace(",fake-judge,,0,", ",fake-judge-copy,,0,")
    (tmp_path / "copy.csv").write_text(changed)
    assert main(["import", str(tmp_path / "copy.csv"), "--db", url]) == 0
    (copied,), = rows(url, "SELECT COUNT(*) FROM score s JOIN evaluator e ON "
                           "e.id = s.evaluator_id WHERE e.slug = 'fake-judge-copy'")
    assert copied == 60
