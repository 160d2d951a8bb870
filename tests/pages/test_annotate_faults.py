"""The annotator's page when the database fails (issue 41, item 4): every database read and
write of the page goes through the submit's fault handling. A PostgreSQL server that goes
away (``tests.pg_instance``, stopped and started as a restart does) gives one sentence and
keeps the item on screen with its Submit button, and the same Submit goes through once it is
back; entering a link on a full disk (a tmpfs the test mounts and fills, as
tests/elitr_core/cli/test_full_disk.py does; mounting needs root, as CI runs) is one sentence,
never an ``OperationalError`` with SQL text."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db.engine import dispose_engines
from db.models import Participation, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.annotation.submit_faults import ENTER_FULL, GONE, READ_GONE
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import build
from tests.elitr_core.cli.test_full_disk import _disk
from tests.pages.test_annotate import _app, _page_text, _pick, item_button
from tests.pg_instance import PgInstance, pg_instance


def _study(url: str) -> str:
    """A 3-item study and a token whose annotator has not entered yet."""
    build(url, questions=1, meetings=("meeting_en_test2_901",))
    with writing(open_database(url)) as session:
        create_study(session, StudySpec(name="s", per_item=2))
        return add_annotator(session, "ann", "silver")


def _count(url: str, what: object, *where: object) -> int:
    with reading(open_database(url)) as session:
        return int(session.execute(select(func.count()).select_from(what).where(*where))
                   .scalar_one())


def _clean(app: AppTest) -> None:
    """No exception box, no SQL or driver name in anything shown."""
    assert not app.exception, [e.value for e in app.exception]
    shown = _page_text(app)
    for word in ("OperationalError", "INSERT", "SELECT", "psycopg", "sqlite3", "Traceback"):
        assert word not in shown, shown


def test_entering_a_link_on_a_full_sqlite_disk_is_one_sentence(
        sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = _study(sqlite_url)
    dispose_engines()
    disk = _disk(sqlite_url, tmp_path, left_kb=300)  # a tmpfs with 300 KB left
    path = next(disk)
    url = f"sqlite:///{path}"
    monkeypatch.setenv("DATABASE_URL", url)
    open_database(url)  # the server opened it while there was room
    try:
        with (path.parent / "fill-rest").open("wb", buffering=0) as fill:
            while True:  # then the disk fills up
                fill.write(b"\0" * 1024)
    except OSError:
        pass
    try:
        app = _app(token=token)
        assert [e.value for e in app.error] == [ENTER_FULL]
        _clean(app)
        (path.parent / "fill").unlink()  # room again: the same link opens the task
        assert _count(url, Participation) == 0  # nothing half-claimed
        app = _app(token=token)
        _clean(app)
        assert "Item 1 of 3" in _page_text(app)
    finally:
        dispose_engines()
        disk.close()


@contextmanager
def _started_again(pg: PgInstance) -> Iterator[None]:
    """Start the server again if the test stopped while it was stopped (for the clean-up)."""
    try:
        yield
    finally:
        with suppress(subprocess.CalledProcessError):
            pg.start()


def test_the_page_keeps_the_item_and_submit_while_postgresql_is_away(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with pg_instance() as pg, _started_again(pg):
        token = _study(pg.url)
        monkeypatch.setenv("DATABASE_URL", pg.url)
        app = _app(token=token)
        app = _pick(app, 7)
        assert "Item 1 of 3" in _page_text(app)
        pg.stop()  # the database goes away (a restart in progress)
        app = item_button(app, "annotate-submit").click().run()
        errors = [e.value for e in app.error]
        assert errors == [GONE], errors  # one sentence
        _clean(app)
        assert "Item 1 of 3" in _page_text(app)  # the item stays, with its Submit
        assert not item_button(app, "annotate-submit").disabled
        app = app.run()  # a rerun while it is still away: the same, one sentence
        assert [e.value for e in app.error] == [READ_GONE]
        assert "Item 1 of 3" in _page_text(app)
        pg.start()
        app = item_button(app, "annotate-submit").click().run()
        _clean(app)
        assert not app.error and "Item 2 of 3" in _page_text(app)
        # the annotator's answer stored once (the other scores are the data's gold ones)
        assert _count(pg.url, Score, Score.annotator_key != 0) == 1
