"""A first visit while the start-up warm-up runs says so and names the pages not ready yet
(issue 28 item 2: the Leaderboard opened then took 17.9 s to settle at load 8.5, silently)."""

from __future__ import annotations

import pytest

from tests.pages.analysis_support import open_page
from ui import warm


def test_an_analysis_page_says_the_server_is_warming_up(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(warm.PROGRESS, "running", True)
    monkeypatch.setattr(warm.PROGRESS, "pending", ["pages/agreement.py", "pages/judge_audit.py"])
    at = open_page(bundled_sqlite, monkeypatch, "leaderboard")
    (note,) = [i.value for i in at.info if "Warming up" in i.value]
    assert "Agreement, Judge audit" in note
    monkeypatch.setattr(warm.PROGRESS, "running", False)
    assert not [i for i in at.run().info if "Warming up" in i.value]  # once warm: no note


def test_the_warm_up_names_what_is_left_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def views(name: str):  # type: ignore[no-untyped-def]
        yield "first", lambda: seen.append(warm.warming_line())
        yield "second", lambda: seen.append(warm.warming_line())

    monkeypatch.setattr(warm, "defaults", lambda: None)
    monkeypatch.setattr(warm, "declared_views", lambda d: [
        ("pages/leaderboard.py", views("a")), ("pages/agreement.py", views("b"))])
    assert warm.warm() == 4
    assert "Leaderboard, Agreement" in seen[0]  # the first page's first view: both left
    assert "Leaderboard" not in seen[1] and "Agreement" in seen[1]
    assert seen[2:] == ["", ""]  # every first view computed: nothing left to name
    assert warm.warming_line() == "" and not warm.PROGRESS.running
