"""Helpers shared by the analysis pages' AppTests: the app, download bytes, CLI exports."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from db.engine import dispose_engines
from elitr_core.cli.main import main
from tests.dbstate import snapshot

APP = str(Path(__file__).resolve().parents[2] / "app.py")


class RecordingStorage(MemoryMediaFileStorage):
    """AppTest's in-memory media storage, kept reachable after the run so that a test can read
    what a download button carries (AppTest drops its storage when a run ends)."""

    instances: list[RecordingStorage] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        RecordingStorage.instances.append(self)


class RecordingManager(MediaFileManager):
    """AppTest's media file manager, kept reachable so a test can "click" a download whose
    bytes are rendered only on request (a deferred download)."""

    instances: list[RecordingManager] = []

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        RecordingManager.instances.append(self)


def analysis_app(db_url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The whole app on ``db_url``, with download contents recorded."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    RecordingStorage.instances.clear()
    RecordingManager.instances.clear()
    monkeypatch.setattr(app_test_module, "MemoryMediaFileStorage", RecordingStorage)
    monkeypatch.setattr(app_test_module, "MediaFileManager", RecordingManager)
    return AppTest.from_file(APP, default_timeout=180)


def open_page(db_url: str, monkeypatch: pytest.MonkeyPatch, page: str) -> AppTest:
    """The app on ``db_url`` (run once, so the session has its role), switched to ``page``."""
    at = analysis_app(db_url, monkeypatch)
    at.run()
    return at.switch_page(f"pages/{page}.py").run()


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Select the tab ``label`` of the tabs with this key (``ui.state.open_tab``) and rerun,
    as a click on the tab does."""
    at.session_state[key] = label
    return at.run()


def download_bytes(at: AppTest, key: str) -> bytes:
    """The bytes behind the download button with this key, from the latest run."""
    button = at.download_button(key=key)
    url = button.proto.url
    if button.proto.deferred_file_id:  # rendered when clicked: click it
        url = RecordingManager.instances[-1].execute_deferred(button.proto.deferred_file_id)
    file_id = url.rsplit("/", 1)[1].split(".")[0]
    return bytes(RecordingStorage.instances[-1].get_file(file_id).content)


def cli_export(db_url: str, table: str, out: Path, *options: str) -> bytes:
    """What ``python -m elitr_core export TABLE --db URL OPTIONS --out FILE`` writes."""
    assert main(["export", table, "--db", db_url, *options, "--out", str(out)]) == 0
    return out.read_bytes()


def set_filters(at: AppTest, *, split: str | None = None, setting: str | None = None,
                mode: str | None = None, evaluators: list[str] | None = None,
                models: list[str] | None = None) -> AppTest:
    """Set the sidebar filters (None leaves one as it is) and rerun."""
    for key, value in (("filters.split", split), ("filters.setting", setting),
                       ("filters.mode", mode)):
        if value is not None:
            at.selectbox(key=f"{key}.widget").set_value(value)
    for key, values in (("filters.evaluators", evaluators), ("filters.models", models)):
        if values is not None:
            at.multiselect(key=f"{key}.widget").set_value(values)
    return at.run()


def messages(at: AppTest) -> dict[str, list[str]]:
    """Every error, warning and info text of the page."""
    return {"error": [e.value for e in at.error], "warning": [w.value for w in at.warning],
            "info": [i.value for i in at.info]}


#: The paper's comparison (test2, QA, single-turn): as the pages' filters and as CLI options.
PAPER = {"split": "test2", "setting": "qa", "mode": "st"}
PAPER_ARGS = ("--split", "test2", "--setting", "qa", "--mode", "st")


def shared_copy(template: Path, folder: Path,
                prepare: Callable[[str], None] = lambda url: None) -> Iterator[str]:
    """A copy of ``template`` (SQLite URL) in ``folder``, after ``prepare(url)``, for the tests
    of a module that only read it: the pages cache their reads by database URL (``ui.data``),
    so each test's page runs find the tables and figures the module's earlier tests computed
    instead of computing them again on a copy of their own; every test still runs its pages
    and checks what they show. A test that writes takes a database of its own; one that wrote
    here anyway errors at the module's end."""
    from elitr_core.data import database

    target = folder / "bundled.db"
    shutil.copy(template, target)
    url = f"sqlite:///{target}"
    prepare(url)
    before = snapshot(url)
    yield url
    assert snapshot(url) == before, "a test wrote to its module's shared database: give it " \
        "its own (bundled_sqlite)"
    dispose_engines()
    database._READY.clear()
