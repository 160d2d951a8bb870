# SQLModel types table attributes as their Python values (Score.status: str), so mypy reads
# every column expression here as str/bool; these codes are the false positives that follow.
# mypy: disable-error-code="call-overload,arg-type,attr-defined,union-attr"
"""Queries and keyword-only writes of the annotator's queue: units claimed, participations
and assignments, answers and their hot path.

A study as a whole (found, its items, progress, scores and aggregate) is :mod:`db.studies`,
the annotators of a pool :mod:`db.evaluators`. No decisions live here (which unit to
claim): those are in ``elitr_core.annotation.studies``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import (
    Float,
    and_,
    bindparam,
    case,
    cast,
    func,
    literal,
    null,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Row
from sqlmodel import Session

from db.keyed import upsert
from db.models import (
    Assignment,
    Participation,
    Question,
    Response,
    Run,
    Score,
    Study,
    StudyItem,
    utcnow,
)
from db.scores import SCORE_KEY

#: First key of the advisory locks taken around a study's aggregate update.
AGGREGATE_LOCK = 11_001

# The participation's last_seen_at update of an answer, built once (see _answer_statements).
_SEEN = (update(Participation).where(Participation.id == bindparam("b_participation"))
         .values(last_seen_at=bindparam("b_now")))

# The annotator's hot path (submit, next item, queue view) folds what it reads into one
# statement each, on the tables (no ORM objects built): every statement costs about 0.4 ms of
# the app's CPU (SQLAlchemy, the driver, a round trip) whatever it does.
_ST, _AS, _PA, _SC = (Study.__table__, Assignment.__table__, Participation.__table__,
                      Score.__table__)
_MINE = and_(_AS.c.study_id == _ST.c.id, _AS.c.annotator_id == bindparam("b_annotator"),
             _AS.c.position == bindparam("b_position"))
#: the queue row at the position (null id: not the annotator's), its study (no row: the study
#: does not exist) and its participation's status
_TARGET = (
    select(_AS.c.id, _AS.c.kind, _AS.c.response_id, _AS.c.annotator_id,
           _AS.c.participation_id, _ST.c.id.label("study_id"), _ST.c.name.label("study_name"),
           _ST.c.status.label("study_status"), _ST.c.evaluator_id, _ST.c.per_item,
           _ST.c.prolific_code, _PA.c.status.label("participation_status"))
    .select_from(_ST.outerjoin(_AS, _MINE).outerjoin(_PA, _PA.c.id == _AS.c.participation_id))
    .where(_ST.c.id == bindparam("b_study"))
)
#: the study, the queue row, its texts (never the model) and the annotator's own score
_ITEM = (
    select(_AS.c.id, _AS.c.kind, _AS.c.check_text,
           _AS.c.check_value, _AS.c.unclear, Question.qa_text, Question.conv_text,
           Question.reference, Response.text.label("response"), Run.setting,
           _SC.c.value, _SC.c.raw)
    .select_from(
        _ST.outerjoin(_AS, _MINE)
        .outerjoin(Response, Response.id == _AS.c.response_id)
        .outerjoin(Question, Question.id == Response.question_id)
        .outerjoin(Run, Run.id == Response.run_id)
        .outerjoin(_SC, and_(_SC.c.response_id == _AS.c.response_id, _AS.c.kind == "item",
                             _SC.c.evaluator_id == _ST.c.evaluator_id,
                             _SC.c.annotator_key == bindparam("b_annotator"),
                             _SC.c.sample == 0)))
    .where(_ST.c.id == bindparam("b_study"))
)
_COUNTS = (
    select(func.count().label("total"), func.count(_AS.c.answered_at).label("answered"),
           func.min(case((_AS.c.answered_at.is_(None), _AS.c.position))).label("first_open"))
    .where(_AS.c.study_id == bindparam("b_study"),
           _AS.c.annotator_id == bindparam("b_annotator"))
    .subquery("queue")
)
#: the study with the annotator's queue counts (one aggregate row, not one row per item)
_QUEUE_VIEW = (
    select(_ST.c.id, _ST.c.name, _ST.c.status, _ST.c.per_item, _ST.c.prolific_code,
           _COUNTS.c.total, _COUNTS.c.answered, _COUNTS.c.first_open)
    .select_from(_ST.join(_COUNTS, _ST.c.id == bindparam("b_study")))
)
_ANSWER_STATEMENTS: dict[tuple[str, bool], list[Any]] = {}
AnyRow = Row[*tuple[Any, ...]]


_UNIT_ITEMS = (
    select(StudyItem.response_id, Question.id.label("question_id"), Question.reference)
    .join(Response, Response.id == StudyItem.response_id)
    .join(Question, Question.id == Response.question_id)
    .where(StudyItem.study_id == bindparam("b_study"), StudyItem.unit == bindparam("b_unit"))
    .order_by(StudyItem.response_id)
)


def unit_items(*, session: Session, study_id: int, unit: str) -> list[dict[str, Any]]:
    """Items of one unit with their question id and reference (for attention checks)."""
    rows = session.connection().execute(_UNIT_ITEMS, {"b_study": study_id, "b_unit": unit})
    return [{"response_id": r, "question_id": qid, "reference": ref} for r, qid, ref in rows]


def unit_claims(*, session: Session, study_id: int) -> dict[str, int]:
    """Every unit of a study with its number of participations neither excluded nor lapsed
    (0 if none)."""
    units = session.execute(
        select(StudyItem.unit).where(StudyItem.study_id == study_id).distinct()
    ).scalars()
    out = {u: 0 for u in units}
    stmt = (
        select(Participation.unit, func.count())
        .where(Participation.study_id == study_id,
               Participation.status.not_in(("excluded", "lapsed")))
        .group_by(Participation.unit)
    )
    for unit, n in session.execute(stmt):
        out[unit] = int(n)
    return out


def participations(
    *, session: Session, study_id: int, annotator_id: int | None = None
) -> list[Participation]:
    """Participations of a study (of one annotator when given), oldest first."""
    stmt = select(Participation).where(Participation.study_id == study_id)
    if annotator_id is not None:
        stmt = stmt.where(Participation.annotator_id == annotator_id)
    return list(session.execute(stmt.order_by(Participation.id)).scalars())


def count_active(*, session: Session, study_id: int, since: datetime) -> int:
    """Participants still working (active and seen after ``since``)."""
    stmt = select(func.count()).where(
        Participation.study_id == study_id,
        Participation.status == "active",
        Participation.last_seen_at >= since,
    )
    return int(session.execute(stmt).scalar_one())


def add_participation(*, session: Session, **values: Any) -> Participation:
    """Insert one participation and return it (with its id)."""
    row = Participation(**values)
    session.add(row)
    session.flush()
    return row


_ADD_PARTICIPATION = _PA.insert().returning(_PA.c.id)


def new_participation_id(*, session: Session, **values: Any) -> int:
    """Insert one active participation and return its id: one statement, no ORM object
    (what an arrival's claim needs)."""
    now = utcnow()
    return int(session.connection().execute(_ADD_PARTICIPATION, {
        "status": "active", "started_at": now, "last_seen_at": now, **values}).scalar_one())


#: An arrival's whole queue in one statement on PostgreSQL, its rows bound as one JSON text
#: (``json_to_recordset``). The executemany it replaced sent each of a unit's ~160 rows as a
#: statement of its own (half of a Prolific join's CPU); eight bound arrays after it still
#: cost psycopg a Python call per value (1,280 per arrival, 13 % of the join's CPU), where
#: ``json.dumps`` writes the rows in C (bench/bench_launch.py).
_ASSIGNMENTS_PG = text(
    "INSERT INTO assignment (study_id, annotator_id, response_id, position, kind, "
    "participation_id, check_text, unclear) "
    "SELECT study_id, annotator_id, response_id, position, kind, participation_id, "
    "check_text, unclear FROM json_to_recordset(CAST(:rows AS json)) AS r(study_id integer, "
    "annotator_id integer, response_id integer, position integer, kind varchar, "
    "participation_id integer, check_text text, unclear boolean) "
    "ON CONFLICT (study_id, annotator_id, position) DO NOTHING")
_ASSIGNMENT_COLUMNS = ("study_id", "annotator_id", "response_id", "position", "kind",
                       "participation_id", "check_text", "unclear")
_ASSIGNMENT_DEFAULTS: dict[str, Any] = {"kind": "item", "unclear": False}  # the model's


def add_assignments(*, session: Session, rows: list[dict[str, Any]]) -> None:
    """Insert queue rows (idempotent on the position key)."""
    if rows and session.get_bind().dialect.name == "postgresql":
        session.execute(_ASSIGNMENTS_PG, {"rows": json.dumps(
            [{c: (_ASSIGNMENT_DEFAULTS | r).get(c) for c in _ASSIGNMENT_COLUMNS}
             for r in rows])})
        return
    upsert(session=session, table=Assignment, keys=["study_id", "annotator_id", "position"],
           rows=rows)


def next_position(*, session: Session, study_id: int, annotator_id: int) -> int:
    """The first free position at the end of an annotator's queue."""
    stmt = select(func.max(Assignment.position)).where(
        Assignment.study_id == study_id, Assignment.annotator_id == annotator_id)
    last = session.execute(stmt).scalar_one()
    return 0 if last is None else int(last) + 1


def answer_target(
    *, session: Session, study_id: int, annotator_id: int, position: int
) -> AnyRow | None:
    """What a submit checks, in one statement: the annotator's own queue row at ``position``
    (``id`` None when there is none), its study (``study_*``, ``evaluator_id``, ``per_item``,
    ``prolific_code``; None when the study does not exist) and its participation's status."""
    params = {"b_study": study_id, "b_annotator": annotator_id, "b_position": position}
    return session.connection().execute(_TARGET, params).one_or_none()


def item_row(
    *, session: Session, study_id: int, annotator_id: int, position: int
) -> AnyRow | None:
    """What an item shows, in one statement: the study (None when it does not exist), the
    annotator's own queue row at ``position`` (``id`` None when there is none), the
    question, reference and response texts (no model) and the annotator's own score of it."""
    params = {"b_study": study_id, "b_annotator": annotator_id, "b_position": position}
    return session.connection().execute(_ITEM, params).one_or_none()


def queue_counts(*, session: Session, study_id: int, annotator_id: int) -> AnyRow | None:
    """The study (None when it does not exist) with the annotator's queue: ``total`` items,
    ``answered`` ones and ``first_open``, the first position without an answer (or None)."""
    params = {"b_study": study_id, "b_annotator": annotator_id}
    return session.connection().execute(_QUEUE_VIEW, params).one_or_none()


def _answer_statements(dialect: str, item: bool) -> list[Any]:
    """The writes of one answer, built once per dialect and kind.

    The score upsert adds the answer's seconds to those already spent in SQL (no read of the
    previous score). PostgreSQL runs the score, the queue row and the participation's
    ``last_seen_at`` as one statement (data-modifying CTEs); SQLite, in process, as three.
    """
    key = (dialect, item)
    if key in _ANSWER_STATEMENTS:
        return _ANSWER_STATEMENTS[key]
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    score = insert(_SC).values(
        response_id=bindparam("b_response"), evaluator_id=bindparam("b_evaluator"),
        annotator_id=bindparam("b_annotator"), annotator_key=bindparam("b_annotator"),
        sample=0, value=bindparam("b_value"), status="ok", reason=None,
        raw=bindparam("b_comment"), seconds_spent=bindparam("b_seconds"),
        created_at=bindparam("b_now"), updated_at=bindparam("b_now"))
    score = score.on_conflict_do_update(index_elements=list(SCORE_KEY), set_={
        "value": score.excluded.value, "status": score.excluded.status,
        "reason": score.excluded.reason, "raw": score.excluded.raw,
        "seconds_spent": func.coalesce(_SC.c.seconds_spent, 0.0) + score.excluded.seconds_spent,
        "updated_at": score.excluded.updated_at})
    answered = (update(_AS).where(_AS.c.id == bindparam("b_assignment"))
                .values(unclear=bindparam("b_unclear"), answered_at=bindparam("b_now"),
                        check_value=bindparam("b_check")))
    mean = _mean_statement(insert)
    statements: list[Any]
    if dialect == "postgresql":
        ctes = [answered.returning(_AS.c.id).cte("answered")]
        if item:
            ctes[:0] = [score.returning(_SC.c.id).cte("scored"),
                        mean.returning(_SC.c.id).cte("mean")]
        statements = [_SEEN.add_cte(*ctes)]
    else:
        statements = [score, mean, answered, _SEEN] if item else [answered, _SEEN]
    _ANSWER_STATEMENTS[key] = statements
    return statements


def _mean_statement(insert: Any) -> Any:
    """The answered response's aggregate row (the mean of the study's included annotator
    scores), upserted with the answer, so an open study's aggregate is never behind its
    answers (it was refreshed only when a whole task was finished).

    The mean is of the other annotators' stored scores and this answer's value: on PostgreSQL
    it runs in the answer's own statement, whose snapshot is taken before the answer is
    written. The caller holds the study's aggregate lock (:func:`lock_aggregate`) first, so
    no other answer to the study is in flight, uncommitted, at the same time.
    """
    others = select(_SC.c.value.label("v")).where(
        _SC.c.evaluator_id == bindparam("b_evaluator"),
        _SC.c.response_id == bindparam("b_response"), _SC.c.status == "ok",
        _SC.c.annotator_key.not_in([0, bindparam("b_annotator")]))
    values = union_all(others, select(cast(bindparam("b_value"), Float).label("v"))).subquery()
    stmt = insert(_SC).from_select(
        ["response_id", "evaluator_id", "annotator_id", "annotator_key", "sample", "value",
         "status", "created_at", "updated_at"],
        select(bindparam("b_response"), bindparam("b_evaluator"), null(), literal(0),
               literal(0), func.avg(values.c.v), literal("ok"), bindparam("b_now"),
               bindparam("b_now")).where(true()))  # SQLite: a WHERE before ON CONFLICT
    return stmt.on_conflict_do_update(index_elements=list(SCORE_KEY), set_={
        "value": stmt.excluded.value, "status": stmt.excluded.status,
        "updated_at": stmt.excluded.updated_at})


class QueueRow(Protocol):
    """What an answer's writes need of its queue row (an :class:`Assignment`, or a row of
    :func:`answer_target`)."""

    id: int | None
    kind: str
    response_id: int
    annotator_id: int
    participation_id: int | None


def record_answer(
    *,
    session: Session,
    assignment: QueueRow,
    evaluator_id: int,
    value: float,
    comment: str | None,
    unclear: bool,
    seconds: float,
) -> None:
    """Write one answer: a score (upsert on its unique key) or an attention-check value, the
    queue row's answer time and the participation's ``last_seen_at``.

    Revisions add their seconds to the time already spent on the item.
    """
    item = assignment.kind == "item"
    params = {"b_response": assignment.response_id, "b_evaluator": evaluator_id,
              "b_annotator": assignment.annotator_id, "b_value": value,
              "b_comment": comment or None, "b_seconds": seconds, "b_now": utcnow(),
              "b_assignment": assignment.id, "b_unclear": unclear,
              "b_check": None if item else value,
              "b_participation": assignment.participation_id}
    connection = session.connection()
    for statement in _answer_statements(connection.dialect.name, item):
        connection.execute(statement, params)


def lock_aggregate(*, session: Session, study_id: int) -> None:
    """Queue this transaction behind any other one updating the study's aggregate.

    A PostgreSQL advisory lock (held until commit), not a lock on the study row: a finishing
    submit already holds a key-share lock on that row through its foreign keys, and two of
    them upgrading it deadlocked. SQLite writers are serialised already.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(select(func.pg_advisory_xact_lock(AGGREGATE_LOCK, study_id)))


def assigned_responses(*, session: Session, study_id: int, annotator_id: int) -> list[int]:
    """The responses of an annotator's scored items (attention checks left out)."""
    stmt = select(Assignment.response_id).where(
        Assignment.study_id == study_id, Assignment.annotator_id == annotator_id,
        Assignment.kind == "item")
    return sorted({int(r) for r in session.execute(stmt).scalars()})


def finish_participations(*, session: Session, study_id: int, annotator_id: int) -> None:
    """Mark the annotator's active participations done when all their items are answered."""
    for part in participations(session=session, study_id=study_id, annotator_id=annotator_id):
        if part.status != "active":
            continue
        open_items = session.execute(select(func.count()).where(
            Assignment.participation_id == part.id, Assignment.answered_at.is_(None)
        )).scalar_one()
        if open_items == 0:
            part.status, part.finished_at = "done", utcnow()
            session.add(part)


