"""The page tests' shared databases: one copy of the bundled data per test module, for the
tests that only read it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pages.analysis_support import shared_copy


@pytest.fixture(scope="module")
def shared_sqlite(bundled_sqlite_template: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bundled data, shared by the module's tests that only read it
    (``analysis_support.shared_copy``)."""
    yield from shared_copy(bundled_sqlite_template, tmp_path_factory.mktemp("shared"))
