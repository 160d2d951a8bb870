"""The benchmark: meetings (with their transcripts), questions and their translations.
Keyword-only, ``session`` first; rows the core changes are written back with
:func:`db.keyed.save`. What to do with the rows (which questions a task asks) stays in the core.

The Meeting page's reads (the list, one transcript, a meeting's responses with their scores)
and the Home page's headline counts are here too: they start from the benchmark's tables.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.models import Evaluator, Meeting, Question, QuestionTranslation, Response, Run, Score
from db.runs import run_label


def meeting_rows(*, session: Session, split: str | None = None) -> list[Meeting]:
    """The meetings (of one split when given), by external id."""
    stmt = select(Meeting).order_by(col(Meeting.external_id))
    if split is not None:
        stmt = stmt.where(Meeting.split == split)
    return list(session.exec(stmt))


def _of_type(stmt: Any, only_type: str | None, except_type: str | None) -> Any:
    if only_type is not None:
        stmt = stmt.where(Question.question_type == only_type)
    if except_type is not None:
        stmt = stmt.where(Question.question_type != except_type)
    return stmt


def meeting_questions(*, session: Session, meeting_id: int, number: int | None = None,
                      only_type: str | None = None,
                      except_type: str | None = None) -> list[Question]:
    """A meeting's questions by number (one ``number``; of one type, or all but one)."""
    stmt = select(Question).where(Question.meeting_id == meeting_id)
    if number is not None:
        stmt = stmt.where(Question.number == number)
    return list(session.exec(_of_type(stmt.order_by(col(Question.number)), only_type,
                                      except_type)))


def question_references(*, session: Session, split: str) -> dict[tuple[str, int], tuple[int, str]]:
    """(meeting, question number) -> (question id, English reference) of one split."""
    stmt = (sa_select(col(Meeting.external_id), col(Question.number), col(Question.id),
                      col(Question.reference))
            .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
            .where(col(Meeting.split) == split))
    return {(meeting, number): (qid, reference)
            for meeting, number, qid, reference in session.execute(stmt)}


def has_questions(*, session: Session) -> bool:
    """Whether any question is stored (False on a fresh database)."""
    return session.exec(select(Question.id).limit(1)).first() is not None


def question_count(*, session: Session, split: str, meetings: Collection[str],
                   only_type: str | None = None, except_type: str | None = None) -> int:
    """How many questions these meetings of ``split`` hold (of one type, or all but one)."""
    stmt = (sa_select(func.count(col(Question.id)))
            .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
            .where(col(Meeting.split) == split, col(Meeting.external_id).in_(list(meetings))))
    return int(session.execute(_of_type(stmt, only_type, except_type)).scalar_one())


def translations(*, session: Session, languages: Collection[str],
                 question_ids: Collection[int] | None = None,
                 ) -> dict[tuple[int, str], QuestionTranslation]:
    """(question id, language) -> translation, for these languages (and questions)."""
    if not languages:
        return {}
    stmt = select(QuestionTranslation).where(
        col(QuestionTranslation.language).in_(list(languages)))
    if question_ids is not None:
        stmt = stmt.where(col(QuestionTranslation.question_id).in_(list(question_ids)))
    return {(t.question_id, t.language): t for t in session.exec(stmt)}


def question_ids(*, session: Session) -> dict[tuple[str, int], int]:
    """Map (meeting external id, question number) -> question id."""
    stmt = sa_select(col(Question.id), col(Meeting.external_id), col(Question.number)).join(
        Meeting,
        col(Meeting.id) == col(Question.meeting_id),
    )
    return {(m, n): qid for qid, m, n in session.execute(stmt)}


def question_facets(*, session: Session) -> dict[tuple[str, int], tuple[str, str]]:
    """Map (meeting external id, question number) -> (question type, answer position)."""
    stmt = sa_select(col(Meeting.external_id), col(Question.number), col(Question.question_type),
                  col(Question.answer_position)).join(
        Meeting, col(Meeting.id) == col(Question.meeting_id))
    return {(m, n): (t, p) for m, n, t, p in session.execute(stmt)}


def differentiating_keys(session: Session) -> tuple[tuple[str, int], ...]:
    """(meeting, question number) of the QA/Conv differentiating questions: those whose Conv
    phrasing differs from the QA one (16 dev + 17 test2 in the bundled data)."""
    stmt = (
        sa_select(col(Meeting.external_id), col(Question.number))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .where(col(Question.conv_text).is_not(None), col(Question.conv_text) != Question.qa_text)
        .order_by(col(Meeting.external_id), col(Question.number))
    )
    return tuple((str(m), int(n)) for m, n in session.execute(stmt))


def overview_counts(session: Session) -> dict[str, int]:
    """Headline counts for the home page."""

    def count(model: Any) -> int:
        return int(session.execute(sa_select(func.count()).select_from(model)).scalar_one())

    return {
        "meetings": count(Meeting),
        # benchmark questions only: a meeting's summary question (number 0) is not one
        "questions": int(session.execute(sa_select(func.count()).select_from(Question).where(
            col(Question.question_type) != "summary")).scalar_one()),
        "runs": count(Run),
        "responses": count(Response),
        "scores": count(Score),
        "transcripts": int(
            session.execute(
                sa_select(func.count()).where(col(Meeting.transcript).is_not(None))
            ).scalar_one()
        ),
    }


def question_rows(*, session: Session) -> list[dict[str, Any]]:
    """Every question: meeting, question_id (its number), split, type, position, the QA and
    Conv texts and the reference answer, by split, meeting and number."""
    stmt: Any = (sa_select(col(Meeting.external_id).label("meeting"),
                   col(Question.number).label("question_id"), col(Meeting.split),
                   col(Question.question_type), col(Question.answer_position),
                   col(Question.qa_text).label("question"),
                   col(Question.conv_text).label("question_conv"), col(Question.reference))
            .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
            .order_by(col(Meeting.split), col(Meeting.external_id), col(Question.number)))
    return [dict(row._mapping) for row in session.execute(stmt)]


def meetings(session: Session) -> list[dict[str, Any]]:
    """Meetings with question count and whether the transcript is present."""
    stmt: Any = (
        sa_select(
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
    stmt: Any = sa_select(col(Meeting.transcript)).where(col(Meeting.external_id) == meeting)
    value = session.execute(stmt).scalar_one_or_none()
    return None if value is None else str(value)


def meeting_browser(session: Session, meeting: str) -> list[dict[str, Any]]:
    """Every response to every question of one meeting, with the scores it received."""
    stmt: Any = (
        sa_select(
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
            sa_select(col(Score.response_id), col(Evaluator.slug), func.avg(col(Score.value)))
            .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id))
            .where(col(Score.response_id).in_(ids), col(Score.status) == "ok")
            .group_by(col(Score.response_id), col(Evaluator.slug))
        )
        for response_id, slug, value in session.execute(score_stmt):
            scores.setdefault(response_id, {})[slug] = value
    for row in rows:
        row.update(scores.get(row["response_id"], {}))
    return rows
