"""Queries of the benchmark's tables for the passes and importers: meetings, questions and their
translations, runs, responses, evaluators. Keyword-only, ``session`` first, like
:mod:`db.crud`; rows the core changes are written back with :func:`db.crud.save`. What to do
with the rows (which questions a task asks, when a run is done) stays in the core."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.models import Evaluator, Meeting, Question, QuestionTranslation, Response, Run, Score
from db.queries import run_label


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


def run_by_key(*, session: Session, key: dict[str, Any]) -> Run:
    """The run whose key columns (model, setting, ..., language) hold these values."""
    return session.exec(select(Run).where(*(getattr(Run, k) == v for k, v in key.items()))).one()


def run_by_id(*, session: Session, run_id: int) -> Run | None:
    """The run with this id."""
    return session.get(Run, run_id)


def run_answers(*, session: Session, run_id: int) -> dict[int, tuple[str, Mapping[str, Any]]]:
    """Question id -> (stored answer text, its metadata) of a run."""
    stmt = select(Response.question_id, Response.text, Response.meta).where(
        Response.run_id == run_id)
    return {qid: (text, meta) for qid, text, meta in session.exec(stmt)}


def response_count(*, session: Session, run_id: int) -> int:
    """How many answers a run has stored."""
    stmt = sa_select(func.count(col(Response.id))).where(col(Response.run_id) == run_id)
    return int(session.execute(stmt).scalar_one())


def evaluator_by_id(*, session: Session, evaluator_id: int) -> Evaluator | None:
    """The evaluator with this id."""
    return session.get(Evaluator, evaluator_id)


def has_scores(*, session: Session, evaluator_id: int) -> bool:
    """Whether the evaluator holds any score."""
    stmt = select(Score.id).where(Score.evaluator_id == evaluator_id).limit(1)
    return session.exec(stmt).first() is not None


def score_states(*, session: Session, evaluator_id: int) -> dict[tuple[int, int], str]:
    """(response id, sample) -> status of an evaluator's annotator-less scores."""
    stmt = select(Score.response_id, Score.sample, Score.status).where(
        Score.evaluator_id == evaluator_id, Score.annotator_key == 0)
    return {(rid, sample): status for rid, sample, status in session.exec(stmt)}


def responses_to_judge(*, session: Session, filters: dict[str, str | None],
                       models: Collection[str] = (), except_type: str | None = None,
                       labels: bool = False, by_question: bool = False,
                       ) -> list[tuple[Any, ...]]:
    """Stored responses with their run and question, in run and question order: response id,
    text, run seed, setting, language, question id, QA text, Conv text, reference; with
    ``labels`` the run's model, label (:func:`db.queries.run_label`), mode and split follow.

    ``filters`` maps run columns (split, setting, mode, language) to a value or None (any);
    ``models`` keeps the runs of these models (by name; empty: every run). ``by_question``
    orders by question, then run.
    """
    columns: list[Any] = [col(Response.id), col(Response.text), col(Run.seed),
                          col(Run.setting), col(Run.language), col(Question.id),
                          col(Question.qa_text), col(Question.conv_text),
                          col(Question.reference)]
    if labels:
        columns += [col(Run.model), run_label(), col(Run.mode), col(Run.split)]
    stmt: Any = (sa_select(*columns)
                 .join(Run, col(Run.id) == col(Response.run_id))
                 .join(Question, col(Question.id) == col(Response.question_id))
                 .order_by(*((col(Question.id), col(Run.id)) if by_question
                             else (col(Run.id), col(Question.id)))))
    stmt = _of_type(stmt, None, except_type)
    for name, value in filters.items():
        if value:
            stmt = stmt.where(getattr(Run, name) == value)
    if models:
        stmt = stmt.where(col(Run.model).in_(list(models)))
    return [tuple(row) for row in session.execute(stmt)]



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
