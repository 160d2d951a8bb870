"""Runs (db/runs.py) on the small seeded benchmark (tests/small_db.py) and on the bundled
data: the run filters, the filters' options, a run's name with its variant, look-ups by key."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlmodel import select

from db.benchmark import question_ids
from db.keyed import upsert
from db.models import (
    NO_SEED,
    Evaluator,
    Question,
    Response,
    Run,
)
from db.responses import response_ids
from db.runs import ScoreFilter, filter_options, filter_runs, run_id
from db.scores import score_records, score_rows
from elitr_core.data.database import open_database, reading, writing
from tests import small_db
from tests.small_db import MEETINGS, read, upsert_score

DEV, TEST2 = MEETINGS


@pytest.mark.parametrize(("flt", "expected"), [
    (ScoreFilter(), 12),
    (ScoreFilter(split="dev"), 6),
    (ScoreFilter(split="dev", setting="conv"), 3),
    (ScoreFilter(mode="st", models=("A", "C")), 4),
    (ScoreFilter(setting="qa", mode="mt"), 0),
    (ScoreFilter(evaluators=("nobody",), status="unparsed"), 12),  # not run filters
])
def test_filter_runs(small_sqlite: str, flt: ScoreFilter, expected: int) -> None:
    runs = read(small_sqlite, lambda s: s.exec(filter_runs(select(Run), flt)).all())
    assert len(runs) == expected
    for run in runs:
        assert flt.split in (None, run.split) and flt.setting in (None, run.setting)
        assert flt.mode in (None, run.mode) and (not flt.models or run.model in flt.models)


def test_filter_options(small_sqlite: str) -> None:
    assert read(small_sqlite, filter_options) == {
        "split": ["dev", "test2"], "setting": ["conv", "qa"], "mode": ["mt", "st"],
        "models": ["A", "B", "C"], "evaluators": ["gold-human", "gpt-4", "silver-human"]}


def test_a_run_variant_is_its_own_model_in_every_table(db_url: str) -> None:
    """A retrieval run (``--variant bm25``) of model A must not be averaged into A's scores."""
    small_db.build(db_url)
    with writing(open_database(db_url)) as session:
        base = session.exec(select(Run).where(Run.model == "A", Run.setting == "qa",
                                              Run.mode == "st", Run.split == "dev")).one()
        upsert(session=session, table=Run,
               keys=["model", "setting", "mode", "split", "seed", "variant", "language"],
               rows=[{"model": "A", "setting": "qa", "mode": "st", "split": "dev",
                      "seed": base.seed, "variant": "bm25", "language": "en", "config": {}}])
        variant = session.exec(select(Run).where(Run.variant == "bm25")).one()
        responses = session.exec(select(Response).where(Response.run_id == base.id)).all()
        upsert(session=session, table=Response, keys=["run_id", "question_id"],
               rows=[{"run_id": variant.id, "question_id": r.question_id, "text": "short",
                      "meta": {}} for r in responses])
        judge_id = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        for response in session.exec(select(Response).where(Response.run_id == variant.id)):
            upsert_score(session=session, response_id=response.id, evaluator_id=judge_id,
                         value=1.0)
    rows = read(db_url, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev",
                                                 setting="qa", mode="st"))
    by_model = Counter(r["model"] for r in rows)
    assert by_model["A (bm25)"] == by_model["A"] == len(responses)
    assert {r["score"] for r in rows if r["model"] == "A (bm25)"} == {1.0}
    only = read(db_url, score_rows, ScoreFilter(models=("A (bm25)",)))
    assert {r["model"] for r in only} == {"A (bm25)"}
    assert "A (bm25)" in read(db_url, filter_options)["models"]
    records = read(db_url, score_records, ScoreFilter())
    assert "A (bm25)" in {run[-1] for run in records["runs"]}



def test_a_czech_run_is_its_own_model_in_every_table(db_url: str) -> None:
    """A Czech run (``language="cs"``) of model A, and a Czech retrieval run, are rows of their
    own (``A [cs]``, ``A (bm25) [cs]``), never averaged into A's English scores; the runs
    export's model filter names them the same way."""
    from elitr_core.export.runs import runs_table

    small_db.build(db_url)
    with writing(open_database(db_url)) as session:
        base = session.exec(select(Run).where(Run.model == "A", Run.setting == "qa",
                                              Run.mode == "st", Run.split == "dev")).one()
        responses = session.exec(select(Response).where(Response.run_id == base.id)).all()
        judge_id = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        for variant, value in (("", 2.0), ("bm25", 3.0)):
            upsert(session=session, table=Run,
                   keys=["model", "setting", "mode", "split", "seed", "variant", "language"],
                   rows=[{"model": "A", "setting": "qa", "mode": "st", "split": "dev",
                          "seed": base.seed, "variant": variant, "language": "cs",
                          "config": {}}])
            czech = session.exec(select(Run).where(Run.language == "cs",
                                                   Run.variant == variant)).one()
            upsert(session=session, table=Response, keys=["run_id", "question_id"],
                   rows=[{"run_id": czech.id, "question_id": r.question_id, "text": "cs",
                          "meta": {}} for r in responses])
            for response in session.exec(select(Response).where(Response.run_id == czech.id)):
                upsert_score(session=session, response_id=response.id, evaluator_id=judge_id,
                             value=value)
    rows = read(db_url, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev",
                                                 setting="qa", mode="st"))
    by_model = Counter(r["model"] for r in rows)
    assert by_model["A"] == by_model["A [cs]"] == by_model["A (bm25) [cs]"] == len(responses)
    assert {r["score"] for r in rows if r["model"] == "A [cs]"} == {2.0}
    assert {r["score"] for r in rows if r["model"] == "A (bm25) [cs]"} == {3.0}
    assert {"A [cs]", "A (bm25) [cs]"} <= set(read(db_url, filter_options)["models"])
    only = read(db_url, score_rows, ScoreFilter(models=("A [cs]",)))
    assert {r["model"] for r in only} == {"A [cs]"}
    runs = read(db_url, runs_table, ScoreFilter(models=("A (bm25) [cs]",)))
    assert list(zip(runs["model"], runs["variant"], runs["language"], strict=True)) == [
        ("A", "bm25", "cs")]

def test_look_ups(small_sqlite: str) -> None:
    with reading(open_database(small_sqlite)) as session:
        questions = question_ids(session=session)
        question = session.get(Question, questions[(TEST2, 4)])
        key = {"model": "B", "setting": "conv", "mode": "mt", "split": "test2"}
        run = run_id(session=session, seed=NO_SEED, **key)
        stored = session.get(Run, run)
        missing = [run_id(session=session, **(key | {"seed": 2024})),
                   run_id(session=session, seed=NO_SEED, **(key | {"mode": "st"})),
                   run_id(session=session, seed=NO_SEED, variant="v2", **key),
                   run_id(session=session, seed=NO_SEED, language="cs", **key)]
        none = response_ids(session=session, pairs=[(run, -1)])
    assert len(questions) == 12
    assert question is not None and question.number == 4 and question.qa_text.endswith(f"{TEST2}?")
    assert stored is not None and (stored.model, stored.setting, stored.split) == ("B", "conv",
                                                                                  "test2")
    assert missing == [None, None, None, None]
    assert none == {}
