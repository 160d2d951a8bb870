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
