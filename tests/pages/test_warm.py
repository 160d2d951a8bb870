"""ui.warm: after the warm-up, a first visit of each analysis page computes nothing."""

from __future__ import annotations

import functools
import inspect
import logging
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from elitr_core.data import browse, scores
from elitr_core.export import (
    audit_figures,
    figures,
    pairwise,
    pairwise_figures,
    tables,
    views,
)
from elitr_core.stats import agreement, recalibration
from tests.pages.analysis_support import analysis_app, open_tab
from tests.pages.test_battles import judge_all
from ui import warm
from ui.navigation import RESEARCHER_PAGES

ROOT = Path(__file__).resolve().parents[2]
#: every page of the Analysis section must declare its default views
ANALYSIS_PAGES = [file for file, _, _ in RESEARCHER_PAGES["Analysis"]]
SECTION_KEYS = {"pages/judge_audit.py": "audit.section"}  # the others: <page>.section
#: what a page computes on a cache miss: each fails when called after the warm-up
COMPUTING = [(tables, "build_table"), (scores, "scores_table"), (views, "pair_scores"),
             (pairwise, "build_pairwise_table"), (pairwise, "judgment_choices"),
             (browse, "response_rows"), (recalibration, "recalibrated_scores"),
             *((agreement, name) for name in ("agreement_table", "agreement_metrics",
                                              "judge_bias", "ranking_table")),
             *((module, name) for module in (figures, audit_figures, pairwise_figures)
               for name, func in vars(module).items()
               if inspect.isfunction(func) and func.__module__ == module.__name__
               and not name.startswith("_") and name not in ("find_chromium", "figure_bytes"))]


def _refusing(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` under its own name (so the cache keys stay the same) that fails when called."""
    @functools.wraps(func)
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{func.__qualname__} computed after the warm-up")
    return refuse


def test_every_analysis_page_has_default_views() -> None:
    assert list(warm.page_views()) == ANALYSIS_PAGES  # menu order, every page, no other
    for file in ANALYSIS_PAGES:  # the page draws with the functions the warm-up computes
        module = warm.page_views()[file].__module__
        assert f"from {module} import" in (ROOT / file).read_text(), (file, module)


def test_the_server_starts_the_warm_up_without_the_statistics() -> None:
    """server.py imports ui.warm at start; the pages' views are imported in its thread."""
    code = "import sys, ui.warm; print(any(m.startswith('ui.analysis') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_declared_tab_of_every_page_comes_from_the_warm_caches(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    judge_all(bundled_sqlite)  # pairwise judgments for the Battles page
    with caplog.at_level(logging.INFO, logger=warm.__name__):
        warm.warm()
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    # the bundled judge has one sample per response: nothing else may fail
    assert len(skipped) == 1 and "Self-consistency" in skipped[0], skipped
    declared = {file: [tab for tab, _ in views] for file, views in
                warm.declared_views(warm.defaults())}

    for module, name in COMPUTING:
        monkeypatch.setattr(module, name, _refusing(getattr(module, name)))
    for file in ANALYSIS_PAGES:
        at = analysis_app(bundled_sqlite, monkeypatch)
        at.run()
        at.switch_page(file).run()
        assert not at.exception, (file, at.exception)
        tabs = [tab.label for tab in at.tabs]
        # every tab of the page is declared (a page without tabs declares its title)
        assert declared[file] == (tabs or declared[file][:1]), (file, declared[file], tabs)
        key = SECTION_KEYS.get(file, f"{Path(file).stem}.section")
        for tab in tabs[1:]:
            if f"{file} / {tab} skipped" in skipped[0]:
                continue  # an error is not cached: the page computes it again to say why
            open_tab(at, key, tab)
            assert not at.exception, (file, tab, at.exception)
        assert declared[file], file


def test_no_database_stops_the_warm_up_quietly(monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://postgres@127.0.0.1:1/nowhere")  # refused
    with caplog.at_level(logging.INFO, logger=warm.__name__):
        assert warm.warm() == 0
    assert any("warm-up stopped" in r.getMessage() for r in caplog.records)


def test_start_runs_once_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(warm, "_STARTED", type(warm._STARTED)())
    monkeypatch.setattr(warm, "warm", lambda: started.append("warm"))
    monkeypatch.setattr(warm, "keep_warm", lambda: warm.warm())
    thread = warm.start()
    assert thread is not None and thread.daemon
    assert warm.start() is None
    thread.join(30)
    assert started == ["warm"]


def test_keep_warm_warms_again_after_each_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    at: list[float] = []
    monkeypatch.setattr(warm, "warm", lambda: at.append(time.monotonic()))
    warm.keep_warm(every=0.2, rounds=3)
    assert len(at) == 3
    assert all(later - earlier >= 0.2 for earlier, later in zip(at, at[1:], strict=False))


def test_elitr_warm_0_turns_the_warm_up_off(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[str] = []
    monkeypatch.setattr(warm, "_STARTED", type(warm._STARTED)())
    monkeypatch.setattr(warm, "warm", lambda: started.append("warm"))
    monkeypatch.setattr(warm, "keep_warm", lambda: warm.warm())
    monkeypatch.setenv("ELITR_WARM", "0")
    assert warm.start() is None
    monkeypatch.setenv("ELITR_WARM", "1")
    thread = warm.start()
    assert thread is not None
    thread.join(30)
    assert started == ["warm"]


def test_again_warms_once_more_in_the_background_one_at_a_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    release = threading.Event()
    calls: list[str] = []

    def slow_warm() -> int:
        calls.append("warm")
        release.wait(30)
        return 0

    monkeypatch.setattr(warm, "warm", slow_warm)
    first = warm.again()
    assert first is not None and first.daemon
    assert warm.again() is None  # one already going: a Refresh does not stack warm-ups
    release.set()
    first.join(30)
    assert calls == ["warm"]
    monkeypatch.setenv("ELITR_WARM", "0")
    assert warm.again() is None
