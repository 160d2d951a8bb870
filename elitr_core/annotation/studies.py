"""Human scoring studies: who enters, who scores what, and the annotation queue.

A study (created by :mod:`elitr_core.annotation.study_setup`) needs ``per_item`` annotators
per task unit. An annotator arriving by token or Prolific link takes a free seat of the unit
with the fewest annotators (:mod:`elitr_core.annotation.admission`); their queue is the
unit's items plus attention checks, shuffled with a seed derived
from the study seed, the annotator and the unit (recorded on the participation). Every answer
is committed before the next item is returned, through :func:`db.queue.record_answer` (an
upsert on the score's key), so a double click or a second tab updates the same score instead of
adding one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import admission as aq
from db import queue as q
from db import studies as sq
from db.evaluators import (
    annotator_by_external_id,
    annotator_by_token_hash,
    annotator_pool,
    evaluator_slug,
    new_annotator_id,
)
from db.models import Annotator, utcnow
from db.transaction import queued_writing, reading, writing
from elitr_core.annotation.admission import check_join_limit, claim_unit
from elitr_core.annotation.admission import order_seed as order_seed  # re-exported
from elitr_core.annotation.auth import (
    AccessDenied,
    StudyEnded,
    check_prolific_params,
    check_token_format,
    hash_token,
)
from elitr_core.annotation.endings import (
    EXCLUDED,
    LAPSED,
    check_participation,
    check_pool,
    finished_code,
    open_study,
    pool_of,
)
from elitr_core.annotation.study_setup import POOLS
from elitr_core.annotation.study_setup import StudySpec as StudySpec  # re-exported
from elitr_core.annotation.study_setup import create_study as create_study  # re-exported
from elitr_core.annotation.study_setup import prolific_url as prolific_url  # re-exported
from elitr_core.annotation.submit_faults import (
    ENTER_FULL,
    ENTER_GONE,
    READ_FULL,
    READ_GONE,
    said,
    with_database_faults,
)
from elitr_core.annotation.tour import first_sight
from elitr_core.data.fields import lookup_name
from elitr_core.errors import UserError
from elitr_core.vocab import SCORE_MAX, SCORE_MIN


@dataclass(frozen=True)
class Entry:
    """Who is annotating which study (kept in the page's session state, checked on every call)."""

    annotator_id: int
    study_id: int
    study_name: str
    prolific: bool = False
    first_visit: bool = field(default=False, compare=False)  # the walkthrough: tour.first_sight


@dataclass(frozen=True)
class QueueView:
    """The annotator's queue: size, progress, where to resume, and the end-screen facts."""

    study_name: str
    total: int
    answered: int
    first_open: int | None
    completion_code: str | None
    can_take_more: bool

    @property
    def done(self) -> bool:
        """Every item of the queue has an answer."""
        return self.total > 0 and self.first_open is None


@dataclass(frozen=True)
class ItemView:
    """One item as the annotator sees it: texts and their own previous answer, nothing else."""

    position: int
    question: str
    reference: str
    response: str
    value: int | None
    comment: str
    unclear: bool


def _study_for_token(session: Session, annotator_id: int, pool_slug: str) -> str:
    """The study a token without ``study=`` opens: one in progress, else one with room."""
    studies = [s for s in sq.list_studies(session=session) if pool_of(s) == pool_slug]
    mine = [s for s in studies if s.id is not None and q.participations(
        session=session, study_id=s.id, annotator_id=annotator_id)]
    for study in mine:
        if study.status == "open":
            return study.name
    for study in studies:
        if study.status == "open" and study.id is not None and any(
                n < study.per_item for n in q.unit_claims(session=session,
                                                          study_id=study.id).values()):
            return study.name
    if mine:
        return mine[0].name  # a closed study: _open_study refuses it with a clear message
    raise AccessDenied("There is no open study for you right now: the researcher will tell "
                       "you when one starts.")


def _own_study(session: Session, annotator: Annotator, asked: str | None) -> str | None:
    """The study a link made for one study opens (None: a pool's link); another study asked
    for by ``study=`` is refused, so a link never opens a study it was not made for."""
    assert annotator.id is not None
    linked = sq.linked_study(session=session, annotator_id=annotator.id)
    if linked is None:
        return None
    own = sq.study_by_id(session=session, study_id=linked)
    other = asked is not None and lookup_name(asked) != lookup_name(own.name if own else "")
    if own is None or other:
        raise AccessDenied("This personal link was made for another study: open the link "
                           "the researcher gave you for this one, or ask them for it.")
    return own.name


@said(ENTER_FULL, ENTER_GONE)
def enter_with_token(engine: Engine, token: str, study_name: str | None = None) -> Entry:
    """Check an annotator's token and open their study (claiming a unit on first entry).

    Raises
    ------
    AccessDenied
        Unknown or malformed token, a closed or unknown study, another pool's study, an
        excluded annotator, or a study with no room left.
    """
    check_token_format(token)
    with writing(engine) as session:
        annotator = annotator_by_token_hash(session=session, token_hash=hash_token(token))
        if annotator is None or annotator.id is None:
            raise AccessDenied("This link is not valid: check that you copied it completely, "
                               "or ask the researcher for a new one.")
        pool_slug = evaluator_slug(session=session, evaluator_id=annotator.evaluator_id)
        name = _own_study(session, annotator, study_name) or study_name or \
            _study_for_token(session, annotator.id, pool_slug)
        study = open_study(session, name)
        assert study.id is not None
        check_pool(study, pool_slug, prolific=False)
        parts = q.participations(session=session, study_id=study.id, annotator_id=annotator.id)
        check_participation(parts, study)
        if not parts:
            claim_unit(session, study, annotator.id, mine=set())
        return Entry(annotator.id, study.id, study.name,
                     first_visit=first_sight(session, annotator))


@said(ENTER_FULL, ENTER_GONE)
def join_prolific(engine: Engine, study_name: str, pid: str, prolific_study: str,
                  session_id: str, *, client: str = "") -> Entry:
    """Create or resume a Prolific participant as a silver annotator of ``study_name``.

    The first SESSION_ID seen for a participant is bound to them: the same PID with another
    session id (a copied or edited link) is refused, so nobody resumes someone else's work.
    A new participant counts towards the study's join limit of ``client`` (their address);
    one refused creates nothing.
    """
    pid, prolific_study, session_id = check_prolific_params(pid, prolific_study, session_id)
    with writing(engine) as session:
        try:
            study = open_study(session, study_name)
        except StudyEnded as ended:
            raise finished_code(session, study_name, pid, ended) from None
        assert study.id is not None
        check_pool(study, POOLS["silver"], prolific=True)
        if study.prolific_study_id and study.prolific_study_id != prolific_study:
            raise AccessDenied("This Prolific link belongs to another study (STUDY_ID does not "
                               "match): please open the study again from Prolific.")
        # two tabs of one participant arriving at once: the second waits for the first
        aq.lock_key(session=session, namespace=aq.PARTICIPANT_LOCK, text=pid)
        pool_id = annotator_pool(session=session, slug=POOLS["silver"])
        annotator = annotator_by_external_id(session=session, evaluator_id=pool_id,
                                             external_id=pid)
        parts = [] if annotator is None or annotator.id is None else q.participations(
            session=session, study_id=study.id, annotator_id=annotator.id)
        check_participation(parts, study)
        if parts:
            if parts[-1].prolific_session_id != session_id:
                raise AccessDenied("This Prolific session does not match the one this "
                                   "participant started with: please open the study again "
                                   "from Prolific.")
            assert annotator is not None and annotator.id is not None
            return Entry(annotator.id, study.id, study.name, prolific=True,
                         first_visit=first_sight(session, annotator))
        check_join_limit(session, study, client)
        if annotator is None:
            # a new participant: the walkthrough opens on this first page (recorded as seen
            # with the annotator), and their queue starts at 0: no statement for either
            annotator_id = new_annotator_id(session=session, evaluator_id=pool_id,
                                            name=f"prolific-{pid}", external_id=pid,
                                            tour_seen_at=utcnow())
            claim_unit(session, study, annotator_id, prolific=(prolific_study, session_id),
                       client=client, mine=set(), start=0)
            return Entry(annotator_id, study.id, study.name, prolific=True, first_visit=True)
        assert annotator.id is not None
        claim_unit(session, study, annotator.id, prolific=(prolific_study, session_id),
                   client=client, mine=set())
        return Entry(annotator.id, study.id, study.name, prolific=True,
                     first_visit=first_sight(session, annotator))


@dataclass(frozen=True)
class _StudyFacts:
    """What a queue view needs of a study (read with the queue, not as an ORM object)."""

    id: int
    name: str
    status: str
    per_item: int
    prolific_code: str | None

    @classmethod
    def of(cls, row: Any) -> _StudyFacts:
        """From a :class:`Study` or a row with those columns."""
        return cls(row.id, row.name, row.status, row.per_item, row.prolific_code)


def _existing(row: Any) -> Any:
    """The row of a study-keyed read; refused when the study does not exist."""
    if row is None:
        raise AccessDenied("This study no longer exists.")
    return row


def _own(row: Any) -> Any:
    """A row joined with the annotator's queue row; refused when there is none."""
    if row.id is None:
        raise AccessDenied("This item is not part of your assignments.")
    return row


def _queue_view(session: Session, study: _StudyFacts, entry: Entry,
                counts: Any = None) -> QueueView:
    """The queue view from ``counts`` (total, answered, first_open), read now if not given."""
    if counts is None:
        counts = q.queue_counts(session=session, study_id=study.id,
                                annotator_id=entry.annotator_id)
    total, answered, first_open = int(counts.total), int(counts.answered), counts.first_open
    done = total > 0 and first_open is None
    can_more = False
    if done and not entry.prolific and study.status == "open":
        # once per finished task: an offer only (take_another_unit checks again, row-locked)
        mine = {p.unit for p in q.participations(session=session, study_id=study.id,
                                                 annotator_id=entry.annotator_id)}
        can_more = any(n < study.per_item and u not in mine
                       for u, n in q.unit_claims(session=session, study_id=study.id).items())
    return QueueView(study.name, total, answered, first_open,
                     study.prolific_code if done else None, can_more)


@said(READ_FULL, READ_GONE)
def queue_view(engine: Engine, entry: Entry) -> QueueView:
    """Progress of the annotator's queue and where to resume."""
    with reading(engine, one_statement=True) as session:
        row = _existing(q.queue_counts(session=session, study_id=entry.study_id,
                                       annotator_id=entry.annotator_id))
        return _queue_view(session, _StudyFacts.of(row), entry, row)


@said(READ_FULL, READ_GONE)
def item_view(engine: Engine, entry: Entry, position: int) -> ItemView:
    """The item at ``position`` of the annotator's own queue (refused for anything else)."""
    with reading(engine, one_statement=True) as session:
        row = _own(_existing(q.item_row(session=session, study_id=entry.study_id,
                                        annotator_id=entry.annotator_id, position=position)))
    question = row.conv_text if row.setting == "conv" and row.conv_text else row.qa_text
    value, comment = ((row.value, row.raw or "") if row.kind == "item"
                      else (row.check_value, ""))
    shown = {"attention-high": row.reference,
             "attention-low": row.check_text}.get(row.kind, row.response)
    return ItemView(position, question, row.reference, str(shown),
                    None if value is None else int(value), comment, bool(row.unclear))


def submit(engine: Engine, entry: Entry, position: int, value: int, *, comment: str = "",
           unclear: bool = False, seconds: float = 0.0) -> QueueView:
    """Write one answer (committed before returning) and return the updated queue view.

    Raises
    ------
    UserError
        A score outside the rubric's range (``SCORE_MIN``..``SCORE_MAX``: 1..10).
    AccessDenied
        A closed study, an excluded annotator, or a position outside the annotator's queue.
    """
    if (isinstance(value, bool) or not isinstance(value, int)
            or not SCORE_MIN <= value <= SCORE_MAX):
        raise UserError(f"a score must be a whole number from {SCORE_MIN:.0f} to {SCORE_MAX:.0f},"
                        f" not {value!r}")
    if comment:  # the typed gate: no NUL or control character (PostgreSQL refuses NUL)
        from elitr_core.data import records

        comment = records.check_options(records.COMMENT, comment, what="comment")
    # a dropped connection is tried once more, a full disk is one sentence (submit_faults)
    return with_database_faults(lambda: _record(engine, entry, position, value, comment,
                                                unclear, seconds))


def _record(engine: Engine, entry: Entry, position: int, value: int, comment: str,
            unclear: bool, seconds: float) -> QueueView:
    """:func:`submit`'s transaction: the answer, the participation, the aggregate."""
    with queued_writing(engine) as session:
        row = _existing(q.answer_target(session=session, study_id=entry.study_id,
                                        annotator_id=entry.annotator_id, position=position))
        study = _StudyFacts(row.study_id, row.study_name, row.study_status, row.per_item,
                            row.prolific_code)
        if study.status != "open":
            raise StudyEnded(f"Study {study.name} is closed: your answers so far are saved "
                             "and can no longer be changed. Thank you for your help.")
        _own(row)
        if row.participation_status == "excluded":
            raise StudyEnded(EXCLUDED.format(study.name))
        if row.participation_status == "lapsed":
            raise StudyEnded(LAPSED.format(study.name))
        if row.kind == "item":
            # the answer updates its response's aggregate (db.queue._mean_statement):
            # the study's answers queue on its aggregate lock, taken before any row lock (as
            # exclusions, closing and lapses take it), so means never miss an answer in
            # flight and no two writers of the aggregate wait on each other in a circle
            q.lock_aggregate(session=session, study_id=entry.study_id)
        q.record_answer(session=session, assignment=row, evaluator_id=row.evaluator_id,
                        value=float(value), comment=comment.strip()[:5000] or None,
                        unclear=unclear, seconds=max(0.0, float(seconds)))
        # read after the write: the participation row it updated serialises this annotator's
        # submits, so of two tabs answering the last two items the second sees both answers
        view = _queue_view(session, study, entry)
        if view.done:  # only then can a participation be finished: skip the count otherwise
            q.finish_participations(session=session, study_id=entry.study_id,
                                    annotator_id=entry.annotator_id)
            responses = q.assigned_responses(session=session, study_id=entry.study_id,
                                             annotator_id=entry.annotator_id)
            # A finished task's means are recomputed from the stored scores (each answer
            # updated its own already), under the study's aggregate lock.
            q.lock_aggregate(session=session, study_id=entry.study_id)
            sq.store_aggregates(session=session, evaluator_id=row.evaluator_id,
                               response_ids=responses)
        return view


@said(ENTER_FULL, ENTER_GONE)
def take_another_unit(engine: Engine, entry: Entry) -> QueueView:
    """Give a token annotator who finished their task another unit of the same study."""
    if entry.prolific:
        raise AccessDenied("A Prolific participant takes one task per study.")
    with writing(engine) as session:
        study = open_study(session, entry.study_name)
        claim_unit(session, study, entry.annotator_id)  # its writes ran: the view sees them
        return _queue_view(session, _StudyFacts.of(study), entry)
