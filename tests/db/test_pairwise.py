"""Pairwise judgments: one row per key (a judgment asked again replaces it) on SQLite and
PostgreSQL, JSON columns kept (absent values as SQL NULL), rows and detail reads."""

from __future__ import annotations

from typing import Any

from sqlalchemy import text
from sqlmodel import Session, select

from db.engine import get_engine
from db.evaluators import upsert_evaluator
from db.models import PairwiseJudgment, Response, Run
from db.pairwise import pairwise_detail, pairwise_rows, stored_pairwise_state, upsert_pairwise
from db.runs import ScoreFilter
from elitr_core.data.database import open_database, reading, writing
from tests import small_db

TEST2 = "meeting_en_test2_901"


def _responses(session: Session, model: str) -> list[int]:
    """Response ids of ``model``'s QA-st test2 run, in question order."""
    return list(session.exec(
        select(Response.id).join(Run).where(Run.model == model, Run.setting == "qa",
                                            Run.split == "test2")
        .order_by(Response.question_id)).all())


def _judgment(evaluator: int, a: int, b: int, order: str, **values: Any) -> dict[str, Any]:
    row = {"evaluator_id": evaluator, "response_a_id": a, "response_b_id": b, "order": order,
           "sample": 0, "status": "ok", "reason": None, "verdict": None,
           "completeness_a": None, "completeness_b": None, "conciseness_a": None,
           "conciseness_b": None, "key_facts": None, "support": None, "raw": None,
           "raw_facts": None}
    return row | values


def test_judgments_upsert_and_read_back(db_url: str) -> None:
    small_db.build(db_url)
    engine = open_database(db_url)
    with writing(engine) as session:
        judge = upsert_evaluator(session=session, slug="cream-judge", kind="llm")
        other = upsert_evaluator(session=session, slug="battle-judge", kind="llm")
        a, b, c = (_responses(session, m)[0] for m in ("A", "B", "C"))
        facts = ["The meeting was on Monday.", "PERSON2 leads the project."]
        rows = [
            _judgment(judge, a, b, "ab", completeness_a=1.0, completeness_b=0.5,
                      key_facts=facts, support={"a": [[1], [2]], "b": [[1], []]},
                      raw="alignment", raw_facts="facts"),
            _judgment(judge, a, b, "ba", status="unparsed", reason="no table found",
                      raw="???"),
            _judgment(other, a, c, "ab", verdict="tie"),
        ]
        upsert_pairwise(session=session, rows=rows)
        upsert_pairwise(session=session, rows=rows)  # the same again: nothing changes
        ids = (judge, a, b, c)
    judge, a, b, c = ids
    with reading(engine) as session:
        state = stored_pairwise_state(session=session, evaluator_id=judge)
    assert state == {(a, b, "ab", 0): ("ok", facts, "facts"),
                     (a, b, "ba", 0): ("unparsed", None, None)}
    with get_engine(db_url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM pairwisejudgment")).scalar_one() == 3
        # an absent JSON value is SQL NULL, not the JSON text 'null'
        assert conn.execute(text("SELECT count(*) FROM pairwisejudgment "
                                 "WHERE key_facts IS NULL")).scalar_one() == 2

    with writing(engine) as session:  # the unparsed judgment asked again
        upsert_pairwise(session=session, rows=[_judgment(
            judge, a, b, "ba", completeness_a=0.5, completeness_b=1.0, key_facts=facts,
            raw="second try")])
    with reading(engine) as session:
        state = stored_pairwise_state(session=session, evaluator_id=judge)
        ok = pairwise_rows(session, ScoreFilter())
        cream = pairwise_rows(session, ScoreFilter(evaluators=("cream-judge",)))
        ab_only = pairwise_rows(session, ScoreFilter(models=("A", "B")))
        a_only = pairwise_rows(session, ScoreFilter(models=("A",)))
        dev = pairwise_rows(session, ScoreFilter(split="dev"))
        unparsed = pairwise_rows(session, ScoreFilter(), status="unparsed")
    assert state[(a, b, "ba", 0)] == ("ok", facts, None)
    assert len(ok) == 3 and unparsed == [] and dev == []
    assert [(r["evaluator"], r["order"]) for r in cream] == [("cream-judge", "ab"),
                                                             ("cream-judge", "ba")]
    assert {(r["model_a"], r["model_b"]) for r in ab_only} == {("A", "B")}
    assert a_only == []  # both sides must be among the models
    first = cream[0]
    assert (first["meeting"], first["question_id"], first["split"]) == (TEST2, 1, "test2")
    assert first["seed"] is None and first["completeness_b"] == 0.5
    assert [r["verdict"] for r in ok if r["evaluator"] == "battle-judge"] == ["tie"]


def test_pairwise_detail(small_sqlite: str) -> None:
    engine = open_database(small_sqlite)
    with writing(engine) as session:
        judge = upsert_evaluator(session=session, slug="cream-judge", kind="llm")
        a, b = (_responses(session, m)[2] for m in ("A", "B"))
        upsert_pairwise(session=session, rows=[_judgment(
            judge, a, b, "ab", key_facts=["x"], support={"a": [[3]], "b": [[]]})])
        stored = session.exec(select(PairwiseJudgment.id)).one()
    with reading(engine) as session:
        detail = pairwise_detail(session, stored)
        missing = pairwise_detail(session, stored + 1)
    assert detail is not None and missing is None
    assert detail["text_a"] == f"A qa answers 3 of {TEST2}"
    assert detail["text_b"] == f"B qa answers 3 of {TEST2}"
    assert detail["key_facts"] == ["x"] and detail["support"] == {"a": [[3]], "b": [[]]}
