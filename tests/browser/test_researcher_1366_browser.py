"""The researcher's side at 1366x768 in Chromium (issue 43, item 3): every page opens on its
data under the top bar, which names the product and the page and underlines the open section;
each browser tab has the page's title; then the researcher's tasks of the guides: find the
judge that agrees best with the humans and download its table and figure, export the
Leaderboard's main table as LaTeX, and exclude a careless annotator of a study (after its
confirmation).

With ``ELITR_DOCS_SCREENSHOTS=1`` in the environment the pages' screenshots are written to
``docs/screenshots/`` (the guides show them): ``make screenshots``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from tests.browser.conftest import (
    ROOT,
    follow_nav_link,
    running_server,
    screenshot,
    wait_idle,
)
from tests.browser.test_studies_browser import STUDY, _pid, study_db  # noqa: F401 (a fixture)
from tests.pages.test_battles import judge_all
from ui.layout import tab_title

WIDTH, HEIGHT = 1366, 768
#: at least this much of the first table or chart shows in the window, under the top bar
MIN_SHOWN = 120
DOCS = ROOT / "docs" / "screenshots"

#: (navigation title, a text the page shows once computed, section, its docs screenshot)
PAGES = (
    ("Home", "Runs per model and setting", "Data", "home"),
    ("Leaderboard", "Main table (gpt-4)", "Analysis", "leaderboard"),
    ("Agreement", "Correlation between evaluators", "Analysis", "agreement"),
    ("Calibration", "Score-bin calibration", "Analysis", "calibration"),
    ("Model drilldown", "Lost in the middle", "Analysis", "drilldown"),
    ("Judge audit", "PPI leaderboard", "Analysis", "judge_audit"),
    ("Battles", "Win matrix", "Analysis", "battles"),
    ("Runs", "Generation runs", "Work", "runs"),
    ("Studies", "Progress per annotator", "Work", "studies"),
)

#: where the page's first table or chart starts, the window's height, the top bar's, the
#: tab's title, whether the logo is shown, and the open section's menu (the one underlined)
MEASURE = """
const data = [...document.querySelectorAll(
    "[data-testid=stDataFrame], .js-plotly-plot, [data-testid=stTable]")]
  .filter(e => e.getBoundingClientRect().height > 0);
const header = document.querySelector("header[data-testid=stHeader]");
const logo = [...document.querySelectorAll("[data-testid=stLogo]")]
  .filter(e => e.getBoundingClientRect().height > 0);
const open = [...document.querySelectorAll("[data-testid=stTopNavSection]")]
  .filter(e => getComputedStyle(e).boxShadow !== "none").map(e => e.textContent.trim());
return {top: data.length ? Math.round(data[0].getBoundingClientRect().top) : null,
        height: window.innerHeight, bar: header ? header.getBoundingClientRect().bottom : 0,
        title: document.title, logo: logo.length, open};
"""


@pytest.fixture
def walk_server(study_db: str, tmp_path: Path) -> Iterator[str]:  # noqa: F811
    """The bundled data with a silver study (a careless participant among five) and two
    pairwise judges (a battle and a CREAM judge, fake), so that every page has data."""
    judge_all(study_db)
    with running_server(study_db, tmp_path / "streamlit.log") as url:
        yield url


def _first_data(browser: object, timeout: float = 60) -> dict[str, object]:
    """:data:`MEASURE` once the page's first table or chart is drawn."""
    deadline = time.monotonic() + timeout
    while True:
        seen = browser.execute_script(MEASURE)  # type: ignore[attr-defined]
        if seen["top"] is not None or time.monotonic() > deadline:
            return seen  # type: ignore[no-any-return]
        time.sleep(0.5)


def _open(browser: object, title: str, text: str, wait_for_text: Callable[..., None],
          folder: Path) -> Path:
    """Downloads into ``folder``; the page ``title`` through the top bar, drawn."""
    folder.mkdir()
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(folder)})
    follow_nav_link(browser, title)
    wait_for_text(browser, text, timeout=180)
    wait_idle(browser)
    return folder


def _click(browser: object, xpath: str, timeout: float = 60, index: int = 0) -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    element = WebDriverWait(browser, timeout).until(lambda d: [
        e for e in d.find_elements("xpath", xpath)  # type: ignore[attr-defined]
        if e.is_displayed()])[index]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)  # type: ignore[attr-defined]
    element.click()


def _downloaded(folder: Path, name: str, timeout: float = 90) -> bytes:
    target = folder / name
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not target.exists():
        time.sleep(0.3)
    assert target.exists(), f"no {name}: {sorted(p.name for p in folder.iterdir())}"
    return target.read_bytes()


def _cli(db: str, out: Path, *args: str) -> bytes:
    assert main(["export", *args, "--db", db, "--out", str(out)]) == 0
    return out.read_bytes()


