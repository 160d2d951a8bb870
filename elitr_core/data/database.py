"""Opening the database for the CLI and the app: engine, reachability check, schema upgrade.

The session convention of the core (ARCHITECTURE.md): a core function that reads or writes in
one transaction takes ``session`` first and never commits; its caller (a CLI command, a page)
opens the transaction with :func:`reading` or :func:`writing` (``db.transaction``'s unit of
work, named here so that pages never import ``db``). Only long passes that must store results
as they arrive (generation, judging, the annotation queue) take the ``engine`` and open their
own short transactions.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from db.engine import (
    check_connection,
    get_engine,
    is_read_only,
    missing_sqlite_file,
    require_writable,
)
from db.migrate import is_current, upgrade
from db.transaction import queued_writing, reading, writing
from elitr_core.errors import UserError

_READY: set[str] = set()


def open_database(url: str | None = None, *, write: bool = True) -> Engine:
    """An engine whose schema is at the newest migration.

    With ``write=False`` (exports and other reading commands) a read-only SQLite database is
    accepted as long as its schema is already the newest; it is never upgraded, and a SQLite
    file that does not exist is refused (a mistyped path must not become an empty database).

    Raises
    ------
    UserError
        The database cannot be reached, the URL is invalid, or it is read-only and ``write``.
    """
    if not write:
        missing = missing_sqlite_file(url)
        if missing is not None:  # never create an empty database to read from
            raise UserError(f"the SQLite database {missing} does not exist: check --db or "
                            "DATABASE_URL (a reading command creates none; `python -m "
                            "elitr_core init` makes one)")
    engine = get_engine(url)
    if write:
        require_writable(engine)
    key = engine.url.render_as_string(hide_password=False)
    if key not in _READY:
        check_connection(engine)
        if is_read_only(engine):
            _require_current_schema(engine)
        else:
            try:
                upgrade(engine)
            except OperationalError as exc:
                raise UserError(f"cannot prepare the database schema: {exc.orig}") from None
        _READY.add(key)
    return engine


def _require_current_schema(engine: Engine) -> None:
    if not is_current(engine):
        raise UserError(
            f"the read-only database {engine.url.database} has an older schema: make it "
            "writable once so that it can be upgraded"
        )


def ensure_bundled_data(engine: Engine) -> bool:
    """Import the bundled ELITR-Bench data on first start; True when it imported."""
    from elitr_core.data.importers import database_is_empty, import_bundled

    with writing(engine) as session:
        if not database_is_empty(session):
            return False
        import_bundled(session)
    return True


__all__ = ["Engine", "ensure_bundled_data", "open_database", "queued_writing", "reading",
           "writing"]
