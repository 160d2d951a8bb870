"""Every table with an interval (``ci_low``/``ci_high``, ``human_ci_low``...) fits a 1366x768
window in Chromium: measured in the DOM, each such grid scrolls no column out of view and every
column header is in the grid's accessible table (which lists the columns in view only).

The data is the "busy" database of ``bench/bench_pages.py --data busy`` (n-gram metrics, two more
judges, a pairwise battle judge) plus what makes every interval table appear: a CREAM judge
(CREAM means with intervals), a silver study with five participants (its ICC tables), a sampled
study (the judge audit's ``ppi-active``) and a judge with two samples (self-consistency).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import ROOT, running_server, screenshot, wait_idle
from tests.browser.test_analysis_browser import click_tab
from tests.browser.test_studies_browser import study_db  # noqa: F401 (a fixture)

WIDTH, HEIGHT = 1366, 768
INTERVAL = re.compile(r"((^|_)ci(_low|_high)?|95% CI( low| high)?)$")  # export name or its label
#: bench/bench_pages.py's busy data (each command with ``--db URL``), then a CREAM judge and a
#: judge with two samples per response
COMMANDS = (
    ["metrics", "--split", "test2"],
    *(["judge", "--backend", "fake", "--style", "gpt4", "--judge-model", name, "--evaluator",
       name, "--split", "test2"] for name in ("fake-a", "fake-b")),
    *(["judge", "--backend", "fake", "--style", style, "--judge-model", f"fake-{style}",
       "--evaluator", style, "--split", "test2", "--setting", "qa", "--mode", "st",
       "--model", "GPT-4", "--model", "Vicuna-13B-v1.5", "--model", "LongAlpaca-7B"]
      for style in ("battle", "cream")),
    ["judge", "--backend", "fake", "--style", "gpt4", "--judge-model", "fake-k",
     "--evaluator", "fake-k", "--samples", "2", "--split", "test2", "--setting", "qa",
     "--mode", "st"],
)
PAPER_MODELS = ("GPT-4", "Vicuna-13B-v1.5")
SAMPLED = "gold-human:half"

#: (page path, tab or None, choices: (widget label, value), texts the view shows when drawn)
View = tuple[str, str | None, tuple[tuple[str, str], ...], tuple[str, ...]]
VIEWS: tuple[View, ...] = (
    ("agreement", "Correlation between evaluators", (), ("95% percentile",)),
    ("agreement", "Intraclass correlation", (), ("Koo & Li",)),
    ("agreement", "Two evaluators", (), ("Bias of",)),
    ("calibration", None, (), ("same bytes as",)),
    ("judge_audit", "PPI leaderboard", (("Human (scores a subset)", SAMPLED),),
     ("The ranking each estimate implies", "Sampled study")),
    ("judge_audit", "Judge effects", (("Human (scores a subset)", "gold-human"),),
     ("Residual judge",)),
    ("judge_audit", "Self-consistency", (("Judge (scores every response)", "fake-k"),),
     ("Krippendorff",)),
    ("judge_audit", "Conversation", (("Judge (scores every response)", "gpt-4"),),
     ("Single-turn versus multi-turn",)),
    ("battles", None, (("Pairwise judge", "cream"),), ("Agreement with the human ranking",)),
    ("leaderboard", "Two models", (("Models", PAPER_MODELS[0]), ("Models", PAPER_MODELS[1])),
     ("Mean of model_b",)),
    ("studies", None, (("Study", "silver-test2"),), ("Krippendorff's alpha",)),
)

#: per visible grid (not in a closed expander or an inactive tab): its column headers in view
#: (the accessible table), how far it scrolls
GRIDS = """
return [...document.querySelectorAll("[data-testid='stDataFrame']")].map((g, index) => {
    const scroller = g.querySelector(".dvn-scroller"), box = g.getBoundingClientRect();
    return {index, shown: g.offsetParent !== null && !g.closest("details:not([open])"),
            titles: [...g.querySelectorAll("table[role='grid'] th")].map(t => t.textContent),
            drawn: !!g.querySelector("table[role='grid']"),
            overflow: scroller ? scroller.scrollWidth - scroller.clientWidth : 0,
            right: box.right, viewport: window.innerWidth};
  }).filter(g => g.shown);
"""
SCROLL_RIGHT = """
document.querySelectorAll("[data-testid='stDataFrame'] .dvn-scroller")
  .forEach(s => { s.scrollLeft = arguments[0] ? s.scrollWidth : 0; });
