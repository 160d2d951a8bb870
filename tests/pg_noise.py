"""The pool's log of connections the tests' own database drops ended, without a traceback.

Each PostgreSQL test drops its database ``WITH (FORCE)`` (``tests/conftest.py``,
``pg_database``), which ends any connection still open on it. A pooled connection that a test
left in a reference cycle is then reset only when the cyclic garbage collector frees it, and
SQLAlchemy logs the failed reset with ``exc_info`` ("Exception during reset or similar"): a
traceback in an unrelated test's log (and, formatted inside the collector, the gh-106905
failure that tests/gc_carets.py prevents for every finalizer). The filter keeps the record, as
one line with the error's message, and drops only the traceback, and only for a connection
ended by the server; any other failure is logged as SQLAlchemy wrote it.
"""

from __future__ import annotations

import logging

from sqlalchemy import pool

#: the pool classes whose instances log under their own class's name (sqlalchemy.log)
POOLS = (pool.QueuePool, pool.NullPool, pool.SingletonThreadPool, pool.StaticPool,
         pool.AssertionPool)


def ended_by_server(error: BaseException) -> bool:
    """Whether ``error`` says the server ended the connection (psycopg's AdminShutdown, or
    an operational error on a connection already closed), directly or wrapped by SQLAlchemy."""
    import psycopg

    error = getattr(error, "orig", None) or error
    return isinstance(error, psycopg.OperationalError)


class EndedConnectionFilter(logging.Filter):
    """Drops the traceback of a pool record whose error is a connection the server ended."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and ended_by_server(error):
            first, *_ = str(error).strip().splitlines() or [""]
            record.msg = f"{record.getMessage()} ({type(error).__name__}: {first})"
            record.args = None
            record.exc_info = record.exc_text = None
        return True


FILTER = EndedConnectionFilter()


def install() -> None:
    """Add the filter to every pool class's logger (once)."""
    for cls in POOLS:
        logger = logging.getLogger(f"{cls.__module__}.{cls.__name__}")
        if FILTER not in logger.filters:
            logger.addFilter(FILTER)
