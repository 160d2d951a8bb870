"""Keyword-only write and lookup functions over the tables (idempotent upserts on unique keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, select, tuple_
from sqlmodel import Session, col

from db.keyed import upsert
from db.models import Evaluator, Response, Run, Score

# SQLite allows 32,766 bound variables per statement; rows of up to ~12 columns fit in 1,000.
_CHUNK = 1000


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


def response_ids(
    *, session: Session, pairs: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], int]:
    """Map (run id, question id) -> response id for the given pairs."""
    out: dict[tuple[int, int], int] = {}
    for start in range(0, len(pairs), _CHUNK):
        chunk = pairs[start : start + _CHUNK]
        stmt = select(col(Response.id), col(Response.run_id), col(Response.question_id)).where(
            tuple_(col(Response.run_id), col(Response.question_id)).in_(chunk)
        )
        out.update({(r, q): i for i, r, q in session.execute(stmt)})
    return out


def run_id(
    *,
    session: Session,
    model: str,
    setting: str,
    mode: str,
    split: str,
    seed: int,
    variant: str = "",
    language: str = "en",
) -> int | None:
    """The id of the run with this key, or None."""
    stmt = select(col(Run.id)).where(
        and_(
            col(Run.model) == model,
            col(Run.setting) == setting,
            col(Run.mode) == mode,
            col(Run.split) == split,
            col(Run.seed) == seed,
            col(Run.variant) == variant,
            col(Run.language) == language,
        )
    )
    return session.execute(stmt).scalar_one_or_none()


def upsert_run(*, session: Session, key: dict[str, Any], values: dict[str, Any]) -> None:
    """Create the run with this key (model, setting, mode, split, seed, variant, language) and
    ``values``; a stored run is left as it is."""
    upsert(session=session, table=Run, keys=list(key), rows=[{**key, **values}])


def upsert_responses(*, session: Session, rows: Sequence[dict[str, Any]],
                     update: Sequence[str] = ()) -> None:
    """Store answers, one per (run, question); a stored answer changes only in ``update``."""
    upsert(session=session, table=Response, rows=rows, keys=["run_id", "question_id"],
           update=update)


def upsert_judgments(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store judge scores; a judgment asked again replaces value, status, reason and output."""
    upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY,
           update=["value", "status", "reason", "raw"])
