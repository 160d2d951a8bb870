"""Tables that were cut at 1366x768 (issue 28 item 5): the Runs page's generation runs, the
Leaderboard's main table, the Judge audit's budget planner, the Studies page's progress and
quality tables. Measured in the
DOM of Chromium: no grid scrolls a column out of view (the others sit behind each table's
Columns picker)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import running_server, screenshot
from tests.browser.test_intervals_1366_browser import (
    HEIGHT,
    WIDTH,
    cut_off,
    open_view,
    read_grids,
    show_grids,
)
from tests.browser.test_studies_browser import study_db  # noqa: F401 (a fixture)

#: (page, tab, choices, texts the view shows when drawn)
VIEWS = (
    ("runs", None, (), ("Generation runs",)),
    ("leaderboard", None, (), ("Rank by",)),  # the main table's 11th column was cut
    ("judge_audit", "Budget planner", (), ("Human scores each model needs",)),
    ("studies", None, (("Study", "silver-test2"),), ("Quality control",)),
)


@pytest.fixture
def study_server(study_db: str, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    with running_server(study_db, tmp_path / "streamlit.log") as url:
        yield url


def grids(browser: object) -> list[dict[str, object]]:
    """Every visible grid with the columns it holds, scrolled left and right."""
    show_grids(browser, 0.3)
    return [grid for grid in read_grids(browser) if grid["drawn"]]


def test_the_tables_that_were_cut_fit_1366x768(study_server: str, browser: object,
                                               wait_for_text: Callable[..., None]) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    problems, seen = [], []
    for view in VIEWS:
        page, tab = view[:2]
        open_view(browser, study_server, view, wait_for_text)
        found = grids(browser)
        assert found, f"{page}: no table drawn"
        for number, grid in enumerate(found):
            seen.append(f"{page}/{tab or ''} {number}: {grid['columns']}")
            problems += [f"{page}/{tab or ''} table {number} {grid['columns']}: {p}"
                         for p in cut_off(grid)]
        screenshot(browser, f"tables-1366-{page}", settle=0.5)
    assert not problems, "\n".join(problems + ["", "tables measured:", *seen])
