"""tests/pg_noise.py: a pooled connection the server ended is logged in one line, without the
traceback whose formatting (ast.parse) broke Debian's Python 3.11.2 inside another ast.parse."""

from __future__ import annotations

import gc
import logging
import sys

import psycopg
import pytest
from sqlalchemy import create_engine, make_url

from tests import pg_noise


def test_a_reset_failure_on_an_ended_connection_is_one_line(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    engine = create_engine(pg_url, pool_size=1)
    try:
        raw = engine.raw_connection()
        cursor = raw.cursor()
        cursor.execute("SELECT pg_backend_pid()")  # in a transaction (not autocommit)
        pid = cursor.fetchone()[0]
        admin = make_url(pg_url).set(drivername="postgresql", database="postgres")
        with psycopg.connect(admin.render_as_string(hide_password=False),
                             autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with caplog.at_level(logging.ERROR, logger="sqlalchemy.pool"):
            # the garbage collector's path: a checked-out connection in a reference cycle
            cycle = [raw]
            cycle.append(cycle)
            del raw, cursor, cycle
            gc.collect()
    finally:
        engine.dispose()
    failed = [r for r in caplog.records if r.name.startswith("sqlalchemy.pool")
              and "Exception during reset" in r.getMessage()]
    assert failed, [r.getMessage() for r in caplog.records]
    for record in failed:
        assert record.exc_info is None and record.exc_text is None
        assert "terminating connection" in record.getMessage() or \
            "closed" in record.getMessage(), record.getMessage()


def test_any_other_error_keeps_its_traceback() -> None:
    try:
        raise ValueError("not a connection the server ended")
    except ValueError:
        record = logging.LogRecord("sqlalchemy.pool.impl.QueuePool", logging.ERROR, __file__,
                                   1, "Exception during reset or similar", None,
                                   sys.exc_info())
    assert pg_noise.FILTER.filter(record)
    assert record.exc_info is not None and record.getMessage() == \
        "Exception during reset or similar"


def test_the_filter_is_on_every_pool_class_logger() -> None:
    for cls in pg_noise.POOLS:
        logger = logging.getLogger(f"{cls.__module__}.{cls.__name__}")
        assert pg_noise.FILTER in logger.filters, cls
