"""Revision 0002 upgrades a 0001 database holding an assignment, and matches the models."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import get_engine
from db.migrate import alembic_config


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def test_upgrade_from_0001_keeps_rows_and_matches_models(db_url: str) -> None:
    engine = get_engine(db_url)

    def migrate(action, revision: str) -> None:  # type: ignore[no-untyped-def]
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            action(config, revision)

    migrate(command.upgrade, "0001")
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO evaluator (id, slug, kind, scale_min, scale_max, "
                          "description, config) VALUES (1, 'silver-human', 'human', 1, 10, "
                          "'', '{}')"))
        conn.execute(text("INSERT INTO study (id, name, evaluator_id, per_item, assignment, "
                          "order_seed, status, filters, created_at) VALUES (1, 's', 1, 1, "
                          "'meeting', 0, 'open', '{}', '2026-01-01')"))
    migrate(command.upgrade, "head")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT attention_rate FROM study")).scalar_one() == 0
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
    migrate(command.downgrade, "0001")
    migrate(command.upgrade, "head")
