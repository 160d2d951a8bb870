"""Fixtures of the db tests."""

from __future__ import annotations

import pytest

from tests.elitr_core.annotation_data import build


@pytest.fixture
def annotation_url(sqlite_url: str) -> str:
    """A fresh SQLite database holding the synthetic annotation benchmark."""
    build(sqlite_url)
    return sqlite_url
