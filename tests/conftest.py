"""Shared fixtures: a fresh database per test, on SQLite and (when configured) PostgreSQL.

PostgreSQL tests run when ``DATABASE_URL_TEST`` points at a server (CI sets it); each test gets a
temporary database created there and dropped afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

# Imported now, while pytest rewrites its modules on a sound interpreter: hypothesis's plugin
# otherwise imports it in the terminal summary, and on Debian's Python 3.11.2 an ast.parse there
# (pytest's assertion rewriting) can fail with "SystemError: AST constructor recursion depth
# mismatch" after some runs (seen after tests/test_deploy.py then tests/db/test_pool_plan.py):
# the summary then errors although every test passed.
import hypothesis  # noqa: F401
import pytest
from sqlalchemy import make_url

from db.engine import dispose_engines
from tests import gc_carets, pg_noise, schedule, spawn_guard, tiers, workers
from tests.bundled import read_bundled_archives_once

PG_URL = os.environ.get("DATABASE_URL_TEST")

gc_carets.install()  # no ast.parse inside the collector (gh-106905): first, before collection

read_bundled_archives_once()  # each bundled archive decrypted once per test process


def pytest_configure(config: pytest.Config) -> None:
    pg_noise.install()  # a dropped database's pooled connections: no traceback from the GC
    for tier, description in tiers.MARKERS.items():
        config.addinivalue_line("markers", f"{tier}: {description}")


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: a worker per core, one more for a run with browser or server tests."""
    return schedule.workers(config)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the files of a ``schedule.TOGETHER`` group on one worker."""
    return schedule.scheduler(config, log) if config.getvalue("dist") == "loadfile" else None


def pytest_collection_finish(session: pytest.Session) -> None:
    """Streamlit's component scan done once per process, once the tests have imported
    Streamlit (a process that collected no Streamlit test never imports it for this).

    Each new ``AppTest`` scans the metadata of every installed distribution for Streamlit
    components (streamlit 1.67, ``AppTest._run``): 0.16 CPU-s, about a fifth of a page test's
    cost. The installed packages do not change during a run, so the scan's answer does not
    either (an empty list here)."""
    if "streamlit" not in sys.modules:
        return
    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if getattr(scan, "scanned_once", False):
        return
    found = functools.cache(scan)

    def scan_once(max_workers: int | None = None) -> list[Any]:
        return list(found(max_workers))  # a new list a call, as the scan gives

    scan_once.scanned_once = True  # type: ignore[attr-defined]
    manifest_scanner.scan_component_manifests = scan_once


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test's tiers (browser, server, model, postgres) from what it uses (tests/tiers.py);
    a test that starts one of those things outside its tier fails the collection."""
    problems = tiers.classify(items)
    if problems:
        raise pytest.UsageError("\n".join(problems))
    # Costliest files first (tests/schedule.py), which xdist keeps under --no-loadscope-reorder.
    items[:] = schedule.by_cost(items, schedule.load())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    """The running test, for the run-time check of what it starts (spawn_guard.guard_spawn)."""
    spawn_guard.running(item)
    try:
        return (yield)
    finally:
        spawn_guard.running(None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    """A test that started a program outside its tiers, or left the pages' background warm-up
    running, fails, with one sentence saying so."""
    report = yield
    problems = spawn_guard.violations()
    warm = sys.modules.get("ui.warm")  # not imported by this process: no warm-up to leave
    if call.when == "teardown" and warm is not None and any(
            t.name == warm.THREAD_NAME and t.is_alive() for t in threading.enumerate()):
        # it reads DATABASE_URL as it goes: the next tests' databases, in this process
        problems.append(f"{item.nodeid} left the pages' background warm-up (ui.warm) running: "
                        "join the thread it started, or replace ui.warm.again in the test.")
    if problems:
        before = f"\n\n{report.longrepr}" if report.longrepr else ""
        report.outcome = "failed"
        report.longrepr = "\n".join(problems) + before
    return report


def _pg_admin_url() -> str:
    url = make_url(PG_URL or "")
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@contextlib.contextmanager
def pg_database(prefix: str = "elitr_test", template: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database (its URL), empty or a copy of the database at URL
    ``template``, dropped on exit; skips without a server."""
    if not PG_URL:
        pytest.skip("PostgreSQL tests need DATABASE_URL_TEST (CI sets it)")
    spawn_guard.require("postgres", "PostgreSQL (pg_database)")
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    workers.claim_database(name)  # no other test of the run, on any xdist worker, has it
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


def _template(folder: Path, build: Callable[[str], None]) -> Path:
    """A SQLite file built once by ``build(url)``, for per-test copies."""
    path = folder / "template.db"
    build(f"sqlite:///{path}")
    dispose_engines()
    _forget_ready()
    return path


def _pg_template(prefix: str, build: Callable[[str], None]) -> Iterator[str]:
    """A PostgreSQL database built once by ``build(url)``, for per-test copies (no connection
    is left open on it: PostgreSQL copies only such a one)."""
    with pg_database(prefix) as url:
        build(url)
        dispose_engines()
        _forget_ready()
        yield url


def _copy(request: pytest.FixtureRequest, tmp_path: Path, kind: str) -> Iterator[str]:
    """The test's own copy of the ``kind`` template (``schema``, ``bundled``) on the database
    of its leg."""
    if request.param == "sqlite":
        yield from _fresh_copy(request.getfixturevalue(f"{kind}_sqlite_template"), tmp_path)
        return
    with pg_database(template=request.getfixturevalue(f"{kind}_pg_template")) as url:
        yield url


def _fresh_copy(template: Path, tmp_path: Path) -> Iterator[str]:
    """A copy of ``template`` for one test (SQLite URL); engines forgotten afterwards."""
    target = tmp_path / f"{template.parent.name}.db"
    shutil.copy(template, target)
    yield f"sqlite:///{target}"
    dispose_engines()
    _forget_ready()


def _migrate(url: str) -> None:
    from elitr_core.data.database import open_database

    open_database(url)


@pytest.fixture(scope="session")
def schema_sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file at the newest schema with no rows, built once and copied by ``db_url``."""
    return _template(tmp_path_factory.mktemp("schema"), _migrate)


@pytest.fixture(scope="session")
def schema_pg_template() -> Iterator[str]:
    """A PostgreSQL database at the newest schema with no rows, migrated once per session (per
    xdist worker) and copied by ``db_url``."""
    yield from _pg_template("elitr_schema_template", _migrate)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Each test using it runs on SQLite and on PostgreSQL, on a database at the newest schema
    with no rows: a copy of one migrated once per session (CREATE DATABASE ... TEMPLATE on
    PostgreSQL), not a migration per test. The migrations themselves are tested from nothing
    with ``empty_db_url`` (tests/db/test_migrate.py and the ``*_migration`` modules)."""
    yield from _copy(request, tmp_path, "schema")


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request: pytest.FixtureRequest) -> str:
    """A database with nothing in it, not even the schema, on SQLite and on PostgreSQL: for the
    tests of the migrations."""
    name = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(name))


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
    yield from _pg_template("elitr_bundled_template", _init_bundled)


@pytest.fixture(params=["sqlite", "postgresql"])
def bundled_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database holding the bundled data, on SQLite and on PostgreSQL (as ``db_url``
    after ``init``): a copy of one that ``init`` filled once per session, since ``init`` on
    PostgreSQL takes 2-4 s a test on two shared cores and a copy 0.4 s. What ``init`` writes is
    checked in tests/elitr_core/data/test_importers.py."""
    yield from _copy(request, tmp_path, "bundled")


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
