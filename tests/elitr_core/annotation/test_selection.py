"""Studies that score a sample: uniform and active selection, stored probabilities, and the
inverse-probability-weighted PPI mean of ``export ppi-active``.

References: :func:`elitr_core.stats.active.selection_probabilities` on the judge scores read
back from the database (1e-12); the IPW mean computed by hand from the stored probabilities,
for a finished and a half-scored study (1e-5, the CSV's 6 significant digits).
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import select

from db.evaluators import upsert_evaluator
from db.models import StudyItem
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, reading, writing
from elitr_core.errors import UserError
from elitr_core.stats.active import active_mean, selection_probabilities
from tests.small_db import upsert_score

MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
FILTERS = dict(split="test2", setting="qa", mode="st", models=MODELS)
CLI_FILTERS = ["--split", "test2", "--setting", "qa", "--mode", "st",
               *[a for m in MODELS for a in ("--model", m)]]


def stored(url: str, study: str) -> dict[int, float | None]:
    from db.models import Study

    with reading(open_database(url)) as session:
        study_id = session.execute(select(Study.id).where(Study.name == study)).scalar_one()
        rows = session.execute(select(StudyItem.response_id, StudyItem.probability)
                               .where(StudyItem.study_id == study_id))
        return {int(r): p for r, p in rows}


def judge_scores(url: str) -> dict[int, float]:
    from db import studies as sq

    with reading(open_database(url)) as session:
        return sq.reference_values(session=session, slug="gpt-4")


def candidates(url: str) -> list[int]:
    from db import studies as sq

    with reading(open_database(url)) as session:
        return [r["response_id"] for r in sq.candidate_responses(session=session, **FILTERS)]


def test_active_selection_stores_probabilities_favouring_mid_scale(bundled_sqlite: str) -> None:
    spec = StudySpec(name="active", pool="gold", sample=60, selection="active", seed=3,
                     **FILTERS)
    with writing(open_database(bundled_sqlite)) as session:
        summary = create_study(session, spec)
    items = stored(bundled_sqlite, "active")
    assert summary["items"] == len(items) and 30 < len(items) < 90  # about 60 drawn of 390
    ids = candidates(bundled_sqlite)
    scores = judge_scores(bundled_sqlite)
    f = np.array([scores[i] for i in ids])
    expected = dict(zip(ids, selection_probabilities(1 - np.abs(f - 5.5) / 4.5, 60),
                        strict=True))
    for response_id, probability in items.items():
        assert probability == pytest.approx(expected[response_id], abs=1e-12)
    drawn = np.array([scores[i] for i in items])
    # mid-scale judge scores are over-represented among the drawn items
    middle = lambda v: np.mean((v >= 4) & (v <= 7))  # noqa: E731
    assert middle(drawn) > middle(f)


def test_uniform_selection_and_bad_options(bundled_sqlite: str) -> None:
    with writing(open_database(bundled_sqlite)) as session:
        create_study(session, StudySpec(name="uniform", pool="gold", sample=39, **FILTERS))
    items = stored(bundled_sqlite, "uniform")
    assert list(items.values()) == pytest.approx([39 / 390] * len(items))
    with writing(open_database(bundled_sqlite)) as session:
        create_study(session, StudySpec(name="all", pool="gold", **FILTERS))
    assert set(stored(bundled_sqlite, "all").values()) == {None}
    for spec, message in (
        (StudySpec(name="x", pool="gold", sample=0, **FILTERS), "between 1 and the 390"),
        (StudySpec(name="x", pool="gold", sample=10, selection="greedy", **FILTERS),
         "uniform or active"),
        # prometheus scored test2 QA-st of three models only: GPT-3.5 has no score
        (StudySpec(name="x", pool="gold", sample=10, selection="active", judge="prometheus",
                   split="test2", setting="qa", mode="st"), "run the judge first"),
    ):
        with pytest.raises(UserError, match=message), \
                writing(open_database(bundled_sqlite)) as session:
            create_study(session, spec)


def sampled_study(url: str, name: str, sample: int, seed: int,
                  every: int = 1) -> tuple[dict[int, float | None], list[int], dict[int, float]]:
    """An active study of ``sample`` expected items created by the CLI, every ``every``-th
    item (by response id) scored by ``gold-human:NAME`` with the gold-human score; returns the
    stored probabilities, the scored response ids and the gold scores."""
    from db import studies as q

    assert main(["study", "create", "--db", url, "--name", name, "--pool", "gold",
                 "--per-item", "1", "--split", "test2", "--setting", "qa", "--mode", "st",
                 "--models", ",".join(MODELS), "--sample", str(sample), "--selection",
                 "active", "--seed", str(seed)]) == 0
    items = stored(url, name)
    scored = sorted(items)[::every]
    with writing(open_database(url)) as session:  # the humans' answers: gold's
        gold = q.reference_values(session=session, slug="gold-human")
        evaluator = upsert_evaluator(session=session, slug=f"gold-human:{name}", kind="human")
        for response_id in scored:
            upsert_score(session=session, response_id=response_id, evaluator_id=evaluator,
                         value=gold[response_id])
    return items, scored, gold


def exported_active(url: str, study: str, capsys: pytest.CaptureFixture
                    ) -> tuple[pd.DataFrame, dict[int, float], list[dict]]:
    """``export ppi-active`` of a study's evaluator, the judge scores and the candidates."""
    from db import studies as q

    capsys.readouterr()
    assert main(["export", "ppi-active", "--db", url, *CLI_FILTERS,
                 "--human", f"gold-human:{study}"]) == 0
    out = pd.read_csv(io.StringIO(capsys.readouterr().out)).set_index("model")
    with reading(open_database(url)) as session:
        rows = q.candidate_responses(session=session, **FILTERS)
    return out, judge_scores(url), rows


@pytest.mark.parametrize("every", [1, 2])
def test_ppi_active_export_weights_by_the_stored_probabilities(
        bundled_sqlite: str, capsys: pytest.CaptureFixture, every: int) -> None:
    """Drawn means stored with a probability. Finished study (every item scored) and
    half-scored one: the unscored drawn items are counted per model and the scored ones
    weighted by 1 / (probability x share scored)."""
    items, scored, gold = sampled_study(bundled_sqlite, "act", 80, 5, every)
    out, scores, rows = exported_active(bundled_sqlite, "act", capsys)
    for model in MODELS:
        ids = [r["response_id"] for r in rows if r["model"] == model]
        drawn = [i for i in ids if i in items]
        done = [i for i in drawn if i in scored]
        got = out.loc[model]
        assert (got["n_labelled"], got["n_drawn_unscored"], got["n_unlabelled"]) == (
            len(done), len(drawn) - len(done), len(ids) - len(drawn))
        share = len(done) / len(drawn)
        terms = [scores[i] + ((gold[i] - scores[i]) / (items[i] * share) if i in done else 0)
                 for i in ids]
        assert got["active_mean"] == pytest.approx(np.mean(terms), abs=1e-5)
        ref = active_mean(np.array([scores[i] for i in ids]),
                          np.array([gold[i] for i in ids]), np.array([i in done for i in ids]),
                          np.array([items.get(i, 1.0) * share for i in ids]))
        assert got["active_ci_high"] == pytest.approx(ref.high, abs=1e-5)
        note = "" if pd.isna(got["note"]) else got["note"]
        assert (f"{len(done)} of its {len(drawn)} drawn responses scored" in note) == (
            every > 1)
    assert main(["export", "ppi-active", "--db", bundled_sqlite, *CLI_FILTERS]) == 2
    assert "gold-human:NAME" in capsys.readouterr().err
