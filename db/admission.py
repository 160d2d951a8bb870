# SQLModel types table attributes as their Python values, so mypy reads every column
# expression here as str/int; these codes are the false positives that follow.
# mypy: disable-error-code="call-overload,arg-type,attr-defined,union-attr"
"""Admission to a study: its seats (claimed without locking the study), the per-address join
count, and what becomes of a participant whose lease lapsed.

No decisions live here (who may join, how long a lease lasts): those are in
``elitr_core.annotation.admission``.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.engine import Row
from sqlmodel import Session

from db.models import (
    Annotator,
    Assignment,
    Participation,
    PersonalLink,
    Score,
    StudyJoin,
    StudySeat,
    utcnow,
)

#: First keys of the advisory locks of admission (PostgreSQL): one participant id, one address.
PARTICIPANT_LOCK, ADDRESS_LOCK = 11_002, 11_003
#: participations whose seat is free for the next arrival
RELEASED = ("excluded", "lapsed")


def add_seats(*, session: Session, study_id: int, units: Collection[str], per_item: int) -> None:
    """``per_item`` empty seats for every unit of a new study."""
    session.add_all([StudySeat(study_id=study_id, unit=unit, seat=number)
                     for unit in sorted(units) for number in range(per_item)])
    session.flush()


# An arrival's statements are built once, with bound parameters, and run on the session's
# connection: building a statement and the ORM's execution path cost more of a Prolific
# join's CPU than running it (bench/results/launch-2026-11-28c.md).
_LOCK = select(func.pg_advisory_xact_lock(bindparam("b_namespace"),
                                          func.hashtext(bindparam("b_text"))))
_JOINS = select(func.count()).where(
    StudyJoin.study_id == bindparam("b_study"), StudyJoin.client == bindparam("b_client"),
    StudyJoin.at >= bindparam("b_since"))
_ADD_JOIN = insert(StudyJoin).values(study_id=bindparam("b_study"),
                                     client=bindparam("b_client"), at=bindparam("b_at"))
_TAKE_SEAT = (update(StudySeat).where(StudySeat.id == bindparam("b_seat"))
              .values(participation_id=bindparam("b_participation")))


def lock_key(*, session: Session, namespace: int, text: str) -> None:
    """Queue this transaction behind others holding the same (namespace, text) until commit.

    A PostgreSQL advisory lock on a hash of ``text`` (a participant id, a client address):
    only arrivals that share it wait for each other. SQLite writers are serialised already.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.connection().execute(_LOCK, {"b_namespace": namespace, "b_text": text})


def joins_since(*, session: Session, study_id: int, client: str, since: datetime) -> int:
    """Participants admitted to the study from ``client`` since ``since``."""
    return int(session.connection().execute(_JOINS, {
        "b_study": study_id, "b_client": client, "b_since": since}).scalar_one())


def add_join(*, session: Session, study_id: int, client: str) -> None:
    """Record one admission from ``client`` (a statement now, not an ORM flush later)."""
    session.connection().execute(_ADD_JOIN, {"b_study": study_id, "b_client": client[:64],
                                             "b_at": utcnow()})


@cache
def _free_seat_statement(lease: bool, skip: bool) -> Any:
    holder = Participation.__table__
    free = or_(StudySeat.participation_id.is_(None), holder.c.status.in_(RELEASED))
    if lease:
        free = or_(free, and_(holder.c.status == "active",
                              holder.c.last_seen_at < bindparam("b_idle")))
    stmt = (
        select(StudySeat.id, StudySeat.unit, StudySeat.participation_id)
        .outerjoin(holder, holder.c.id == StudySeat.participation_id)
        .where(StudySeat.study_id == bindparam("b_study"), free)
        .order_by(StudySeat.seat, StudySeat.unit)
        .limit(1)
        .with_for_update(of=StudySeat.__table__, skip_locked=True)
    )
    if skip:
        stmt = stmt.where(StudySeat.unit.not_in(bindparam("b_skip", expanding=True)))
    return stmt


def free_seat(*, session: Session, study_id: int, skip_units: Collection[str],
              idle_before: datetime | None) -> Row[Any] | None:
    """A free seat (``id``, ``unit``, ``participation_id`` of its previous holder), row-locked;
    None when every seat is held.

    Free: nobody in it, its holder excluded or lapsed, or (``idle_before`` given: the study's
    lease) an active holder unseen since then. Seat numbers first, so units fill evenly; on
    PostgreSQL ``SKIP LOCKED`` passes over seats other arrivals are taking right now.
    """
    stmt = _free_seat_statement(idle_before is not None, bool(skip_units))
    params: dict[str, Any] = {"b_study": study_id}
    if idle_before is not None:
        params["b_idle"] = idle_before
    if skip_units:
        params["b_skip"] = sorted(skip_units)
    return session.connection().execute(stmt, params).one_or_none()


def take_seat(*, session: Session, seat_id: int, participation_id: int) -> None:
    """Point the seat at its new holder."""
    session.connection().execute(_TAKE_SEAT, {"b_seat": seat_id,
                                              "b_participation": participation_id})


def leave_seat(*, session: Session, participation_id: int) -> None:
    """Empty the seat a participation holds (an exclusion: the task is open again)."""
    session.execute(update(StudySeat).where(StudySeat.participation_id == participation_id)
                    .values(participation_id=None))


def lapse(*, session: Session, participation_id: int, evaluator_id: int) -> list[int]:
    """A holder whose lease ran out: return the responses whose scores were marked.

    With answers, the participation becomes ``lapsed`` and its scores are kept with status
    ``lapsed`` (out of the aggregate and the analyses, still in the study's tables). Without
    any, the participation and its queue go, and so does its annotator when nothing else of
    theirs is stored, so an arrival who never scored leaves nobody behind.
    """
    part = session.get(Participation, participation_id)
    if part is None or part.status in RELEASED:
        return []
    answered = list(session.execute(select(Assignment.response_id).where(
        Assignment.participation_id == participation_id, Assignment.kind == "item",
        Assignment.answered_at.is_not(None))).scalars())
    checks = session.execute(select(func.count()).where(
        Assignment.participation_id == participation_id,
        Assignment.answered_at.is_not(None))).scalar_one()
    if checks:
        part.status, part.reason = "lapsed", "idle past the study's lease"
        session.add(part)
        if answered:
            session.execute(update(Score).where(
                Score.evaluator_id == evaluator_id, Score.annotator_key == part.annotator_id,
                Score.response_id.in_(answered)).values(status="lapsed", updated_at=utcnow()))
        return [int(r) for r in answered]
    session.execute(delete(Assignment).where(Assignment.participation_id == participation_id))
    session.delete(part)
    session.flush()
    _forget_annotator(session, part.annotator_id)
    return []


def _forget_annotator(session: Session, annotator_id: int) -> None:
    """Delete an annotator that nothing refers to any more (no participation, no score)."""
    used = session.execute(select(func.count()).select_from(Participation)
                           .where(Participation.annotator_id == annotator_id)).scalar_one()
    scored = session.execute(select(func.count()).select_from(Score)
                             .where(Score.annotator_id == annotator_id)).scalar_one()
    if not used and not scored:
        session.execute(delete(PersonalLink).where(PersonalLink.annotator_id == annotator_id))
        session.execute(delete(Annotator).where(Annotator.id == annotator_id))
