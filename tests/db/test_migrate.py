"""Schema management: Alembic upgrades, and the fast "already at head" check beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory

from db.engine import dispose_engines, get_engine
from db.migrate import (
    _revision_constants,
    alembic_config,
    head_revisions,
    is_current,
    stored_revisions,
    upgrade,
)


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """These tests migrate a database from nothing (or an older revision): an empty one."""
    return empty_db_url


def test_heads_read_from_the_files_equal_alembics() -> None:
    assert head_revisions() == frozenset(
        ScriptDirectory.from_config(alembic_config()).get_heads())


def test_revision_constants_of_a_merge_migration(tmp_path: Path) -> None:
    path = tmp_path / "0009_merge.py"
    path.write_text('import sqlalchemy as sa\nrevision: str = "0009"\n'
                    'down_revision = ("0007", "0008")\nbranch_labels = None\n')
    assert _revision_constants(path) == {"revision": "0009", "down_revision": ("0007", "0008")}


def test_upgrade_records_the_head_and_a_second_one_loads_no_alembic(db_url: str) -> None:
    engine = get_engine(db_url)
    assert stored_revisions(engine) is None and not is_current(engine)
    upgrade(engine)
    assert stored_revisions(engine) == head_revisions() and is_current(engine)
    dispose_engines()
    # a fresh interpreter: opening a database already at head must not import alembic
    code = ("import sys; from db.engine import get_engine; from db.migrate import upgrade; "
            f"upgrade(get_engine({db_url!r})); print('alembic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_an_older_database_is_upgraded(db_url: str) -> None:
    from alembic import command

    engine = get_engine(db_url)
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    assert stored_revisions(engine) == frozenset({"0001"}) and not is_current(engine)
    upgrade(engine)
    assert is_current(engine)


def test_no_version_table_reads_as_none(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE other (x INTEGER)")
    assert stored_revisions(engine) is None
