"""Revision 0008 (leases, join limits, seats) on a database holding a study at work: after a
downgrade to 0007 and an upgrade, every live participation holds a seat of its unit, excluded
ones none, each unit has ``per_item`` seats, nothing else changed, and the tables match the
models."""

from __future__ import annotations

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import select, text
from sqlmodel import SQLModel

from db.engine import get_engine
from db.models import Participation, Score, StudySeat
from db.transaction import reading, writing
from elitr_core.annotation.quality import exclude_annotator
from elitr_core.annotation.studies import StudySpec, create_study, join_prolific, submit
from elitr_core.data.database import open_database
from tests.dbstate import migrate
from tests.elitr_core.annotation_data import build


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def _state(url: str) -> tuple[list[tuple[str, int, int | None]], list[tuple[object, ...]]]:
    with reading(open_database(url)) as session:
        seats = [(s.unit, s.seat, s.participation_id) for s in session.execute(
            select(StudySeat).order_by(StudySeat.unit, StudySeat.seat)).scalars()]
        kept = [tuple(r) for r in session.execute(
            select(Participation.id, Participation.status, Score.value)
            .join(Score, Score.annotator_id == Participation.annotator_id)
            .order_by(Score.id)).all()]
    return seats, kept


def test_seats_are_filled_from_the_participations(db_url: str) -> None:
    build(db_url, questions=2)
    engine = open_database(db_url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=2))
    entries = [join_prolific(engine, "s", f"{i:024x}", "b" * 24, f"{i + 9:024x}")
               for i in range(3)]
    submit(engine, entries[0], 0, 7)
    with writing(engine) as session:
        exclude_annotator(session, "s", f"prolific-{0:024x}")
    before = _state(db_url)
    migrate(db_url, command.downgrade, "0007")
    with get_engine(db_url).connect() as conn:
        assert "studyseat" not in {r[0] for r in conn.execute(text(
            "SELECT name FROM sqlite_master" if db_url.startswith("sqlite") else
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))}
    migrate(db_url, command.upgrade, "head")
    seats, kept = _state(db_url)
    assert kept == before[1]
    live = {e.annotator_id for e in entries[1:]}
    with reading(open_database(db_url)) as session:
        holders = {p.id: p for p in session.execute(select(Participation)).scalars()}
    held = [holders[p] for _, _, p in seats if p is not None]
    assert sorted(p.annotator_id for p in held) == sorted(live)
    assert all(p.unit == unit for (unit, _, pid), p in zip(
        [s for s in seats if s[2] is not None], held, strict=True))
    assert len(seats) == 4 and len({u for u, _, _ in seats}) == 2
    with get_engine(db_url).connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), SQLModel.metadata) == []
