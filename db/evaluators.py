"""Evaluators (who scores: an LLM judge, a human pool, a metric, with its scale) and the
annotators of a human pool: created, looked up, listed. Keyword-only, ``session`` first.
Their scores are :mod:`db.scores`; the studies that gather annotators are :mod:`db.studies`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select as sa_select
from sqlalchemy import tuple_
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import Annotator, Evaluator


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
        sa_select(col(Evaluator.id)).where(col(Evaluator.slug) == slug)
    ).scalar_one()


def evaluator_by_id(*, session: Session, evaluator_id: int) -> Evaluator | None:
    """The evaluator with this id."""
    return session.get(Evaluator, evaluator_id)


def evaluator_list(*, session: Session) -> list[Evaluator]:
    """Every evaluator, by slug."""
    return list(session.exec(select(Evaluator).order_by(col(Evaluator.slug))))


def evaluator_slug(*, session: Session, evaluator_id: int) -> str:
    """The slug of an evaluator id."""
    return str(session.execute(
        sa_select(col(Evaluator.slug)).where(col(Evaluator.id) == evaluator_id)).scalar_one())


def annotator_by_id(*, session: Session, annotator_id: int) -> Annotator | None:
    """The annotator with this id."""
    return session.get(Annotator, annotator_id)


def annotator_by_token_hash(*, session: Session, token_hash: str) -> Annotator | None:
    """The annotator holding this token hash."""
    return session.execute(
        sa_select(Annotator).where(col(Annotator.token_hash) == token_hash)).scalar_one_or_none()


def annotator_by_external_id(
    *, session: Session, evaluator_id: int, external_id: str
) -> Annotator | None:
    """The annotator of a pool with this external id (a Prolific PID)."""
    return session.execute(sa_select(Annotator).where(
        col(Annotator.evaluator_id) == evaluator_id, col(Annotator.external_id) == external_id,
    )).scalar_one_or_none()


def annotator_by_name(*, session: Session, evaluator_id: int, name: str) -> Annotator | None:
    """The annotator of a pool with this name."""
    return session.execute(sa_select(Annotator).where(
        col(Annotator.evaluator_id) == evaluator_id, col(Annotator.name) == name,
    )).scalar_one_or_none()


def add_annotator(*, session: Session, **values: Any) -> Annotator:
    """Insert one annotator and return it (with its id)."""
    row = Annotator(**values)
    session.add(row)
    session.flush()
    return row


def annotator_ids(session: Session, pairs: Iterable[tuple[int, str]]) -> dict[tuple[int, str],
                                                                           int]:
    """Create the annotators ``(evaluator id, name)`` that are missing; map each to its id."""
    wanted = sorted(set(pairs))
    if not wanted:
        return {}
    table = Annotator.__table__  # type: ignore[attr-defined]
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" \
        else sqlite.insert
    out: dict[tuple[int, str], int] = {}
    for start in range(0, len(wanted), 1000):  # SQLite's limit of bound variables
        chunk = wanted[start:start + 1000]
        session.execute(insert(table).values(
            [{"evaluator_id": e, "name": n} for e, n in chunk]).on_conflict_do_nothing(
            index_elements=["evaluator_id", "name"]))
        found = session.execute(sa_select(table.c.evaluator_id, table.c.name, table.c.id).where(
            tuple_(table.c.evaluator_id, table.c.name).in_(chunk)))
        out.update({(e, n): i for e, n, i in found})
    return out


def annotator_id_order(*, session: Session) -> list[int]:
    """Every annotator's id, in the order they were added (first id first)."""
    return [int(i) for i in session.execute(sa_select(col(Annotator.id)).order_by(
        col(Annotator.id))).scalars()]
