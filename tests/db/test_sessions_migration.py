"""Revision 0004 adds login attempts, researcher sessions, the server secret and study
guidelines to a 0003 database, matches the models, and downgrades cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import get_engine
from tests.dbstate import migrate as migrate_to

NEW_TABLES = {"loginattempt", "researchersession", "serversecret"}


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def test_upgrade_from_0003_and_back(db_url: str) -> None:
    engine = get_engine(db_url)

    def migrate(action, revision: str) -> None:  # type: ignore[no-untyped-def]
        migrate_to(db_url, action, revision)

    migrate(command.upgrade, "0003")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO evaluator (id, slug, kind, scale_min, scale_max, "
                          "description, config) VALUES (1, 'gold', 'human', 1, 10, '', '{}')"))
        conn.execute(text("INSERT INTO study (id, name, evaluator_id, per_item, assignment, "
                          "order_seed, status, filters, created_at, attention_rate) VALUES "
                          "(1, 's', 1, 1, 'meeting', 0, 'open', '{}', '2026-01-01', 0)"))
    migrate(command.upgrade, "head")
    with engine.connect() as conn:
        assert NEW_TABLES <= set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT guidelines FROM study")).scalar_one() is None
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
    migrate(command.downgrade, "0003")
    with engine.connect() as conn:
        assert not NEW_TABLES & set(inspect(conn).get_table_names())
        assert conn.execute(text("SELECT name FROM study")).scalar_one() == "s"
    migrate(command.upgrade, "head")
