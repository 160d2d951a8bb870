# SQLModel types table attributes as their Python values (Score.status: str), so mypy reads
# every column expression here as str/bool; these codes are the false positives that follow.
# mypy: disable-error-code="call-overload,arg-type,attr-defined,union-attr"
"""Queries and keyword-only writes of a study as a whole: the study found and listed, its
items (drawn from the stored responses), its progress and attention checks, its annotators'
scores and its aggregate, its design for the shared dataset.

The annotator's own queue (claims, assignments, answers) is :mod:`db.queue`, admission to a
study (seats, joins, lapses) :mod:`db.admission`; the decisions (what counts as too fast, who
is excluded) live in ``elitr_core.annotation.quality``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import Integer, case, delete, func, literal, null, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from db.keyed import upsert
from db.models import (
    Annotator,
    Assignment,
    Evaluator,
    Meeting,
    Participation,
    PersonalLink,
    Question,
    Response,
    Run,
    Score,
    Study,
    StudyItem,
    utcnow,
)
from db.scores import SCORE_KEY

_SC = Score.__table__


def study_by_name(*, session: Session, name: str, lock: bool = False) -> Study | None:
    """The study called ``name``; ``lock`` takes a row lock (PostgreSQL) for unit claims."""
    stmt = select(Study).where(Study.name == name)
    if lock:
        stmt = stmt.with_for_update()
    return session.execute(stmt).scalar_one_or_none()


def link_study(*, session: Session, annotator_id: int, study_id: int) -> None:
    """Make ``annotator_id``'s personal link open ``study_id`` only."""
    session.add(PersonalLink(annotator_id=annotator_id, study_id=study_id))
    session.flush()


def linked_study(*, session: Session, annotator_id: int) -> int | None:
    """The study ``annotator_id``'s personal link was made for (None: a pool's link)."""
    found = session.execute(select(PersonalLink.study_id).where(
        col(PersonalLink.annotator_id) == annotator_id)).scalar_one_or_none()
    return None if found is None else int(found)


def study_by_id(*, session: Session, study_id: int) -> Study | None:
    """The study with this id."""
    return session.get(Study, study_id)


def list_studies(*, session: Session) -> list[Study]:
    """Every study, newest first."""
    return list(session.execute(select(Study).order_by(Study.id.desc())).scalars())


