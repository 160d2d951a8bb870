"""Read queries on the small seeded benchmark (tests/small_db.py) and on the bundled data:
filters, the long scores rows and their id-level records (SQLite and PostgreSQL), counts."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import delete, update
from sqlmodel import select

from db.crud import upsert_evaluator
from db.keyed import upsert
from db.models import NO_SEED, Evaluator, QuestionTranslation, Response, Run, Score
from db.queries import (
    ScoreFilter,
    feedback_rows,
    filter_options,
    filter_runs,
    response_rows,
    responses_without_score,
    score_records,
    score_rows,
)
from elitr_core.data.database import open_database, reading, writing
from tests import small_db
from tests.small_db import MEETINGS, silver, upsert_score

DEV, TEST2 = MEETINGS


def _read(url: str, query: Any, *args: Any, **kw: Any) -> Any:
    with reading(open_database(url)) as session:
        return query(session, *args, **kw)


@pytest.mark.parametrize(("flt", "expected"), [
    (ScoreFilter(), 12),
    (ScoreFilter(split="dev"), 6),
    (ScoreFilter(split="dev", setting="conv"), 3),
    (ScoreFilter(mode="st", models=("A", "C")), 4),
    (ScoreFilter(setting="qa", mode="mt"), 0),
    (ScoreFilter(evaluators=("nobody",), status="unparsed"), 12),  # not run filters
])
def test_filter_runs(small_sqlite: str, flt: ScoreFilter, expected: int) -> None:
    runs = _read(small_sqlite, lambda s: s.exec(filter_runs(select(Run), flt)).all())
    assert len(runs) == expected
    for run in runs:
        assert flt.split in (None, run.split) and flt.setting in (None, run.setting)
        assert flt.mode in (None, run.mode) and (not flt.models or run.model in flt.models)


def test_score_rows(small_sqlite: str) -> None:
    rows = _read(small_sqlite, score_rows, ScoreFilter())
    assert len(rows) == 288
    keys = [(r["split"], r["setting"], r["mode"], r["model"], r["meeting"], r["question_id"],
             r["evaluator"]) for r in rows]
    assert keys == sorted(keys)  # the stable order of the export
    assert {r["seed"] for r in rows} == {None}  # no seed: None, never the stored -1
    row = next(r for r in rows if r["evaluator"] == "silver-human" and r["annotator"] == "ann2"
               and r["model"] == "C" and r["meeting"] == TEST2 and r["question_id"] == 5
               and r["setting"] == "qa")
    assert row["score"] == silver("ann2", "C", TEST2, 5, "qa") and row["status"] == "ok"
    assert (row["question_type"], row["answer_position"], row["setting"]) == ("who", "M", "qa")
    judged = _read(small_sqlite, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev"))
    assert len(judged) == 36 and {r["annotator"] for r in judged} == {None}
    assert _read(small_sqlite, score_rows, ScoreFilter(status="unparsed")) == []


def _joined(records: dict[str, list[tuple[Any, ...]]]) -> Counter[tuple[Any, ...]]:
    """The rows of ``score_records`` joined in Python, as score_rows would give them."""
    runs = {r[0]: r[1:] for r in records["runs"]}
    questions = {q[0]: q[1:3] for q in records["questions"]}
    evaluators = dict(records["evaluators"])
    annotators = dict(records["annotators"])
    return Counter(
        (*questions[q], *runs[run], evaluators[e], annotators.get(a), sample, value)
        for run, q, e, a, sample, value in records["scores"]
        if run in runs and e in evaluators)


FILTERS = (
    ScoreFilter(),
    ScoreFilter(split="dev", evaluators=("gpt-4", "silver-human"), models=("A", "B")),
    ScoreFilter(setting="conv", mode="mt"),
)


def test_score_records_hold_the_score_rows(db_url: str) -> None:
    small_db.build(db_url)
    for flt in FILTERS:
        with reading(open_database(db_url)) as session:
            records = score_records(session, flt)
            rows = score_rows(session, flt)
        expected = Counter(
            (r["meeting"], r["question_id"], r["split"], r["setting"], r["mode"],
             NO_SEED if r["seed"] is None else r["seed"], r["model"], r["evaluator"],
             r["annotator"], r["sample"], r["score"]) for r in rows)
        assert _joined(records) == expected and len(rows) > 0, flt
        if flt != ScoreFilter():  # the filters act in SQL, not only in the join
            assert len(records["scores"]) == len(rows), flt


def test_response_and_feedback_rows(small_sqlite: str) -> None:
    flt = ScoreFilter(split="test2")
    engine = open_database(small_sqlite)
    with writing(engine) as session:
        judge_id = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        response = session.exec(select(Response.id).join(Run).where(Run.split == "test2")
                                .order_by(Response.id)).first()
        upsert_score(session=session, response_id=response, evaluator_id=judge_id, value=7.0,
                     raw="Rating: [[7]]")
    with reading(engine) as session:
        rows = response_rows(session, flt)
        only_gold = response_rows(session, ScoreFilter(split="test2",
                                                       evaluators=("gold-human",)))
        feedback = feedback_rows(session, flt)
        none = feedback_rows(session, ScoreFilter(split="dev"))
    assert len(rows) == len(only_gold) == 36  # the evaluator filter does not apply
    conv = {(r["question_id"], r["setting"]): r["question"] for r in rows if r["model"] == "A"}
    assert conv[(1, "conv")] == f"And question 1 of {TEST2}?"  # the Conv phrasing
    assert conv[(1, "qa")] == f"Question 1 of {TEST2}?"
    assert conv[(2, "conv")] == f"Question 2 of {TEST2}?"  # same in both: the QA text
    assert {r["reference"] for r in rows if r["question_id"] == 3} == {f"Reference 3 of {TEST2}"}
    assert [(r["evaluator"], r["sample"], r["feedback"]) for r in feedback] == [
        ("gpt-4", 0, "Rating: [[7]]")]
    assert feedback[0]["seed"] is None and none == []


def test_filter_options(small_sqlite: str) -> None:
    assert _read(small_sqlite, filter_options) == {
        "split": ["dev", "test2"], "setting": ["conv", "qa"], "mode": ["mt", "st"],
        "models": ["A", "B", "C"], "evaluators": ["gold-human", "gpt-4", "silver-human"]}


def test_responses_without_score(small_sqlite: str) -> None:
    engine = open_database(small_sqlite)
    with writing(engine) as session:
        metric = upsert_evaluator(session=session, slug="rouge-l", kind="metric")
        judge_id = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        first, second = session.exec(select(Response).order_by(Response.id).limit(2)).all()
        session.execute(delete(Score).where(Score.evaluator_id == judge_id,
                                            Score.response_id == first.id))
        session.execute(update(Run).where(Run.id == second.run_id).values(language="cs"))
        upsert(session=session, table=QuestionTranslation, keys=["question_id", "language"],
               rows=[{"question_id": second.question_id, "language": "cs",
                      "reference": "Odpověď"}])
        first_id, second_id, second_run = first.id, second.id, second.run_id
    with reading(engine) as session:
        judged = responses_without_score(session, judge_id, ScoreFilter())
        todo = responses_without_score(session, metric, ScoreFilter())
        dev = responses_without_score(session, metric, ScoreFilter(split="dev"))
        run = session.get(Run, second_run)
    assert [r[0] for r in judged] == [first_id]
    assert len(todo) == 72 and [r[0] for r in todo] == sorted(r[0] for r in todo)
    assert len(dev) == 36
    texts = {rid: (text, reference) for rid, text, reference in todo}
    assert texts[second_id][1] == "Odpověď"  # the run's language: the translated reference
    assert texts[first_id][1].startswith("Reference ")
    assert run is not None and texts[second_id][0].startswith(f"{run.model} {run.setting}")


def test_queries_give_texts_and_feedback(bundled_sqlite: str) -> None:
    with reading(open_database(bundled_sqlite)) as session:
        options = filter_options(session)
        conv = response_rows(session, ScoreFilter(split="test2", setting="conv",
                                                  models=("GPT-4",)))
        qa = response_rows(session, ScoreFilter(split="test2", setting="qa", mode="mt",
                                                models=("GPT-4",)))
        assert feedback_rows(session, ScoreFilter()) == []  # imported scores carry no output
    assert options["evaluators"] == ["gold-human", "gpt-4", "prometheus", "silver-human"]
    assert options["split"] == ["dev", "test2"] and len(options["models"]) == 9
    assert len(conv) == len(qa) == 130
    differing = [c for c, q in zip(conv, qa, strict=True) if c["question"] != q["question"]]
    assert len(differing) == 17  # the QA/Conv differentiating questions of test2
    assert all(r["seed"] is None for r in conv)


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
    rows = _read(db_url, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev",
                                                 setting="qa", mode="st"))
    by_model = Counter(r["model"] for r in rows)
    assert by_model["A (bm25)"] == by_model["A"] == len(responses)
    assert {r["score"] for r in rows if r["model"] == "A (bm25)"} == {1.0}
    only = _read(db_url, score_rows, ScoreFilter(models=("A (bm25)",)))
    assert {r["model"] for r in only} == {"A (bm25)"}
    assert "A (bm25)" in _read(db_url, filter_options)["models"]
    records = _read(db_url, score_records, ScoreFilter())
    assert "A (bm25)" in {run[-1] for run in records["runs"]}
