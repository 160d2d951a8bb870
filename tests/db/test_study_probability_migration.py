"""Revision 0005 adds the selection probability of study items to a 0004 database, matches the
models, and downgrades cleanly."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

import db.models  # noqa: F401  (registers the tables)
from db.engine import get_engine
from tests.dbstate import migrate


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def columns(engine) -> set[str]:  # type: ignore[no-untyped-def]
    with engine.connect() as conn:
        return {c["name"] for c in inspect(conn).get_columns("studyitem")}


def test_upgrade_from_0004_and_back(db_url: str) -> None:
    engine = get_engine(db_url)
    migrate(db_url, command.upgrade, "0004")
    assert "probability" not in columns(engine)
    migrate(db_url, command.upgrade, "head")
    assert "probability" in columns(engine)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
    migrate(db_url, command.downgrade, "0004")
    assert "probability" not in columns(engine)
    migrate(db_url, command.upgrade, "head")