def candidate_responses(
    *,
    session: Session,
    split: str | None = None,
    setting: str | None = None,
    mode: str | None = None,
    models: tuple[str, ...] | None = None,
    meetings: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Responses matching the filters: response_id, meeting, question_id, split, model."""
    stmt = (
        select(
            Response.id.label("response_id"),
            Meeting.external_id.label("meeting"),
            Question.number.label("question_id"),
            Question.id.label("question_pk"),
            Run.split,
            Run.setting,
            Run.mode,
            Run.model,
        )
        .join(Run, Run.id == Response.run_id)
        .join(Question, Question.id == Response.question_id)
        .join(Meeting, Meeting.id == Question.meeting_id)
        .order_by(Meeting.external_id, Question.number, Run.model, Response.id)
    )
    for column, value in (("split", split), ("setting", setting), ("mode", mode)):
        if value:
            stmt = stmt.where(getattr(Run, column) == value)
    if models:
        stmt = stmt.where(Run.model.in_(models))
    if meetings:
        stmt = stmt.where(Meeting.external_id.in_(meetings))
    return [dict(r._mapping) for r in session.execute(stmt)]


def add_study_items(*, session: Session, study_id: int, items: list[tuple[int, str]],
                    probabilities: dict[int, float] | None = None) -> None:
    """Store the study's (response id, unit) pairs and, for a sampled study, each item's
    selection probability (response id -> probability)."""
    chosen = probabilities or {}
    upsert(session=session, table=StudyItem, keys=["study_id", "response_id"],
           rows=[{"study_id": study_id, "response_id": r, "unit": u,
                  "probability": chosen.get(r)} for r, u in items])


def judge_values(*, session: Session, slug: str,
                 response_ids: list[int]) -> dict[int, list[float]]:
    """response id -> the scored values (one per sample) of judge ``slug`` on those responses."""
    stmt = (
        select(Score.response_id, Score.value)
        .join(Evaluator, Evaluator.id == Score.evaluator_id)
        .where(Evaluator.slug == slug, Score.status == "ok", Score.annotator_key == 0,
               Score.response_id.in_(response_ids))
        .order_by(Score.response_id, Score.sample)
    )
    out: dict[int, list[float]] = {}
    for response_id, value in session.execute(stmt):
        if value is not None:
            out.setdefault(int(response_id), []).append(float(value))
    return out


def item_probabilities(*, session: Session, study: str) -> list[dict[str, Any]]:
    """The response key (as the ``scores`` export) and selection probability of every item of
    study ``study`` that was drawn with one."""
    stmt = (
        select(Meeting.external_id.label("meeting"), Question.number.label("question_id"),
               Run.split, Run.setting, Run.mode, Run.seed, Run.model,
               StudyItem.probability)
        .join(Study, Study.id == StudyItem.study_id)
        .join(Response, Response.id == StudyItem.response_id)
        .join(Run, Run.id == Response.run_id)
        .join(Question, Question.id == Response.question_id)
        .join(Meeting, Meeting.id == Question.meeting_id)
        .where(Study.name == study, StudyItem.probability.is_not(None))
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def scores_in_order(*, session: Session, study_id: int,
                    evaluator_id: int) -> list[dict[str, Any]]:
    """The first score of each of the study's responses, in the order they arrived: response
    id, its run's split, setting, mode and model, the value, the item's probability and when
    it was stored. Scores of excluded annotators and aggregates are left out."""
    stmt = (
        select(Score.response_id, Run.split, Run.setting, Run.mode, Run.model, Score.value,
               StudyItem.probability, Score.created_at)
        .join(StudyItem, (StudyItem.response_id == Score.response_id)
              & (StudyItem.study_id == study_id))
        .join(Response, Response.id == Score.response_id)
        .join(Run, Run.id == Response.run_id)
        .where(Score.evaluator_id == evaluator_id, Score.annotator_key != 0,
               Score.status.in_(("ok", "lapsed")), Score.value.is_not(None))
        .order_by(Score.created_at, Score.id)
    )
    seen: set[int] = set()
    out = []
    for row in session.execute(stmt):
        if row.response_id not in seen:
            seen.add(row.response_id)
            out.append(dict(row._mapping))
    return out


def progress_rows(*, session: Session, study_id: int) -> list[dict[str, Any]]:
    """Per participation: annotator, unit, status, items, answered, checks, first/last answer."""
    stmt = (
        select(
            Annotator.name.label("annotator"),
            Participation.annotator_id,
            Participation.unit,
            Participation.status,
            Participation.order_seed,
            Participation.started_at,
            Participation.last_seen_at,
            func.count(Assignment.id).label("items"),
            func.count(Assignment.answered_at).label("answered"),
            func.coalesce(func.sum(case((Assignment.kind != "item", 1), else_=0)), 0)
            .label("checks"),
        )
        .join(Annotator, Annotator.id == Participation.annotator_id)
        .outerjoin(Assignment, Assignment.participation_id == Participation.id)
        .where(Participation.study_id == study_id)
        .group_by(Participation.id, Annotator.name)
        .order_by(Participation.id)
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def check_rows(*, session: Session, study_id: int) -> list[dict[str, Any]]:
    """Attention-check answers: annotator_id, kind, check_value (answered ones only)."""
    stmt = select(Assignment.annotator_id, Assignment.kind, Assignment.check_value).where(
        Assignment.study_id == study_id, Assignment.kind != "item",
        Assignment.answered_at.is_not(None),
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def study_score_rows(
    *, session: Session, evaluator_id: int,
    statuses: tuple[str, ...] = ("ok", "excluded", "lapsed"),
    response_ids: Collection[int] | None = None,
) -> list[dict[str, Any]]:
    """Individual annotator scores of a study (of some responses when given): response_id,
    annotator_id, name, value, status, seconds_spent, meeting."""
    stmt = (
        select(Score.response_id, Score.annotator_id, Annotator.name.label("annotator"),
               Score.value, Score.status, Score.seconds_spent,
               Meeting.external_id.label("meeting"))
        .join(Annotator, Annotator.id == Score.annotator_id)
        .join(Response, Response.id == Score.response_id)
        .join(Question, Question.id == Response.question_id)
        .join(Meeting, Meeting.id == Question.meeting_id)
        .where(Score.evaluator_id == evaluator_id, Score.annotator_key != 0,
               Score.status.in_(statuses))
    )
    if response_ids is not None:
        stmt = stmt.where(Score.response_id.in_(sorted(response_ids)))
    return [dict(r._mapping) for r in session.execute(stmt)]


def reference_values(*, session: Session, slug: str) -> dict[int, float]:
    """response id -> aggregate (annotator-less) score of evaluator ``slug`` (gold-human)."""
    stmt = (
        select(Score.response_id, Score.value)
        .join(Evaluator, Evaluator.id == Score.evaluator_id)
        .where(Evaluator.slug == slug, Score.annotator_key == 0, Score.status == "ok",
               Score.sample == 0)
    )
    return {int(r): float(v) for r, v in session.execute(stmt) if v is not None}


def study_items(*, session: Session, study_id: int) -> dict[int, str]:
    """response id -> unit for every item of a study."""
    stmt = select(StudyItem.response_id, StudyItem.unit).where(StudyItem.study_id == study_id)
    return {int(r): str(u) for r, u in session.execute(stmt)}


def set_scores_status(
    *, session: Session, evaluator_id: int, annotator_id: int, status: str
) -> int:
    """Mark every score of one annotator in a study's evaluator (ok <-> excluded)."""
    result = session.execute(
        update(Score)
        .where(Score.evaluator_id == evaluator_id, Score.annotator_key == annotator_id)
        .values(status=status, updated_at=utcnow())
    )
    return int(result.rowcount or 0)


def store_aggregates(*, session: Session, evaluator_id: int,
                     response_ids: Collection[int] | None = None) -> int:
    """Replace a study's aggregate rows (of some responses when given) with the mean of its
    included (status ``ok``) annotator scores; return how many were stored.

    Computed and written by the database in one statement after the delete: a finishing submit
    runs this under the study's aggregate lock, so no Python work is done while it is held.
    """
    delete_aggregates(session=session, evaluator_id=evaluator_id, response_ids=response_ids)
    now = literal(utcnow(), _SC.c.updated_at.type)
    means = (
        select(_SC.c.response_id, literal(evaluator_id, Integer), null(), literal(0),
               literal(0), func.avg(_SC.c.value), literal("ok"), now, now)
        .where(_SC.c.evaluator_id == evaluator_id, _SC.c.annotator_key != 0,
               _SC.c.status == "ok")
        .group_by(_SC.c.response_id)
    )
    if response_ids is not None:
        means = means.where(_SC.c.response_id.in_(sorted(response_ids)))
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(_SC).from_select(
        ["response_id", "evaluator_id", "annotator_id", "annotator_key", "sample", "value",
         "status", "created_at", "updated_at"], means)
    stmt = stmt.on_conflict_do_update(index_elements=list(SCORE_KEY), set_={
        "value": stmt.excluded.value, "status": stmt.excluded.status,
        "updated_at": stmt.excluded.updated_at})
    # counted from RETURNING: psycopg reports -1 as the rowcount of an INSERT ... SELECT
    return len(session.execute(stmt.returning(_SC.c.id)).all())


def delete_aggregates(*, session: Session, evaluator_id: int,
                      response_ids: Collection[int] | None = None) -> None:
    """Remove a study's aggregate rows (of some responses when given) before they are
    recomputed."""
    stmt = delete(Score).where(Score.evaluator_id == evaluator_id, Score.annotator_key == 0)
    if response_ids is not None:
        stmt = stmt.where(Score.response_id.in_(sorted(response_ids)))
    session.execute(stmt)


def study_rows(*, session: Session) -> list[dict[str, Any]]:
    """Every study's design (not its Prolific settings): name, evaluator, assignment, scores
    per item, attention-check rate, status, creation time, items and annotators."""
    items = (select(func.count()).where(col(StudyItem.study_id) == col(Study.id))
             .scalar_subquery())
    people = (select(func.count(func.distinct(col(Participation.annotator_id))))
              .where(col(Participation.study_id) == col(Study.id)).scalar_subquery())
    stmt = (select(col(Study.name).label("study"), col(Evaluator.slug).label("evaluator"),
                   col(Study.assignment), col(Study.per_item), col(Study.attention_rate),
                   col(Study.status), col(Study.created_at), items.label("items"),
                   people.label("annotators"))
            .join(Evaluator, col(Evaluator.id) == col(Study.evaluator_id))
            .order_by(col(Study.name)))
    return [dict(row._mapping) for row in session.execute(stmt)]


def released_reasons(*, session: Session) -> dict[tuple[str, str, str], str]:
    """(evaluator slug, annotator name, status) -> the reason stored with the annotator's
    ``lapsed`` or ``excluded`` participation (the latest one when there are several), for
    the rows of their scores that no table aggregates."""
    stmt = (
        select(Evaluator.slug, Annotator.name, Participation.status, Participation.reason)
        .join(Study, Study.id == Participation.study_id)
        .join(Evaluator, Evaluator.id == Study.evaluator_id)
        .join(Annotator, Annotator.id == Participation.annotator_id)
        .where(Participation.status.in_(("lapsed", "excluded")),
               Participation.reason.is_not(None))
        .order_by(Participation.id)
    )
    return {(slug, name, status): reason for slug, name, status, reason in session.execute(stmt)}
