"""Helpers to compare a whole database before and after an operation."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, text

from db.engine import get_engine


def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted, as plain tuples."""
    engine = get_engine(url)
    out: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        # the driver's own cursor: a textual SELECT has no result processing, so its rows hold
        # the values SQLAlchemy's Row objects would, without building those (a third faster)
        cursor = conn.connection.cursor()
        try:
            for table in sorted(inspect(conn).get_table_names()):
                cursor.execute(f'SELECT * FROM "{table}"')
                out[table] = sorted([tuple(map(repr, r)) for r in cursor.fetchall()])
        finally:
            cursor.close()
    return out


def counts(url: str) -> dict[str, int]:
    """Row counts of the main tables."""
    engine = get_engine(url)
    with engine.connect() as conn:
        return {
            t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one()
            for t in ("meeting", "question", "run", "response", "evaluator", "score")
        }


def migrate(url: str, action: Any, revision: str) -> None:
    """Run an Alembic ``command.upgrade`` / ``downgrade`` to ``revision`` on ``url``."""
    from db.migrate import alembic_config

    with get_engine(url).begin() as connection:
        config = alembic_config()
        config.attributes["connection"] = connection
        action(config, revision)