def test_every_page_opens_on_its_data_and_the_tasks_run_at_1366x768(
        walk_server: str, study_db: str, browser: object,  # noqa: F811
        wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    browser.get(walk_server)  # type: ignore[attr-defined]
    wait_for_text(browser, "Runs per model and setting", timeout=180)
    problems, seen = [], []
    for title, text, section, name in PAGES:
        if title != "Home":
            follow_nav_link(browser, title)
        wait_for_text(browser, text, timeout=180)
        wait_idle(browser)
        page = _first_data(browser)
        seen.append(f"{title}: {page}")
        top, height = page["top"], page["height"]
        if top is None or top + MIN_SHOWN > height:  # type: ignore[operator]
            problems.append(f"{title}: the first table or chart starts at y = {top} of "
                            f"{height}")
        if page["title"] != tab_title(title):
            problems.append(f"{title}: the tab's title is {page['title']!r}")
        if not page["logo"]:
            problems.append(f"{title}: no product name in the top bar")
        if page["open"] != [section]:
            problems.append(f"{title}: the top bar underlines {page['open']}, not {section}")
        path = screenshot(browser, f"researcher-1366-{name}", settle=1.5)
        if os.environ.get("ELITR_DOCS_SCREENSHOTS") == "1":
            DOCS.mkdir(exist_ok=True)
            (DOCS / f"{name}.png").write_bytes(path.read_bytes())
    assert not problems, "\n".join([*problems, "", "measured:", *seen])

    _find_the_judge_that_agrees_best(browser, study_db, wait_for_text, tmp_path)
    _export_the_main_table_as_latex(browser, study_db, wait_for_text, tmp_path)
    _exclude_a_careless_annotator(browser, wait_for_text)


def _find_the_judge_that_agrees_best(browser: object, db: str,
                                     wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    """Agreement, correlation tab (docs/analysis.md): the table's CSV is the CLI's export,
    the heatmap's PNG downloads, and each pair's r in the CSV is the one the heatmap shows."""
    import csv
    import io

    folder = _open(browser, "Agreement", "Correlation between evaluators", wait_for_text,
                   tmp_path / "agreement")
    _click(browser, "//div[@data-testid='stDownloadButton']//button[contains(., 'CSV')]")
    page = _downloaded(folder, "evaluator-correlation.csv")
    assert page == _cli(db, tmp_path / "corr.csv", "evaluator-correlation")
    _click(browser, "//div[@data-testid='stDownloadButton']//button[contains(., 'PNG')]")
    assert _downloaded(folder, "correlation-pearson.png").startswith(b"\x89PNG")
    rows = [r for r in csv.DictReader(io.StringIO(page.decode()))
            if r["method"] == "pearson" and r["r"] and "gold-human" in
            (r["evaluator_a"], r["evaluator_b"])]
    best = max(rows, key=lambda r: float(r["r"]))
    heatmap = browser.find_element("css selector", ".js-plotly-plot").text  # type: ignore[attr-defined]
    assert f"{float(best['r']):.2f}" in heatmap, (best, heatmap)
    screenshot(browser, "researcher-1366-agreement-best", settle=0.5)


def _export_the_main_table_as_latex(browser: object, db: str,
                                    wait_for_text: Callable[..., None], tmp_path: Path) -> None:
    """Leaderboard: the main table's LaTeX download is ``export main-table`` as LaTeX."""
    folder = _open(browser, "Leaderboard", "Main table (gpt-4)", wait_for_text,
                   tmp_path / "latex")
    _click(browser, "//div[@data-testid='stDownloadButton']//button[contains(., 'LaTeX')]")
    page = _downloaded(folder, "leaderboard-main-gpt-4.tex")
    assert page == _cli(db, tmp_path / "main.tex", "main-table", "--evaluator", "gpt-4",
                        "--rank-by", "QA-st mean", "--format", "latex")


def _exclude_a_careless_annotator(browser: object,
                                  wait_for_text: Callable[..., None]) -> None:
    """Studies, Quality control (docs/crowd-study.md): nobody is chosen beforehand; choose
    the flagged annotator, type a reason, Exclude asks, Yes excludes."""
    from selenium.webdriver.common.keys import Keys

    follow_nav_link(browser, "Studies")
    wait_for_text(browser, "Quality control", "Annotator to exclude", timeout=180)
    wait_idle(browser)
    field = "//*[@data-testid='stSelectbox'][contains(., 'Annotator to exclude')]//input"
    _click(browser, field)
    options = browser.find_elements(  # type: ignore[attr-defined]
        "xpath", "//li[@role='option']")
    # flagged first, and the careless participant (every score turned around) is flagged
    assert options and options[0].text == _pid("careless"), [o.text for o in options]
    options[0].click()
    reason = browser.find_element(  # type: ignore[attr-defined]
        "xpath", "//*[@data-testid='stTextInput'][contains(., 'Reason')]//input")
    reason.send_keys("failed the attention checks", Keys.ENTER)
    wait_idle(browser)
    _click(browser, "//button[contains(., 'Exclude (scores kept')]")
    wait_for_text(browser, "Yes, exclude", timeout=60)
    _click(browser, "//button[contains(., 'Yes, exclude')]")
    wait_for_text(browser, "excluded", timeout=60)
    wait_idle(browser)
    screenshot(browser, f"researcher-1366-{STUDY}-excluded", settle=0.5)