"""


@pytest.fixture
def busy_server(study_db: str, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    from tests.elitr_core.annotation.test_selection import sampled_study

    for command in COMMANDS:
        subprocess.run([sys.executable, "-m", "elitr_core", *command, "--db", study_db],
                       cwd=ROOT, check=True, capture_output=True)
    sampled_study(study_db, "half", 90, 8, every=2)
    with running_server(study_db, tmp_path / "streamlit.log") as url:
        yield url


def choose(browser: object, label: str, value: str) -> None:
    """Pick ``value`` in the selectbox or multiselect labelled ``label`` (typed, then Enter)."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = (f"//*[@data-testid='stSelectbox' or @data-testid='stMultiSelect']"
             f"[.//label[normalize-space(.)='{label}']]//input")
    box = WebDriverWait(browser, 60).until(
        lambda d: d.find_elements("xpath", xpath))[0]  # type: ignore[attr-defined]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)  # type: ignore[attr-defined]
    box.click()
    box.send_keys(value)
    box.send_keys(Keys.ENTER)
    time.sleep(0.5)
    wait_idle(browser)


def open_view(browser: object, url: str, view: View,
              wait_for_text: Callable[..., None]) -> None:
    """Open ``view`` (page, tab or None, choices, texts) on the app at ``url`` and wait until
    it has drawn its texts and gone idle."""
    page, tab, choices, texts = view
    browser.get(f"{url}/{page}")  # type: ignore[attr-defined]
    wait_idle(browser)
    for label, value in choices:
        choose(browser, label, value)
    if tab is not None:
        click_tab(browser, tab)
    wait_for_text(browser, *texts, timeout=120)
    wait_idle(browser)


def show_grids(browser: object, pause: float) -> None:
    """Bring every visible grid on screen once (a grid draws its accessible table only when
    it has been on screen), ``pause`` seconds each."""
    for grid in browser.find_elements("css selector", "[data-testid='stDataFrame']"):  # type: ignore[attr-defined]
        if grid.is_displayed():
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", grid)  # type: ignore[attr-defined]
            time.sleep(pause)


def read_grids(browser: object) -> list[dict[str, object]]:
    """:data:`GRIDS` read with every grid scrolled to its left end, then to its right end;
    each grid as at the left with ``columns``: every column it holds, in order."""
    time.sleep(0.5)
    left = browser.execute_script(GRIDS)  # type: ignore[attr-defined]
    browser.execute_script(SCROLL_RIGHT, True)  # type: ignore[attr-defined]
    time.sleep(0.5)
    right = browser.execute_script(GRIDS)  # type: ignore[attr-defined]
    browser.execute_script(SCROLL_RIGHT, False)  # type: ignore[attr-defined]
    return [{**start, "columns": list(dict.fromkeys([*start["titles"], *end["titles"]]))}
            for start, end in zip(left, right, strict=True)]


def interval_grids(browser: object) -> list[dict[str, object]]:
    """The visible grids with an interval column, each with every column it holds (read with
    the grid scrolled to its left end and to its right end) and those in view unscrolled."""
    from selenium.webdriver.support.ui import WebDriverWait

    show_grids(browser, 0.2)
    WebDriverWait(browser, 30).until(lambda d: all(
        g["drawn"] for g in d.execute_script(GRIDS)))  # type: ignore[attr-defined]
    return [grid for grid in read_grids(browser)
            if any(INTERVAL.search(c) for c in grid["columns"])]  # type: ignore[attr-defined]


def cut_off(grid: dict[str, object]) -> list[str]:
    """What of an interval grid a 1366 px window does not show, in words (none: it fits)."""
    problems = []
    hidden = [c for c in grid["columns"] if c not in grid["titles"]]  # type: ignore[attr-defined]
    if hidden:
        problems.append(f"columns out of view: {hidden}")
    if grid["overflow"] > 1:  # type: ignore[operator]
        problems.append(f"{grid['overflow']} px of columns scrolled out")
    if grid["right"] > grid["viewport"]:  # type: ignore[operator]
        problems.append(f"right edge at {grid['right']} px")
    return problems


def test_every_interval_table_fits_1366x768(busy_server: str, browser: object,
                                            wait_for_text: Callable[..., None]) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    problems, seen = [], []
    for view in VIEWS:
        page, tab = view[:2]
        open_view(browser, busy_server, view, wait_for_text)
        grids = interval_grids(browser)
        where = f"{page}/{tab or ''}"
        assert grids, f"{where}: no table with an interval"
        for number, grid in enumerate(grids):
            seen.append(f"{where}: {grid['columns']}")
            problems += [f"{where} table {number} {grid['columns']}: {p}" for p in cut_off(grid)]
            browser.execute_script(  # type: ignore[attr-defined]
                "document.querySelectorAll(\"[data-testid='stDataFrame']\")[arguments[0]]"
                ".scrollIntoView({block: 'center'});", grid["index"])
            screenshot(browser, f"intervals-1366-{page}-{(tab or 'page').split()[0].lower()}"
                       f"-{number}", settle=0.5)
    assert not problems, "\n".join(problems + ["", "tables measured:", *seen])
