"""Revision 0009 adds the personal links' studies (``personallink``) to a 0008 database
holding annotators (made before: no link row, so their links open their pool's studies),
matches the models, and downgrades cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import get_engine
from tests.dbstate import migrate


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing: an empty one."""
    return empty_db_url


def tables(engine) -> set[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return set(inspect(conn).get_table_names())


def test_upgrade_from_0008_keeps_annotators_and_back(db_url: str) -> None:
    engine = get_engine(db_url)
    migrate(db_url, command.upgrade, "0008")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO evaluator (slug, kind, scale_min, scale_max, "
                          "description, config) VALUES ('silver-human', 'human', 1, 10, '', "
                          "'{}')"))
        conn.execute(text("INSERT INTO annotator (evaluator_id, name, token_hash, created_at) "
                          "SELECT id, 'ann', 'h', CURRENT_TIMESTAMP FROM evaluator"))
    assert "personallink" not in tables(engine)
    migrate(db_url, command.upgrade, "head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT name FROM annotator")).all() == [("ann",)]
        assert conn.execute(text("SELECT COUNT(*) FROM personallink")).scalar_one() == 0
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
    migrate(db_url, command.downgrade, "0008")
    assert "personallink" not in tables(engine)
    migrate(db_url, command.upgrade, "head")
