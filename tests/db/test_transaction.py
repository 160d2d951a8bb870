"""The unit of work (db/transaction.py): what each of reading, writing and queued_writing
commits, rolls back and serialises, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time

import pytest
from sqlmodel import select

from db.evaluators import upsert_evaluator
from db.models import Evaluator
from db.transaction import queued_writing, reading, writing
from elitr_core.data.database import open_database


def _slugs(url: str) -> list[str]:
    with reading(open_database(url)) as session:
        return sorted(session.exec(select(Evaluator.slug)).all())


def test_writing_commits_and_rolls_back_on_error(db_url: str) -> None:
    engine = open_database(db_url)
    with writing(engine) as session:
        upsert_evaluator(session=session, slug="kept", kind="llm")
    with pytest.raises(RuntimeError), writing(engine) as session:
        upsert_evaluator(session=session, slug="half-written", kind="llm")
        raise RuntimeError("a failure after the first write")
    assert _slugs(db_url) == ["kept"]


def test_reading_never_commits(db_url: str) -> None:
    engine = open_database(db_url)
    with reading(engine) as session:
        upsert_evaluator(session=session, slug="never-stored", kind="llm")
    assert _slugs(db_url) == []


def test_one_statement_reads_run_in_autocommit_on_postgresql(db_url: str) -> None:
    engine = open_database(db_url)
    with reading(engine, one_statement=True) as session:
        connection = session.connection()
        if engine.dialect.name == "postgresql":  # no BEGIN sent: the driver autocommits
            assert connection.connection.driver_connection.autocommit is True
        else:  # SQLite: a deferred transaction, as every SQLite read
            assert connection.get_execution_options()["sqlite_begin"] == "DEFERRED"
    with writing(engine) as session:
        assert session.connection().get_execution_options().get("sqlite_begin") is None


def test_queued_writers_of_a_process_take_turns(db_url: str) -> None:
    """Two threads' units never overlap on SQLite (the in-process queue); each commits."""
    engine = open_database(db_url)
    spans: list[tuple[float, float]] = []
    barrier = threading.Barrier(2)

    def writer(slug: str) -> None:
        barrier.wait()
        with queued_writing(engine) as session:
            start = time.monotonic()
            upsert_evaluator(session=session, slug=slug, kind="llm")
            time.sleep(0.05)
            spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=writer, args=(s,)) for s in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert _slugs(db_url) == ["a", "b"]
    if engine.dialect.name == "sqlite":
        first, second = sorted(spans)
        assert first[1] <= second[0]  # the second began after the first had committed
