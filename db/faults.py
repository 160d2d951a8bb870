"""What kind of fault a database error is, for a message that says what happened.

A full disk and a database that restarted (or dropped the connection) are faults of the
environment, not of the input nor bugs: the command line and the annotator's page name them
in one sentence (``elitr_core.cli.boundary``, ``elitr_core.annotation.studies.submit``). Read
from the driver's error code where it has one (PostgreSQL's SQLSTATE), else its message
(SQLite's result text).
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy.exc import DBAPIError

Fault = Literal["full", "gone", "locked", "read-only"]
#: SQLSTATE classes and codes: 53100 disk full; 08 connection exceptions; 57P01-57P03 the
#: server shutting down, crashed or not yet accepting connections
_PG_FULL = {"53100"}
_PG_GONE_PREFIXES = ("08", "57P01", "57P02", "57P03")
_GONE_WORDS = ("server closed the connection", "terminating connection", "connection refused",
               "connection is closed", "the database system is", "could not connect",
               "connection to server", "consuming input failed", "ssl syscall")
_FULL_WORDS = ("database or disk is full", "no space left", "disk i/o error", "disk full",
               "could not extend file", "could not write")


def is_driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of a database driver that SQLAlchemy did not wrap (a
    PostgreSQL ``COPY`` runs on the driver's own connection: its errors come as they are)."""
    return type(exc).__module__.split(".")[0] in ("psycopg", "sqlite3") and \
        isinstance(exc, Exception) and not isinstance(exc, DBAPIError)


def fault_kind(exc: BaseException) -> Fault | None:
    """The kind of environment fault ``exc`` is (a SQLAlchemy error or a driver's own), or
    None (an input the database refused, a bug, or not a database error at all)."""
    if isinstance(exc, DBAPIError):
        orig: BaseException | None = exc.orig
        invalidated = exc.connection_invalidated
    elif is_driver_error(exc):
        orig, invalidated = exc, False
    else:
        return None
    code = str(getattr(orig, "sqlstate", "") or getattr(orig, "pgcode", "") or "")
    text = str(orig if orig is not None else exc).lower()
    if code in _PG_FULL or any(word in text for word in _FULL_WORDS):
        return "full"
    if invalidated or code.startswith(_PG_GONE_PREFIXES) or \
            any(word in text for word in _GONE_WORDS):
        return "gone"
    if "readonly database" in text or "read-only" in text:
        return "read-only"
    if "locked" in text:
        return "locked"
    return None


def brief(exc: BaseException) -> str:
    """The first line of what the driver said (no SQL, no parameters: an answer's text would
    be among them), else of the exception itself."""
    source = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    for line in str(source).strip().splitlines():
        if line.strip():
            return line.strip()[:300]
    return type(exc).__name__
