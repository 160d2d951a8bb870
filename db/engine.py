"""The one engine factory: SQLite (WAL, busy timeout, BEGIN IMMEDIATE writes) or PostgreSQL.

The database URL comes from ``--db``, else ``DATABASE_URL``, else the default SQLite file under
``var/`` (git-ignored).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import event
from sqlalchemy.engine import Engine, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.pool import NullPool
from sqlmodel import create_engine, text

import elitr_core.settings as settings
from db.transaction import forget_engines
from elitr_core.errors import UserError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SQLITE_PATH = PROJECT_ROOT / "var" / "elitr.db"
SQLITE_BUSY_TIMEOUT_MS = 30_000
#: Connection pool: enough connections for every annotator submitting at once. SQLAlchemy's
#: default (5 + 10 overflow) made the 16th concurrent submit wait for a free connection, and
#: threads woken in no fair order waited up to 22.9 s (bench/bench_annotation.py).
POOL_OPTIONS: dict[str, Any] = {"pool_size": 20, "max_overflow": 40, "pool_timeout": 30}
#: Replicas of the server on one PostgreSQL (deploy/): each replica's pool gets an equal share of
#: the server's max_connections, less its reserved ones and SPARE_CONNECTIONS for the CLI, psql
#: and backups; two replicas at 20 + 40 each could open 120 against PostgreSQL's default 100.
REPLICAS_ENV = settings.REPLICAS
SPARE_CONNECTIONS = 10
MIN_CONNECTIONS = 5  # fewer per replica and a burst of submits would queue on the pool

_ENGINES: dict[str, Engine] = {}
_READ_ONLY: dict[Engine, str] = {}  # engine -> the file it reads


def database_url(url: str | None = None) -> str:
    """Resolve the database URL: explicit, then ``DATABASE_URL``, then the default SQLite file."""
    resolved = url or settings.database_url() or f"sqlite:///{DEFAULT_SQLITE_PATH}"
    if resolved.startswith("postgres://"):  # Heroku-style scheme that SQLAlchemy rejects
        resolved = "postgresql://" + resolved[len("postgres://") :]
    if resolved.startswith("postgresql://"):
        resolved = "postgresql+psycopg://" + resolved[len("postgresql://") :]
    return resolved


def _configure_sqlite(engine: Engine, *, read_only: bool = False) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # pysqlite's own transaction handling would issue a deferred BEGIN; we emit ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not read_only:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Writers take the write lock at BEGIN, so two writers queue on busy_timeout instead of
        # failing with "database is locked" when a deferred read lock must be upgraded.
        default = "DEFERRED" if read_only else "IMMEDIATE"
        mode = connection.get_execution_options().get("sqlite_begin", default)
        connection.exec_driver_sql(f"BEGIN {mode}")


SUPPORTED = "sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE"


def _parse(resolved: str) -> Any:
    try:
        parsed = make_url(resolved)
    except (ArgumentError, ValueError) as exc:  # ValueError: a port that is not a number
        shown = re.sub(r"(//[^:/@]*:)[^@/]*@", r"\1***@", resolved)  # hide a password
        raise UserError(f"invalid database URL {shown!r} ({exc}): write it as {SUPPORTED}") \
            from None
    backend = parsed.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise UserError(
            f"unsupported database {backend!r} in URL "
            f"{parsed.render_as_string(hide_password=True)}: use {SUPPORTED}"
        )
    return parsed


def missing_sqlite_file(url: str | None = None) -> Path | None:
    """The SQLite file ``url`` names when no such file exists yet (a reading command refuses
    it rather than create an empty database); None for PostgreSQL, memory or an existing
    file."""
    parsed = _parse(database_url(url))
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" \
            or database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.exists() else path


def _sqlite_target(resolved: str, database: str | None) -> tuple[str, bool]:
    """The URL to open and whether it is read-only (the file or its folder is not writable).

    A read-only file is opened with ``mode=ro`` (its folder holds the WAL's shared memory
    file); in a read-only folder with ``immutable=1``, which SQLite allows only when no
    un-checkpointed ``-wal`` file is left there.
    """
    if not database or database == ":memory:" or database.startswith("file:"):
        return resolved, False
    path = Path(database)
    folder = path.parent
    if not path.exists():
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create the folder {folder} for the SQLite database ({exc.strerror}): "
                "choose a writable path with --db or DATABASE_URL"
            ) from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(
                f"cannot create the SQLite database {path}: the folder {folder} is not "
                "writable. Choose a writable path with --db or DATABASE_URL"
            )
        return resolved, False
    if path.is_dir():
        raise UserError(f"the SQLite database {path} is a folder: pass a file path")
    if os.access(path, os.W_OK) and os.access(folder, os.W_OK | os.X_OK):
        return resolved, False
    wal = Path(f"{path}-wal")
    folder_writable = os.access(folder, os.W_OK | os.X_OK)
    if not folder_writable and wal.exists() and wal.stat().st_size:
        raise UserError(
            f"the SQLite database {path} is in a read-only folder with unsaved changes in "
            f"{wal.name}: copy the database and its -wal file to a writable folder"
        )
    flag = "mode=ro" if folder_writable else "immutable=1"
    return f"sqlite:///file:{quote(str(path.resolve()))}?{flag}&uri=true", True


#: What psycopg says when SQLAlchemy's connection check (``pool_pre_ping``) sets the connection's
#: autocommit back on a connection the server has just ended (see _configure_postgresql).
_DEAD_PING = "can't change 'autocommit' now"


def _configure_postgresql(engine: Engine) -> None:
    @event.listens_for(engine, "handle_error")
    def _dead_ping(context: ExceptionContext) -> None:
        """A connection check that failed because the server ended the connection is a
        disconnect: the pool opens a new connection instead of failing the checkout.

        SQLAlchemy's psycopg check (``do_ping``, SQLAlchemy 2.1 with psycopg 3.3) runs its
        query with autocommit on and sets autocommit back in a ``finally``. When PostgreSQL
        ends the connection during that query (a restart, ``pg_terminate_backend``), setting
        it back raises psycopg's ProgrammingError ("can't change 'autocommit' now: connection
        in transaction status ACTIVE"), which hides the OperationalError and is not taken for
        a disconnect: an annotator's submit after a database restart failed instead of
        reconnecting (seen once in tests/elitr_core/annotation/test_submit_faults.py). Only
        that error, only during the check: any other stays an error."""
        import psycopg  # the driver of every PostgreSQL URL here (database_url)

        original = context.original_exception
        if context.is_pre_ping and isinstance(original, psycopg.ProgrammingError) and \
                str(original).startswith(_DEAD_PING):
            context.is_disconnect = True


def get_engine(url: str | None = None) -> Engine:
    """Return the (cached) engine for ``url``; create the SQLite folder when needed.

    A SQLite file that cannot be written (file or folder read-only) is opened read-only:
    reading commands work, writing ones are refused by :func:`require_writable`.

    Raises
    ------
    UserError
        When the URL is malformed, its scheme unsupported or a new SQLite file cannot be
        created.
    """
    resolved = database_url(url)
    if resolved in _ENGINES:
        return _ENGINES[resolved]
    parsed = _parse(resolved)
    if parsed.get_backend_name() == "sqlite":
        target, read_only = _sqlite_target(resolved, parsed.database)
        engine = create_engine(target, connect_args={"check_same_thread": False, "timeout": 30},
                               **(POOL_OPTIONS if parsed.database not in (None, "", ":memory:")
                                  else {}))
        _configure_sqlite(engine, read_only=read_only)
        if read_only:
            _READ_ONLY[engine] = str(parsed.database)
    else:
        engine = create_engine(resolved, pool_pre_ping=True, connect_args={"connect_timeout": 10},
                               **{**POOL_OPTIONS, **_pool_for(resolved)})
        _configure_postgresql(engine)
    _ENGINES[resolved] = engine
    return engine


def pool_plan(max_connections: int, reserved: int, replicas: int) -> dict[str, int]:
    """One replica's pool (``pool_size``, ``max_overflow``): an equal share of what PostgreSQL
    allows, at most the single-server pool (``POOL_OPTIONS``).

    Raises
    ------
    UserError
        When a share would be under ``MIN_CONNECTIONS``, naming the max_connections needed.
    """
    share = (max_connections - reserved - SPARE_CONNECTIONS) // replicas
    if share < MIN_CONNECTIONS:
        needed = replicas * MIN_CONNECTIONS + reserved + SPARE_CONNECTIONS
        raise UserError(
            f"PostgreSQL allows {max_connections} connections ({reserved} reserved) and "
            f"{replicas} server replicas need at least {MIN_CONNECTIONS} each plus "
            f"{SPARE_CONNECTIONS} spare: set max_connections = {needed} or more in "
            f"postgresql.conf and restart PostgreSQL, or run fewer replicas ({REPLICAS_ENV})")
    total = POOL_OPTIONS["pool_size"] + POOL_OPTIONS["max_overflow"]
    size = min(POOL_OPTIONS["pool_size"], share)
    return {"pool_size": size, "max_overflow": min(total, share) - size}


def _pool_for(url: str) -> dict[str, int]:
    """This replica's pool on the PostgreSQL server at ``url`` (one short connection reads its
    limits); the default pool when the server cannot be reached (``check_connection`` then
    says why)."""
    count = settings.replicas()
    probe = create_engine(url, poolclass=NullPool, connect_args={"connect_timeout": 10})
    try:
        with probe.connect() as connection:
            row = connection.execute(text(
                "SELECT current_setting('max_connections')::int, "
                "current_setting('superuser_reserved_connections')::int + "
                "coalesce(current_setting('reserved_connections', true)::int, 0)")).one()
    except DBAPIError:
        return {}
    finally:
        probe.dispose()
    return pool_plan(int(row[0]), int(row[1]), count)


def is_read_only(engine: Engine) -> bool:
    """True for a SQLite database opened read-only (its file or folder is not writable)."""
    return engine in _READ_ONLY


def require_writable(engine: Engine) -> None:
    """Raise :class:`UserError` when ``engine``'s database was opened read-only."""
    if is_read_only(engine):
        raise UserError(
            f"the SQLite database {_READ_ONLY[engine]} is read-only (the file or its folder "
            "cannot be written): make both writable, or copy it elsewhere; reading commands "
            "such as export still work"
        )


