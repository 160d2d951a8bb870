"""The background batch writer: everything put is stored by close(); errors reach the caller."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text
from sqlmodel import Session

from db import keyed
from db.engine import get_engine
from db.models import Evaluator
from elitr_core.data.database import open_database
from elitr_core.passes.writer import BatchWriter


def _write(session: Session, slugs: list[str]) -> None:
    keyed.upsert(session=session, table=Evaluator, keys=["slug"],
                 rows=[{"slug": s, "kind": "llm", "description": "", "config": {}} for s in slugs])


def test_every_item_is_written_once_from_many_threads(db_url: str) -> None:
    engine = open_database(db_url)
    writer = BatchWriter(engine, _write)

    def produce(worker: int) -> None:
        for i in range(100):
            writer.put(f"judge-{worker}-{i % 50}")  # each slug twice: upserts, no duplicate

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert writer.written == 400
    with get_engine(db_url).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM evaluator")).scalar_one() == 200


def test_a_failed_batch_is_raised_to_the_producer(sqlite_url: str) -> None:
    engine = open_database(sqlite_url)

    def broken(session: Session, items: list[str]) -> None:
        raise RuntimeError(f"disk full after {len(items)} item(s)")

    writer = BatchWriter(engine, broken)
    writer.put("a")
    with pytest.raises(RuntimeError, match="disk full"):
        writer.close()
    with pytest.raises(RuntimeError, match="disk full"):
        writer.put("b")
