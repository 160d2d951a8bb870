"""Scores (db/scores.py) on the small seeded benchmark (tests/small_db.py), on SQLite and
PostgreSQL: idempotent writes that update changed values only and keep annotators and samples
apart, the long scores rows and their id-level records."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlmodel import Session, select

from db.evaluators import upsert_evaluator
from db.models import NO_SEED, Annotator, Response, Score
from db.runs import ScoreFilter
from db.scores import score_records, score_row, score_rows, upsert_scores
from elitr_core.data.database import open_database, reading, writing
from tests import small_db
from tests.dbstate import counts, snapshot
from tests.small_db import MEETINGS, read, silver

DEV, TEST2 = MEETINGS


def test_score_rows(small_sqlite: str) -> None:
    rows = read(small_sqlite, score_rows, ScoreFilter())
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
    judged = read(small_sqlite, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev"))
    assert len(judged) == 36 and {r["annotator"] for r in judged} == {None}
    assert read(small_sqlite, score_rows, ScoreFilter(status="unparsed")) == []


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


def _score_rows(session: Session, evaluator: int, value: float) -> list[dict[str, object]]:
    responses = session.exec(select(Response.id).order_by(Response.id)).all()
    return [score_row(response_id=r, evaluator_id=evaluator, value=value)
            for r in responses]


def test_upserts_are_idempotent_and_update_only_what_changed(db_url: str) -> None:
    small_db.build(db_url)
    once = snapshot(db_url)
    small_db.build(db_url)  # every upsert of the benchmark again
    assert snapshot(db_url) == once

    engine = open_database(db_url)
    with writing(engine) as session:
        judge = upsert_evaluator(session=session, slug="judge-x", kind="llm")
        upsert_scores(session=session, rows=_score_rows(session, judge, 4.0))
    written = snapshot(db_url)
    assert counts(db_url)["score"] == 288 + 72
    with writing(engine) as session:  # the same values: nothing changes, not even updated_at
        upsert_scores(session=session, rows=_score_rows(session, judge, 4.0))
    assert snapshot(db_url) == written

    with writing(engine) as session:
        rows = _score_rows(session, judge, 4.0)
        rows[0] = rows[0] | {"value": 9.0}
        upsert_scores(session=session, rows=rows)
    assert counts(db_url)["score"] == 288 + 72  # updated in place, never a duplicate
    with reading(engine) as session:
        scores = session.exec(select(Score).where(Score.evaluator_id == judge)
                              .order_by(Score.response_id)).all()
    assert [s.value for s in scores[:2]] == [9.0, 4.0]
    assert scores[0].updated_at > scores[1].updated_at  # only the changed row was touched


def test_upsert_score_updates_one_key_and_keeps_annotators_apart(db_url: str) -> None:
    small_db.build(db_url)
    engine = open_database(db_url)
    with writing(engine) as session:
        judge = upsert_evaluator(session=session, slug="judge-x", kind="llm")
        response = session.exec(select(Response.id).order_by(Response.id)).first()
        small_db.upsert_score(session=session, response_id=response, evaluator_id=judge,
                              value=None, status="unparsed", reason="no score", raw="hmm")
        small_db.upsert_score(session=session, response_id=response, evaluator_id=judge,
                              value=6.0, raw="6/10", seconds_spent=1.5)
        small_db.upsert_score(session=session, response_id=response, evaluator_id=judge,
                              value=3.0, sample=1)
        annotator = session.exec(select(Annotator.id).where(Annotator.name == "ann1")).one()
        small_db.upsert_score(session=session, response_id=response, evaluator_id=judge,
                              value=8.0, annotator_id=annotator)
    with reading(engine) as session:
        rows = session.exec(select(Score).where(Score.evaluator_id == judge)
                            .order_by(Score.annotator_key, Score.sample)).all()
    assert [(r.annotator_key, r.sample, r.value, r.status) for r in rows] == [
        (0, 0, 6.0, "ok"), (0, 1, 3.0, "ok"), (annotator, 0, 8.0, "ok")]
    assert rows[0].reason is None and rows[0].raw == "6/10" and rows[0].seconds_spent == 1.5
    assert rows[0].annotator_key == 0 and rows[0].annotator_id is None


def test_score_row() -> None:
    assert score_row(response_id=1, evaluator_id=2, value=5.0) == {
        "response_id": 1, "evaluator_id": 2, "annotator_id": None, "annotator_key": 0,
        "sample": 0, "value": 5.0, "status": "ok"}
    row = score_row(response_id=1, evaluator_id=2, value=None, annotator_id=7, sample=3,
                    status="unparsed")
    assert (row["annotator_id"], row["annotator_key"], row["sample"]) == (7, 7, 3)
