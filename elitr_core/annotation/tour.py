"""The annotation page's keyboard walkthrough opens once per annotator, wherever they log in.

Whether it was shown is stored with the annotator (``Annotator.tour_seen_at``), not in the
browser: a reload, a new tab or another device does not show it again; the page's "?" button
reopens it on request.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlmodel import Session

from db.keyed import save
from db.models import Annotator


def first_sight(session: Session, annotator: Annotator) -> bool:
    """Whether this entry is the annotator's first: then the walkthrough opens, and it is
    recorded as seen in the entering transaction (the first page reads and writes nothing
    more for it, which a launch's every arrival pays: bench/bench_launch.py)."""
    if annotator.tour_seen_at is not None:
        return False
    annotator.tour_seen_at = datetime.now(UTC)
    save(session=session, rows=[annotator])
    return True
