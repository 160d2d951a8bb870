"""Reads of the benchmark (db/benchmark.py) on the small seeded benchmark (tests/small_db.py):
the differentiating questions, the Home page's counts and the Meeting page's reads."""

from __future__ import annotations

from statistics import mean

import pytest
from sqlalchemy import update
from sqlmodel import select

from db.benchmark import (
    differentiating_keys,
    meeting_browser,
    meeting_transcript,
    meetings,
    overview_counts,
)
from db.keyed import upsert
from db.models import Evaluator, Meeting, Response, Run
from db.runs import runs_per_model
from db.scores import scores_per_evaluator
from elitr_core.data.database import open_database, reading, writing
from tests import small_db
from tests.small_db import MEETINGS, gold, judge, read, silver, upsert_score

DEV, TEST2 = MEETINGS


def test_differentiating_keys(small_sqlite: str) -> None:
    assert read(small_sqlite, differentiating_keys) == ((DEV, 1), (TEST2, 1))


def test_counts_and_lists(small_sqlite: str) -> None:
    engine = open_database(small_sqlite)
    with writing(engine) as session:
        session.execute(update(Meeting).where(Meeting.external_id == DEV)
                        .values(transcript="(PERSON1) Hello."))
        upsert(session=session, table=Run,
               keys=["model", "setting", "mode", "split", "seed", "variant", "language"],
               rows=[{"model": "D", "setting": "qa", "mode": "st", "split": "dev",
                      "seed": 3, "variant": "", "language": "en", "backend": "fake",
                      "config": {}, "status": "running"}])
        judge_id = session.exec(select(Evaluator.id).where(Evaluator.slug == "gpt-4")).one()
        first = session.exec(select(Response.id).order_by(Response.id)).first()
        upsert_score(session=session, response_id=first, evaluator_id=judge_id, value=None,
                     sample=1, status="unparsed", reason="no score")
    with reading(engine) as session:
        assert overview_counts(session) == {"meetings": 2, "questions": 12, "runs": 13,
                                            "responses": 72, "scores": 289, "transcripts": 1}
        runs = runs_per_model(session)
        per_evaluator = scores_per_evaluator(session)
        listed = meetings(session)
    assert len(runs) == 13 and runs[-1]["model"] == "D"
    assert runs[-1]["responses"] == 0 and runs[-1]["seed"] == 3
    assert {r["responses"] for r in runs[:-1]} == {6}
    assert [(r["evaluator"], r["kind"], r["status"], r["scores"]) for r in per_evaluator] == [
        ("gold-human", "human", "ok", 72), ("gpt-4", "llm", "ok", 72),
        ("gpt-4", "llm", "unparsed", 1), ("silver-human", "human", "ok", 144)]
    assert [(m["meeting"], m["split"], bool(m["transcript"]), m["questions"])
            for m in listed] == [(DEV, "dev", True, 6), (TEST2, "test2", False, 6)]


def test_meeting_browser(small_sqlite: str) -> None:
    rows = read(small_sqlite, meeting_browser, TEST2)
    assert len(rows) == 6 * 6  # 6 questions x 3 models x 2 setting-modes
    assert [r["question"] for r in rows] == sorted(r["question"] for r in rows)
    row = next(r for r in rows if r["question"] == 2 and r["model"] == "B"
               and r["setting"] == "conv")
    assert row["gold-human"] == gold("B", TEST2, 2, "conv")
    assert row["gpt-4"] == judge("B", TEST2, 2, "conv")
    assert row["silver-human"] == pytest.approx(mean(silver(a, "B", TEST2, 2, "conv")
                                                     for a in small_db.ANNOTATORS))
    assert row["response"] == f"B conv answers 2 of {TEST2}" and row["conv_text"]
    assert read(small_sqlite, meeting_browser, "no-such-meeting") == []


def test_meeting_transcript(small_sqlite: str) -> None:
    with writing(open_database(small_sqlite)) as session:
        session.execute(update(Meeting).where(Meeting.external_id == DEV)
                        .values(transcript="(PERSON1) Hello.\n(PERSON2) Hi."))
    assert read(small_sqlite, meeting_transcript, DEV) == "(PERSON1) Hello.\n(PERSON2) Hi."
    assert read(small_sqlite, meeting_transcript, TEST2) is None
    assert read(small_sqlite, meeting_transcript, "no-such-meeting") is None
