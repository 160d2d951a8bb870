"""Shared fixtures: a fresh database per test, on SQLite and (when configured) PostgreSQL.

PostgreSQL tests run when ``DATABASE_URL_TEST`` points at a server (CI sets it); each test gets a
temporary database created there and dropped afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

# Imported now, while pytest rewrites its modules on a sound interpreter: hypothesis's plugin
# otherwise imports it in the terminal summary, and on Debian's Python 3.11.2 an ast.parse there
# (pytest's assertion rewriting) can fail with "SystemError: AST constructor recursion depth
# mismatch" after some runs (seen after tests/test_deploy.py then tests/db/test_pool_plan.py):
# the summary then errors although every test passed.
import hypothesis  # noqa: F401
import pytest
from sqlalchemy import make_url

from db.engine import dispose_engines

PG_URL = os.environ.get("DATABASE_URL_TEST")


def _pg_admin_url() -> str:
    url = make_url(PG_URL or "")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.contextmanager
def pg_database(prefix: str = "elitr_test", template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (its URL), empty or a copy of the database at URL
    ``template``, dropped on exit; skips without a server."""
    if not PG_URL:
        pytest.skip("PostgreSQL tests need DATABASE_URL_TEST (CI sets it)")
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin_url()
    copy = f' TEMPLATE "{make_url(template).database}"' if template else ""
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    url = make_url(admin).set(drivername="postgresql+psycopg", database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        dispose_engines()
        _forget_ready()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A new, empty PostgreSQL database for one test."""
    with pg_database() as url:
        yield url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    """A new SQLite database file for one test."""
    yield f"sqlite:///{tmp_path / 'test.db'}"
    dispose_engines()
    _forget_ready()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using it runs on SQLite and on PostgreSQL."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


def _template(folder: Path, build: Callable[[str], None]) -> Path:
    """A SQLite file built once by ``build(url)``, for per-test copies."""
    path = folder / "template.db"
    build(f"sqlite:///{path}")
    dispose_engines()
    _forget_ready()
    return path


def _fresh_copy(template: Path, tmp_path: Path) -> Iterator[str]:
    """A copy of ``template`` for one test (SQLite URL); engines forgotten afterwards."""
    target = tmp_path / f"{template.parent.name}.db"
    shutil.copy(template, target)
    yield f"sqlite:///{target}"
    dispose_engines()
    _forget_ready()


def _init_bundled(url: str) -> None:
    from elitr_core.cli.main import main

    assert main(["init", "--db", url]) == 0


@pytest.fixture(scope="session")
def bundled_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding the bundled data, built once and copied by ``bundled_sqlite``."""
    return _template(tmp_path_factory.mktemp("bundled"), _init_bundled)


@pytest.fixture
def bundled_sqlite(bundled_sqlite_template: Path, tmp_path: Path) -> Iterator[str]:
    """A fresh copy of the bundled-data database (SQLite URL)."""
    yield from _fresh_copy(bundled_sqlite_template, tmp_path)


@pytest.fixture(scope="session")
def bundled_pg_template() -> Iterator[str]:
    """A PostgreSQL database holding the bundled data, built once and copied by
    ``bundled_db`` (no connection is left open on it: PostgreSQL copies only such a one)."""
    with pg_database("elitr_bundled_template") as url:
        _init_bundled(url)
        dispose_engines()
        _forget_ready()
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def bundled_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database holding the bundled data, on SQLite and on PostgreSQL (as ``db_url``
    after ``init``): a copy of one that ``init`` filled once per session, since ``init`` on
    PostgreSQL takes 2-4 s a test on two shared cores and a copy 0.4 s. What ``init`` writes is
    checked in tests/elitr_core/data/test_importers.py."""
    if request.param == "sqlite":
        yield from _fresh_copy(request.getfixturevalue("bundled_sqlite_template"), tmp_path)
        return
    with pg_database(template=request.getfixturevalue("bundled_pg_template")) as url:
        yield url


@pytest.fixture(scope="session")
def small_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding ``tests.small_db``, built once and copied by ``small_sqlite``."""
    from tests import small_db

    return _template(tmp_path_factory.mktemp("small"), small_db.build)


@pytest.fixture
def small_sqlite(small_sqlite_template: Path, tmp_path: Path) -> Iterator[str]:
    """A fresh copy of the small scored benchmark of ``tests.small_db`` (SQLite URL)."""
    yield from _fresh_copy(small_sqlite_template, tmp_path)


def _forget_ready() -> None:
    from elitr_core.data import database

    database._READY.clear()
