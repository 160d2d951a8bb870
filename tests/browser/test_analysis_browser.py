"""Open every analysis page in headless Chromium, read a key text, download a CSV, screenshot."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from elitr_core.cli.main import main
from tests.browser.conftest import follow_nav_link, screenshot

PAGES = {
    # navigation title: texts that prove the page computed its numbers
    "Leaderboard": ("Main table (gpt-4)", "Mean 1-10 score per model", "Long table"),
    "Agreement": ("Correlation between evaluators", "Intraclass correlation",
                  "Two evaluators"),
    "Calibration": ("Score-bin calibration", "Reference evaluator"),
    "Model drilldown": ("Model drilldown", "Lost in the middle", "Largest disagreements"),
    "Judge audit": ("PPI leaderboard", "Budget planner", "Sampling designs", "Judge effects"),
}
# a tab drawn only once clicked (ui.state.open_tab): label, texts it then shows
TABS = {
    "Agreement": ("Two evaluators", ("Responses both scored", "390",
                                     "Bias of gpt-4 relative to gold-human per model")),
    "Judge audit": ("Sampling designs", ("1,000 smaller studies of the budget",)),
}


def click_tab(browser: object, label: str) -> None:
    """Click the tab with this label (the page reruns and draws that tab)."""
    from selenium.webdriver.support.ui import WebDriverWait

    xpath = f"//*[@role='tab'][contains(., '{label}')]"
    WebDriverWait(browser, 30).until(
        lambda d: d.find_elements("xpath", xpath))[0].click()  # type: ignore[attr-defined]


def open_page(browser: object, server: str, title: str,
              wait_for_text: Callable[..., None]) -> None:
    """Open the app and follow its navigation link (st.navigation), as a user does."""
    browser.get(server)  # type: ignore[attr-defined]
    wait_for_text(browser, "ELITR-Bench dashboard", timeout=120)
    follow_nav_link(browser, title)
    wait_for_text(browser, *PAGES[title], timeout=120)


def _plot_text(browser: object) -> str:
    """The text of the page's Plotly charts; empty while a rerun replaces them (stale)."""
    from selenium.common.exceptions import StaleElementReferenceException

    try:
        return "".join(e.text for e in browser.find_elements(  # type: ignore[attr-defined]
            "css selector", ".js-plotly-plot"))
    except StaleElementReferenceException:
        return ""


@pytest.mark.browser
@pytest.mark.parametrize("page", list(PAGES))
def test_analysis_page_in_chromium(page: str, shared_server: str, browser: object,
                                   wait_for_text: Callable[..., None]) -> None:
    open_page(browser, shared_server, page, wait_for_text)
    # plotly draws its SVG after the text is there
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not browser.find_elements(  # type: ignore[attr-defined]
            "css selector", ".js-plotly-plot .main-svg"):
        time.sleep(0.5)
    assert browser.find_elements("css selector", ".js-plotly-plot")  # type: ignore[attr-defined]
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "Traceback" not in body and "Error" not in body.split("Filters")[0]
    slug = page.split()[-1].lower()
    path = screenshot(browser, f"analysis-{slug}", settle=3.0)
    assert path.stat().st_size > 20_000
    if page not in TABS:
        return
    label, texts = TABS[page]
    click_tab(browser, label)
    wait_for_text(browser, *texts, timeout=120)
    if page == "Judge audit":  # below the fold: show what 100 human scores buy per design
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "What 100 human scores buy" not in _plot_text(
                browser):
            time.sleep(0.5)
        # by selector in the page, not a Python-held element: a rerun may have redrawn the chart
        browser.execute_script(  # type: ignore[attr-defined]
            "document.querySelector('.js-plotly-plot').scrollIntoView({block: 'start'});")
    path = screenshot(browser, f"analysis-{slug}-{label.split()[0].lower()}", settle=3.0)
    assert path.stat().st_size > 20_000


@pytest.mark.browser
def test_calibration_csv_download_in_chromium(shared_server: str, browser: object,
                                              wait_for_text: Callable[..., None],
                                              shared_bundled: str, tmp_path: Path) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    from selenium.webdriver.support.ui import WebDriverWait

    open_page(browser, shared_server, "Calibration", wait_for_text)
    # the button a reader clicks: the displayed one labelled "Full table CSV" (the page also
    # holds download buttons whose text holds 'CSV' and that are not displayed: no size)
    xpath = ("//div[@data-testid='stDownloadButton']//button"
             "[normalize-space(.)='Full table CSV']")
    button = WebDriverWait(browser, 60).until(
        lambda d: next((b for b in d.find_elements("xpath", xpath)  # type: ignore[attr-defined]
                        if b.is_displayed()), None))
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)  # type: ignore[attr-defined]
    button.click()
    target = downloads / "calibration-full.csv"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not target.exists():
        time.sleep(0.3)
    assert target.exists(), f"no download: {list(downloads.iterdir())}"
    cli = tmp_path / "cli.csv"
    assert main(["export", "calibration", "--db", shared_bundled, "--out", str(cli)]) == 0
    assert target.read_bytes() == cli.read_bytes()


@pytest.mark.browser
def test_filters_are_above_the_fold_at_1366x768(shared_server: str, browser: object,
                                                wait_for_text: Callable[..., None]) -> None:
    # The sidebar held the navigation (ten pages in three sections, ~540 px) above the
    # filters, so at 1366x768 the first filter started below the window; the navigation is
    # now the top bar and the sidebar holds the filters alone.
    browser.set_window_size(1366, 768)  # type: ignore[attr-defined]
    open_page(browser, shared_server, "Leaderboard", wait_for_text)
    bottoms = browser.execute_script(  # type: ignore[attr-defined]
        "const side = document.querySelector('[data-testid=stSidebar]');"
        "const boxes = [...side.querySelectorAll('[data-testid=stSelectbox]')].slice(0, 3);"
        "return [window.innerHeight, ...boxes.map(b => b.getBoundingClientRect().bottom)];")
    height, *filters = bottoms
    assert len(filters) == 3, bottoms  # split, setting, mode
    assert max(filters) <= height, f"filters end at {filters} px, the window at {height} px"
    screenshot(browser, "analysis-filters-1366", settle=1.0)
