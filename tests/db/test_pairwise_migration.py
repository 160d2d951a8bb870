"""Revision 0003 adds the pairwise judgments table to a 0002 database, matches the models,
and downgrades cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import get_engine
from db.migrate import alembic_config


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def test_upgrade_from_0002_and_back(db_url: str) -> None:
    engine = get_engine(db_url)

    def migrate(action, revision: str) -> None:  # type: ignore[no-untyped-def]
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            action(config, revision)

    migrate(command.upgrade, "0002")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO evaluator (id, slug, kind, scale_min, scale_max, "
                          "description, config) VALUES (1, 'gpt-4', 'llm', 1, 10, '', '{}')"))
    migrate(command.upgrade, "head")
    with engine.connect() as conn:
        assert "pairwisejudgment" in inspect(conn).get_table_names()
        assert conn.execute(text("SELECT slug FROM evaluator")).scalar_one() == "gpt-4"
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
    migrate(command.downgrade, "0002")
    with engine.connect() as conn:
        assert "pairwisejudgment" not in inspect(conn).get_table_names()
    migrate(command.upgrade, "head")
