"""Reads of the meetings, for the Meeting page: the list (with question counts and whether a
transcript is stored), one transcript, and every response to a meeting's questions with the
scores it received."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from db.models import Evaluator, Meeting, Question, Response, Run, Score
from db.queries import run_label


def meetings(session: Session) -> list[dict[str, Any]]:
    """Meetings with question count and whether the transcript is present."""
    stmt: Any = (
        select(
            col(Meeting.external_id).label("meeting"),
            col(Meeting.split),
            (col(Meeting.transcript).is_not(None)).label("transcript"),
            func.count(col(Question.id)).label("questions"),
        )
        .outerjoin(Question, col(Question.meeting_id) == col(Meeting.id))
        .group_by(col(Meeting.id))
        .order_by(col(Meeting.external_id))
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def meeting_transcript(session: Session, meeting: str) -> str | None:
    """The stored transcript of one meeting (None when it was never imported)."""
    stmt: Any = select(col(Meeting.transcript)).where(col(Meeting.external_id) == meeting)
    value = session.execute(stmt).scalar_one_or_none()
    return None if value is None else str(value)


def meeting_browser(session: Session, meeting: str) -> list[dict[str, Any]]:
    """Every response to every question of one meeting, with the scores it received."""
    stmt: Any = (
        select(
            col(Question.number).label("question"),
            col(Question.question_type),
            col(Question.answer_position),
            col(Question.qa_text),
            col(Question.conv_text),
            col(Question.reference),
            run_label().label("model"),
            col(Run.setting),
            col(Run.mode),
            col(Response.id).label("response_id"),
            col(Response.text).label("response"),
        )
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .join(Response, col(Response.question_id) == col(Question.id))
        .join(Run, col(Run.id) == col(Response.run_id))
        .where(col(Meeting.external_id) == meeting)
        .order_by(col(Question.number), col(Run.setting), col(Run.mode), col(Run.model))
    )
    rows = [dict(r._mapping) for r in session.execute(stmt)]
    ids = [r["response_id"] for r in rows]
    scores: dict[int, dict[str, float | None]] = {}
    if ids:
        score_stmt: Any = (
            select(col(Score.response_id), col(Evaluator.slug), func.avg(col(Score.value)))
            .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id))
            .where(col(Score.response_id).in_(ids), col(Score.status) == "ok")
            .group_by(col(Score.response_id), col(Evaluator.slug))
        )
        for response_id, slug, value in session.execute(score_stmt):
            scores.setdefault(response_id, {})[slug] = value
    for row in rows:
        row.update(scores.get(row["response_id"], {}))
    return rows
