"""Keyword-only write and lookup functions over the tables (idempotent upserts on unique keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from db.keyed import upsert
from db.models import Evaluator, Score


def upsert_evaluator(
    *,
    session: Session,
    slug: str,
    kind: str,
    description: str = "",
    scale_min: float = 1.0,
    scale_max: float = 10.0,
) -> int:
    """Create the evaluator if missing; return its id."""
    upsert(
        session=session,
        table=Evaluator,
        keys=["slug"],
        rows=[
            {
                "slug": slug,
                "kind": kind,
                "description": description,
                "config": {},
                "scale_min": scale_min,
                "scale_max": scale_max,
            }
        ],
    )
    return session.execute(
        select(col(Evaluator.id)).where(col(Evaluator.slug) == slug)
    ).scalar_one()


SCORE_KEY: tuple[str, ...] = ("response_id", "evaluator_id", "annotator_key", "sample")


def score_row(
    *,
    response_id: int,
    evaluator_id: int,
    value: float | None,
    annotator_id: int | None = None,
    sample: int = 0,
    status: str = "ok",
) -> dict[str, Any]:
    """A row for :func:`upsert_scores` (the annotator key is 0 for judges and aggregates)."""
    return {
        "response_id": response_id,
        "evaluator_id": evaluator_id,
        "annotator_id": annotator_id,
        "annotator_key": annotator_id or 0,
        "sample": sample,
        "value": value,
        "status": status,
    }


def upsert_scores(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Write many imported scores at once (value and status updated on a key conflict)."""
    upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY, update=["value", "status"])


def upsert_judgments(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store judge scores; a judgment asked again replaces value, status, reason and output."""
    upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY,
           update=["value", "status", "reason", "raw"])
