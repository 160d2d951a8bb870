"""Fixtures of the harness tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def url(bundled_db: str) -> str:
    """A database holding the bundled data (SQLite and PostgreSQL), to import runs into."""
    return bundled_db
