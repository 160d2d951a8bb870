"""Any table's rows by their unique key: the idempotent upsert every entity module writes
through, the look-ups of ids and stored values by key that an import compares with, and
``save`` for table objects the core built or changed. Keyword-only, ``session`` first."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import JSON, bindparam, cast, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, SQLModel

from db.models import utcnow

#: Rows bound to one executemany of an upsert (bounds the parameter lists held at once).
_MANY = 10_000
_SINGLE_ROW: dict[tuple[Any, ...], Any] = {}  # built upserts, bound to rows when run


def upsert(
    *,
    session: Session,
    table: type[SQLModel],
    rows: Sequence[dict[str, Any]],
    keys: Sequence[str],
    update: Sequence[str] = (),
) -> None:
    """Insert ``rows``; on a unique-key conflict update the ``update`` columns that differ.

    A row that already holds the same values is left untouched, so importing the same data twice
    changes nothing (not even ``updated_at``).
    """
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    sa_table = table.__table__  # type: ignore[attr-defined]
    # One statement built once and bound to the rows (executemany for many): building the
    # upsert cost more CPU than running it, for one row (an annotator's submit) as for 20,000
    # (a multi-row VALUES of a ZIP's responses took SQLAlchemy ~0.1 ms a row to compile).
    key = (sa_table.name, tuple(keys), tuple(update), dialect, tuple(sorted(rows[0])))
    if key not in _SINGLE_ROW:
        _SINGLE_ROW[key] = _upsert_statement(sa_table, keys, update, dialect)
    stamp = {"b_updated_at": utcnow()} if update and "updated_at" in sa_table.c else {}
    for start in range(0, len(rows), _MANY):
        session.execute(_SINGLE_ROW[key], [dict(row) | stamp
                                           for row in rows[start : start + _MANY]])


def _upsert_statement(sa_table: Any, keys: Sequence[str], update: Sequence[str],
                      dialect: str) -> Any:
    """INSERT ... ON CONFLICT with bound parameters (``updated_at`` bound as
    ``b_updated_at``)."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(sa_table)
    if not update:
        return stmt.on_conflict_do_nothing(index_elements=list(keys))
    changed = or_(*(_differs(sa_table.c[c], stmt.excluded[c], dialect) for c in update))
    set_: dict[str, Any] = {c: stmt.excluded[c] for c in update}
    if "updated_at" in sa_table.c:
        set_["updated_at"] = bindparam("b_updated_at")
    return stmt.on_conflict_do_update(index_elements=list(keys), set_=set_, where=changed)


def _differs(column: Any, new: Any, dialect: str) -> Any:
    """``column IS DISTINCT FROM new``; PostgreSQL has no ``=`` for ``json``, so JSON columns
    are compared as ``jsonb`` there."""
    if dialect == "postgresql" and isinstance(column.type, JSON):
        return cast(column, postgresql.JSONB).is_distinct_from(cast(new, postgresql.JSONB))
    return column.is_distinct_from(new)


def _where(stmt: Any, sa_table: Any, where: Mapping[str, Any]) -> Any:
    """``stmt`` keeping the rows whose column equals the value, or lies in a list, set or
    tuple of values."""
    for column, value in where.items():
        stmt = stmt.where(sa_table.c[column].in_(list(value))
                          if isinstance(value, list | set | tuple | frozenset)
                          else sa_table.c[column] == value)
    return stmt


def id_map(
    *,
    session: Session,
    table: type[SQLModel],
    keys: Sequence[str],
    where: Mapping[str, Any] | None = None,
) -> dict[tuple[Any, ...], int]:
    """Map each row's unique-key tuple to its id (of the rows ``where`` keeps: column ->
    value, or a list of values)."""
    sa_table = table.__table__  # type: ignore[attr-defined]
    stmt = _where(select(sa_table.c.id, *(sa_table.c[k] for k in keys)), sa_table, where or {})
    return {tuple(row[1:]): row[0] for row in session.execute(stmt)}


def stored_rows(
    *,
    session: Session,
    table: type[SQLModel],
    keys: Sequence[str],
    columns: Sequence[str],
    where: Mapping[str, Any] | None = None,
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Map each row's unique-key tuple to its ``columns`` (what an import compares with), of
    the rows ``where`` keeps (column -> value, or a list of values)."""
    sa_table = table.__table__  # type: ignore[attr-defined]
    stmt = _where(select(*(sa_table.c[k] for k in keys), *(sa_table.c[c] for c in columns)),
                  sa_table, where or {})
    width = len(keys)
    return {tuple(row[:width]): dict(zip(columns, row[width:], strict=True))
            for row in session.execute(stmt)}


def save(*, session: Session, rows: Iterable[SQLModel]) -> None:
    """Write new or changed rows (table objects the core built or changed) now, within the
    session's transaction, so that their ids exist and later reads see them."""
    session.add_all(list(rows))
    session.flush()
