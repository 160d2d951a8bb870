"""Fixtures of the harness tests."""

from __future__ import annotations

import pytest

from elitr_core.cli.main import main


@pytest.fixture
def url(db_url: str) -> str:
    """A database holding the bundled data (SQLite and PostgreSQL), to import runs into."""
    assert main(["init", "--db", db_url]) == 0
    return db_url
