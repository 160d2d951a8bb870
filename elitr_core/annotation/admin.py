"""The researcher's side of studies: annotators and their links, study status, closing.

Kept apart from :mod:`elitr_core.annotation.studies` (what an annotator's requests do) so
each module stays small; the CLI and the Studies page call these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlmodel import Session

from db import evaluators as eq
from db import queue as q
from db import studies as sq
from db.evaluators import annotator_pool
from db.keyed import save
from elitr_core.annotation.auth import new_token
from elitr_core.annotation.quality import aggregate, get_study
from elitr_core.annotation.studies import POOLS
from elitr_core.errors import UserError

PROGRESS_COLUMNS = ("annotator", "unit", "status", "answered", "items", "checks", "minutes_spent",
                    "started_at", "last_seen_at", "order_seed")
SHORT_COLUMNS = ("unit", "items", "annotators_needed", "items_short")


@dataclass(frozen=True)
class StudyStatus:
    """A study at a glance: settings, per-annotator progress, units still short of annotators."""

    summary: dict[str, object]
    progress: pd.DataFrame
    short: pd.DataFrame


def add_annotator(session: Session, name: str, pool: str, *,
                  study_id: int | None = None) -> str:
    """Create an annotator in the gold or silver pool; return their token (shown once).
    With ``study_id`` their link opens that study only; without, the studies of the pool.

    Raises
    ------
    UserError
        Unknown pool, empty name, or a name already used in that pool.
    """
    if pool not in POOLS:
        raise UserError(f"pool must be gold or silver, not {pool!r}")
    if not name.strip():
        raise UserError("an annotator needs a name")
    from elitr_core.data import records  # the typed gate: NFC, no invisible characters

    name = records.check_options(records.ANNOTATOR_NAME, name, what="annotator name")
    pool_id = annotator_pool(session=session, slug=POOLS[pool])
    if eq.annotator_by_name(session=session, evaluator_id=pool_id, name=name) is not None:
        raise UserError(f"the {pool} pool already has an annotator called {name!r}: "
                        "choose another name")
    token, token_hash = new_token()
    row = eq.add_annotator(session=session, evaluator_id=pool_id, name=name,
                           token_hash=token_hash)
    if study_id is not None:
        assert row.id is not None
        sq.link_study(session=session, annotator_id=row.id, study_id=study_id)
    return token


def add_study_annotator(session: Session, name: str, study: str) -> tuple[str, str]:
    """Create an annotator in the pool of ``study`` whose link opens that study and no other;
    return their token (shown once) and the pool."""
    found = get_study(session, study)
    assert found.id is not None
    pool = str(found.filters.get("pool", "silver"))
    return add_annotator(session, name, pool, study_id=found.id), pool


def study_status(session: Session, name: str) -> StudyStatus:
    """Progress per annotator (items answered, minutes spent) and units short of annotators."""
    study = get_study(session, name)
    assert study.id is not None
    progress = pd.DataFrame(sq.progress_rows(session=session, study_id=study.id))
    scores = pd.DataFrame(sq.study_score_rows(session=session, evaluator_id=study.evaluator_id),
                          columns=["response_id", "annotator_id", "annotator", "value", "status",
                                   "seconds_spent", "meeting"])
    if progress.empty:
        progress = pd.DataFrame(columns=list(PROGRESS_COLUMNS))
    else:
        items = sq.study_items(session=session, study_id=study.id)
        scores["unit"] = scores["response_id"].map(items)
        spent = scores.groupby(["annotator_id", "unit"])["seconds_spent"].sum() / 60.0
        progress["minutes_spent"] = [
            round(float(spent.get((a, u), 0.0)), 1)
            for a, u in zip(progress["annotator_id"], progress["unit"], strict=True)]
        progress = progress[list(PROGRESS_COLUMNS)]
    claims = q.unit_claims(session=session, study_id=study.id)
    unit_sizes = pd.Series(sq.study_items(session=session, study_id=study.id)).value_counts()
    ok = scores[scores["status"] == "ok"]
    per_item = ok.groupby("response_id")["annotator_id"].nunique()
    items_of = pd.Series(sq.study_items(session=session, study_id=study.id))
    short_rows = []
    for unit in sorted(claims):
        ids = items_of[items_of == unit].index
        short_items = int(sum(per_item.get(i, 0) < study.per_item for i in ids))
        # a unit whose annotators are all there but still working is in progress, not short
        # of annotators (it would read "annotators_needed 0, items_short 32")
        if claims[unit] < study.per_item:
            short_rows.append({"unit": unit, "items": int(unit_sizes.get(unit, 0)),
                               "annotators_needed": study.per_item - claims[unit],
                               "items_short": short_items})
    summary: dict[str, object] = {
        "study": study.name, "status": study.status,
        "pool": study.filters.get("pool"),
        "evaluator": eq.evaluator_slug(session=session, evaluator_id=study.evaluator_id),
        "items": len(items_of), "units": len(claims), "per_item": study.per_item,
        "assignment": study.assignment, "order_seed": study.order_seed,
        "attention_rate": study.attention_rate,
        "annotators": int(progress["annotator"].nunique()) if len(progress) else 0,
        "scores": int(len(ok)), "prolific_code": study.prolific_code or "",
        "lease_minutes": study.lease_minutes or "none (claims never lapse)",
        "join_limit": (f"{study.join_limit} per address per {study.join_window_minutes} min"
                       if study.join_limit else "none"),
        "lapsed": int((progress["status"] == "lapsed").sum()) if len(progress) else 0,
    }
    return StudyStatus(summary, progress.reset_index(drop=True),
                       pd.DataFrame(short_rows, columns=list(SHORT_COLUMNS)))


def close_study(session: Session, name: str) -> int:
    """Close a study (no more answers or revisions) and store its aggregate; return how many
    aggregate scores were written."""
    study = get_study(session, name)
    assert study.id is not None
    q.lock_aggregate(session=session, study_id=study.id)  # before the study row's update
    study.status = "closed"
    save(session=session, rows=[study])
    return aggregate(session, name)


def reopen_study(session: Session, name: str) -> None:
    """Re-open a closed study (annotators may answer and revise again)."""
    study = get_study(session, name)
    study.status = "open"
    save(session=session, rows=[study])
