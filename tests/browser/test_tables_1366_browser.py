"""Tables that were cut at 1366x768 (issue 28 item 5): the Runs page's generation runs, the
Leaderboard's main table, the Judge audit's budget planner, the Studies page's progress and
quality tables. Measured in the
DOM of Chromium: no grid scrolls a column out of view (the others sit behind each table's
Columns picker)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import running_server, screenshot, wait_idle
from tests.browser.test_analysis_browser import click_tab
from tests.browser.test_intervals_1366_browser import (
    GRIDS,
    HEIGHT,
    SCROLL_RIGHT,
    WIDTH,
    choose,
    cut_off,
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
    import time

    for grid in browser.find_elements("css selector", "[data-testid='stDataFrame']"):  # type: ignore[attr-defined]
        if grid.is_displayed():
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", grid)  # type: ignore[attr-defined]
            time.sleep(0.3)
    time.sleep(0.5)
    left = browser.execute_script(GRIDS)  # type: ignore[attr-defined]
    browser.execute_script(SCROLL_RIGHT, True)  # type: ignore[attr-defined]
    time.sleep(0.5)
    right = browser.execute_script(GRIDS)  # type: ignore[attr-defined]
    browser.execute_script(SCROLL_RIGHT, False)  # type: ignore[attr-defined]
    return [{**start, "columns": list(dict.fromkeys([*start["titles"], *end["titles"]]))}
            for start, end in zip(left, right, strict=True) if start["drawn"]]


def test_the_tables_that_were_cut_fit_1366x768(study_server: str, browser: object,
                                               wait_for_text: Callable[..., None]) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    problems, seen = [], []
    for page, tab, choices, texts in VIEWS:
        browser.get(f"{study_server}/{page}")  # type: ignore[attr-defined]
        wait_idle(browser)
        for label, value in choices:
            choose(browser, label, value)
        if tab is not None:
            click_tab(browser, tab)
        wait_for_text(browser, *texts, timeout=120)
        wait_idle(browser)
        found = grids(browser)
        assert found, f"{page}: no table drawn"
        for number, grid in enumerate(found):
            seen.append(f"{page}/{tab or ''} {number}: {grid['columns']}")
            problems += [f"{page}/{tab or ''} table {number} {grid['columns']}: {p}"
                         for p in cut_off(grid)]
        screenshot(browser, f"tables-1366-{page}", settle=0.5)
    assert not problems, "\n".join(problems + ["", "tables measured:", *seen])
