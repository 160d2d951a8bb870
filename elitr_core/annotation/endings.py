"""Where a participant's way into a study ends: an unknown or closed study, another pool's
study, a task excluded or lapsed. The end states (closed, full, excluded, lapsed) are
:class:`~elitr_core.annotation.auth.StudyEnded`, shown as neutral messages; a Prolific
participant who finished before the study closed gets the completion code back with it."""

from __future__ import annotations

from sqlmodel import Session

from db import queue as q
from db import studies as sq
from db.evaluators import annotator_by_external_id, annotator_pool
from db.models import Participation, Study
from elitr_core.annotation.auth import AccessDenied, StudyEnded
from elitr_core.annotation.study_setup import POOLS
from elitr_core.data.fields import lookup_name


def open_study(session: Session, name: str) -> Study:
    """The study ``name``, refused when it does not exist or is closed."""
    # no lock on the study row: admission takes a seat row (db.admission.free_seat)
    study = sq.study_by_name(session=session, name=lookup_name(name))
    if study is None:
        raise AccessDenied("This link names a study that does not exist: check the link.")
    if study.status != "open":
        raise StudyEnded(f"Study {study.name} is closed: no more answers are accepted. "
                         "Thank you for your help.")
    return study


def pool_of(study: Study) -> str:
    """The slug of the study's annotator pool (silver or gold)."""
    return POOLS[str(study.filters.get("pool", "silver"))]


def check_pool(study: Study, pool_slug: str, *, prolific: bool) -> None:
    """The one pool check every way into a study passes (a token link, a Prolific join, a
    resume, a second tab: each enters through :func:`.studies.enter_with_token` or
    :func:`.studies.join_prolific`, which call this before anything is claimed or created).

    Only a silver study takes Prolific joins: a gold study's experts come through personal
    links, so anyone knowing its name cannot join it as a gold annotator.
    """
    if prolific and pool_of(study) != POOLS["silver"]:
        raise AccessDenied(f"Study {study.name} is not open to Prolific participants: it "
                           "takes personal links only. Please return the study on Prolific.")
    if pool_of(study) != pool_slug:
        raise AccessDenied(f"This link does not give access to study {study.name}.")


def check_participation(parts: list[Participation], study: Study) -> None:
    """Refuse a participant whose every task was excluded or lapsed. Entering renews no
    lease: only an answer does (``db.queue``), else a tab re-opening the link every few
    minutes would hold a seat for ever without scoring."""
    if parts and all(p.status in ("excluded", "lapsed") for p in parts):
        if any(p.status == "lapsed" for p in parts):
            raise StudyEnded(LAPSED.format(study.name))
        raise StudyEnded(EXCLUDED.format(study.name))


EXCLUDED = ("Your part in study {} has ended: this link is no longer valid. Your answers "
            "so far are kept. Thank you for your help.")
LAPSED = ("Your time for this task in study {} ran out and the task went to another "
          "participant; your answers so far are kept. Please return the study on Prolific "
          "(or ask the researcher for a new task).")


def finished_code(session: Session, study_name: str, pid: str,
                   ended: StudyEnded) -> StudyEnded:
    """``ended`` with the study's completion code when this Prolific participant finished
    their task before the study closed (they come back for the code: it is theirs)."""
    study = sq.study_by_name(session=session, name=lookup_name(study_name))
    if study is None or study.id is None or not study.prolific_code:
        return ended
    annotator = annotator_by_external_id(
        session=session, evaluator_id=annotator_pool(session=session, slug=POOLS["silver"]),
        external_id=pid)
    if annotator is None or annotator.id is None or not any(
            p.status == "done" for p in q.participations(
                session=session, study_id=study.id, annotator_id=annotator.id)):
        return ended
    return StudyEnded(f"Study {study.name} is closed, and you finished your task: thank you "
                      "for your help.", completion_code=study.prolific_code)
