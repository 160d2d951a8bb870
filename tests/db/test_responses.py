"""Responses (db/responses.py) on the small seeded benchmark (tests/small_db.py) and on the
bundled data: the drilldown rows with their texts and judge outputs, the answers an evaluator
has not scored, look-ups by (run, question) in chunks."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, update
from sqlmodel import select

from db import responses
from db.evaluators import upsert_evaluator
from db.keyed import id_map, upsert
from db.models import (
    Evaluator,
    Meeting,
    QuestionTranslation,
    Response,
    Run,
    Score,
)
from db.responses import response_ids, response_rows, responses_without_score
from db.runs import ScoreFilter, filter_options
from db.scores import feedback_rows
from elitr_core.data.database import open_database, reading, writing
from tests.small_db import MEETINGS, upsert_score

DEV, TEST2 = MEETINGS


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


def test_statements_are_chunked(small_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(responses, "_CHUNK", 5)
    engine = open_database(small_sqlite)
    with writing(engine) as session:
        upsert(session=session, table=Meeting, keys=["external_id"], rows=[
            {"external_id": f"meeting_en_dev_{n:03d}", "split": "dev"} for n in range(12)])
        upsert(session=session, table=Meeting, keys=["external_id"], rows=[])
        pairs = [(r.run_id, r.question_id) for r in session.exec(select(Response))]
        found = response_ids(session=session, pairs=pairs)
        meetings = id_map(session=session, table=Meeting, keys=["external_id"],
                          where={"split": "dev"})
    assert len(pairs) == len(found) == 72 and set(found) == set(pairs)
    assert len(meetings) == 12 + 1  # the new ones and the benchmark's dev meeting
