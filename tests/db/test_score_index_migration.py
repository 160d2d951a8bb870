"""Revision 0007 drops score's index on response_id from a 0006 database holding scores: the
rows stay, the schema matches the models, every query that filtered or joined score by
response_id still reads it through an index (the unique key's), and it downgrades cleanly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import event, inspect
from sqlmodel import Session, SQLModel

import db.models  # noqa: F401  (registers the tables)
from db import benchmark as bq
from db import responses as pq
from db import runs as rq
from db import studies
from db.engine import get_engine
from db.migrate import upgrade
from tests import small_db
from tests.dbstate import migrate, snapshot


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def score_indexes(url: str) -> dict[str, list[str]]:
    """Name -> columns of every index of ``score`` (unique keys' included)."""
    with get_engine(url).connect() as conn:
        found = inspect(conn)
        out = {i["name"]: list(i["column_names"]) for i in found.get_indexes("score")}
        out.update({u["name"]: list(u["column_names"])
                    for u in found.get_unique_constraints("score")})
    return out


def statements_of(url: str, call: Callable[[Session], Any]) -> list[tuple[str, Any]]:
    """The (SQL, parameters) that ``call`` runs, those that read ``score``."""
    engine = get_engine(url)
    seen: list[tuple[str, Any]] = []

    def keep(_conn: object, _cursor: object, sql: str, params: Any, *_: object) -> None:
        if " score" in sql:
            seen.append((sql, params))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        with Session(engine) as session:
            call(session)
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    return seen


def plan(url: str, sql: str, params: Any, *, drop: str | None = None) -> str:
    """The plan of one statement. On PostgreSQL sequential scans are priced out (a plan that
    still scans ``score`` whole means no index could serve it) and the index ``drop`` is
    dropped for the plan and restored (a rolled-back transaction), to see the next best."""
    with get_engine(url).connect() as conn:
        if conn.dialect.name == "postgresql":
            conn.exec_driver_sql("SET LOCAL enable_seqscan = off")
            if drop:
                conn.exec_driver_sql(f"DROP INDEX {drop}")
            rows = conn.exec_driver_sql(f"EXPLAIN {sql}", params).all()
            return "\n".join(r[0] for r in rows)
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params).all()
        return "\n".join(r[-1] for r in rows)


#: The reads that filter or join score by response_id (alone, or with the evaluator): the
#: meeting page's scores, the metric evaluators' to-do list, a sampled study's judge values,
#: the study admin's scores of some responses.
QUERIES: dict[str, Callable[[Session], Any]] = {
    "meeting page": lambda s: bq.meeting_browser(s, "meeting_en_dev_901"),
    "responses without score": lambda s: pq.responses_without_score(
        s, 1, rq.ScoreFilter()),
    "judge values": lambda s: studies.judge_values(session=s, slug="gpt-4",
                                                   response_ids=[1, 2, 3]),
    "study scores of responses": lambda s: studies.study_score_rows(
        session=s, evaluator_id=3, response_ids=[1, 2, 3]),
}


def test_upgrade_from_0006_keeps_the_scores_and_an_index_for_every_query(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    migrate(db_url, command.upgrade, "0006")
    monkeypatch.setattr(small_db, "open_database", get_engine)  # fill it as 0006 left it
    small_db.build(db_url)
    assert score_indexes(db_url)["ix_score_response_id"] == ["response_id"]
    stored = snapshot(db_url)
    assert len(stored["score"]) > 100

    statements = {name: statements_of(db_url, call) for name, call in QUERIES.items()}
    assert all(statements.values())
    if get_engine(db_url).dialect.name == "postgresql":
        # the meeting page read score through that index (the others, the evaluator's index
        # out of the way, took the unique key already: it matches more of their conditions)
        assert any("ix_score_response_id" in plan(db_url, sql, params)
                   for sql, params in statements["meeting page"])

    upgrade(get_engine(db_url))  # what opening an existing database runs
    indexes = score_indexes(db_url)
    assert "ix_score_response_id" not in indexes
    assert indexes["uq_score_key"][:2] == ["response_id", "evaluator_id"]
    after = snapshot(db_url)
    # 0010 appends evaluator.source (the backfilled source: the release's, for these three)
    assert {row[-1] for row in after["evaluator"]} == {"'release'"}
    after["evaluator"] = [row[:-1] for row in after["evaluator"]]
    # every row of 0006's tables kept; tables of later migrations (0008: studyseat, ...) empty
    assert {t: after[t] for t in stored if t != "alembic_version"} == {
        t: rows for t, rows in stored.items() if t != "alembic_version"}
    assert all(not rows for t, rows in after.items() if t not in stored)
    with get_engine(db_url).connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []

    for name, found in statements.items():  # the unique key now serves those reads
        for sql, params in found:
            if get_engine(db_url).dialect.name == "postgresql":
                for drop in (None, "ix_score_evaluator_id"):
                    shown = plan(db_url, sql, params, drop=drop)
                    assert "Seq Scan on score" not in shown, (name, shown)
                assert "uq_score_key" in shown, (name, shown)
            else:
                assert "SCAN score" not in plan(db_url, sql, params), name

    migrate(db_url, command.downgrade, "0006")
    assert score_indexes(db_url)["ix_score_response_id"] == ["response_id"]
    assert snapshot(db_url)["score"] == stored["score"]
    migrate(db_url, command.upgrade, "head")
    assert "ix_score_response_id" not in score_indexes(db_url)
