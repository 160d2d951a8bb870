"""Keyword-only writes and look-ups: idempotent upserts on SQLite and PostgreSQL, updates of
changed values only, chunked statements, id look-ups."""

from __future__ import annotations

from sqlmodel import Session, select

from db import crud, keyed
from db.models import Annotator, Evaluator, Response, Score
from elitr_core.data.database import open_database, reading, writing
from tests import small_db
from tests.dbstate import counts, snapshot


def _score_rows(session: Session, evaluator: int, value: float) -> list[dict[str, object]]:
    responses = session.exec(select(Response.id).order_by(Response.id)).all()
    return [crud.score_row(response_id=r, evaluator_id=evaluator, value=value)
            for r in responses]


def test_upserts_are_idempotent_and_update_only_what_changed(db_url: str) -> None:
    small_db.build(db_url)
    once = snapshot(db_url)
    small_db.build(db_url)  # every upsert of the benchmark again
    assert snapshot(db_url) == once

    engine = open_database(db_url)
    with writing(engine) as session:
        judge = crud.upsert_evaluator(session=session, slug="judge-x", kind="llm")
        crud.upsert_scores(session=session, rows=_score_rows(session, judge, 4.0))
    written = snapshot(db_url)
    assert counts(db_url)["score"] == 288 + 72
    with writing(engine) as session:  # the same values: nothing changes, not even updated_at
        crud.upsert_scores(session=session, rows=_score_rows(session, judge, 4.0))
    assert snapshot(db_url) == written

    with writing(engine) as session:
        rows = _score_rows(session, judge, 4.0)
        rows[0] = rows[0] | {"value": 9.0}
        crud.upsert_scores(session=session, rows=rows)
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
        judge = crud.upsert_evaluator(session=session, slug="judge-x", kind="llm")
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
    assert crud.score_row(response_id=1, evaluator_id=2, value=5.0) == {
        "response_id": 1, "evaluator_id": 2, "annotator_id": None, "annotator_key": 0,
        "sample": 0, "value": 5.0, "status": "ok"}
    row = crud.score_row(response_id=1, evaluator_id=2, value=None, annotator_id=7, sample=3,
                         status="unparsed")
    assert (row["annotator_id"], row["annotator_key"], row["sample"]) == (7, 7, 3)


def test_upsert_evaluator_returns_the_existing_id(small_sqlite: str) -> None:
    with writing(open_database(small_sqlite)) as session:
        first = crud.upsert_evaluator(session=session, slug="new-judge", kind="llm",
                                      description="first")
        again = crud.upsert_evaluator(session=session, slug="new-judge", kind="human",
                                      description="second")
        gold = crud.upsert_evaluator(session=session, slug="gold-human", kind="human")
    assert first == again != gold
    with reading(open_database(small_sqlite)) as session:
        kinds = keyed.id_map(session=session, table=Evaluator, keys=["slug", "kind"])
    assert kinds[("new-judge", "llm")] == first  # created once, never overwritten
    assert ("new-judge", "human") not in kinds