def check_connection(engine: Engine) -> None:
    """Open one connection; raise :class:`UserError` saying what to do when it fails."""
    try:
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
            if engine.dialect.name == "sqlite":  # reads the file header
                connection.execute(text("SELECT count(*) FROM sqlite_master"))
    except DBAPIError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        where = engine.url.render_as_string(hide_password=True)
        from db.faults import fault_kind

        if engine.dialect.name == "sqlite" and fault_kind(exc) == "full":
            # opening writes the -wal and -shm files beside it: on a full disk that fails
            raise UserError(
                f"cannot open the SQLite database {where}: its disk is full ({reason}). Free "
                "some disk space and run the same command again; the database file is "
                "unchanged"
            ) from None
        if engine.dialect.name == "sqlite":
            raise UserError(
                f"cannot open the SQLite database {where}: {reason}. Check that the path "
                "(--db or DATABASE_URL) is a database file made by this program"
            ) from None
        raise UserError(
            f"cannot reach the database {where}: "
            f"{reason}. Check the URL (--db or DATABASE_URL) and that the server is running."
        ) from None


def dispose_engines() -> None:
    """Close every cached engine (tests, and after a fork)."""
    for engine in _ENGINES.values():
        engine.dispose()
    _ENGINES.clear()
    _READ_ONLY.clear()
    forget_engines()
