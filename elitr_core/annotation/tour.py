"""The annotation page's keyboard walkthrough opens once per annotator, wherever they log in.

Whether it was closed is stored with the annotator (``Annotator.tour_seen_at``), not in the
browser: a reload, a new tab or another device does not show it again; the page's "?" button
reopens it on request.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from db.evaluators import annotator_by_id
from db.keyed import save


def tour_seen(session: Session, annotator_id: int) -> bool:
    """Whether the annotator has already closed the walkthrough once."""
    annotator = annotator_by_id(session=session, annotator_id=annotator_id)
    return annotator is not None and annotator.tour_seen_at is not None


def mark_tour_seen(session: Session, annotator_id: int) -> None:
    """Record that the annotator closed the walkthrough (the first time only)."""
    annotator = annotator_by_id(session=session, annotator_id=annotator_id)
    if annotator is not None and annotator.tour_seen_at is None:
        annotator.tour_seen_at = datetime.now(UTC)
        save(session=session, rows=[annotator])
