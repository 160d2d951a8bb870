"""Tables as a user meets them in Chromium: the ranked leaderboard with en dashes for missing
cells, and a drilldown row opened in the detail panel (the empty states are AppTests:
tests/pages/test_empty_states.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.browser.conftest import follow_nav_link, screenshot
from tests.browser.test_analysis_browser import click_tab, open_page


def _grid_text(browser: object) -> str:
    # the grid draws on a canvas; its accessible table holds the cell texts
    return " ".join(e.get_attribute("textContent") for e in browser.find_elements(  # type: ignore[attr-defined]
        "css selector", "[data-testid='stDataFrame'] table"))


def test_leaderboard_ranks_and_shows_missing_as_en_dash(
        shared_server: str, browser: object, wait_for_text: Callable[..., None]) -> None:
    open_page(browser, shared_server, "Leaderboard", wait_for_text)
    wait_for_text(browser, "Rank by")
    from selenium.webdriver.support.ui import WebDriverWait

    # the raw values behind the canvas (the picture shows "–"), once the grid is drawn
    WebDriverWait(browser, 60).until(lambda d: "GPT-3.5" in _grid_text(d))
    grid = _grid_text(browser)
    assert "None" not in grid and grid.index("Rank") < grid.index("QA-st mean")
    assert grid.index("GPT-4") < grid.index("GPT-3.5")  # ranked by QA-st mean
    screenshot(browser, "tables-leaderboard", settle=2.0)


def _pick_first_row(browser: object, key: str) -> None:
    """Click the row-selection cell of the first data row of the table with this key."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    selector = f".st-key-{key} [data-testid='stDataFrame']"
    grid = WebDriverWait(browser, 60).until(
        lambda d: d.find_elements("css selector", selector))[0]  # type: ignore[attr-defined]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", grid)  # type: ignore[attr-defined]
    time.sleep(2)
    left = -grid.size["width"] // 2 + 12  # the row-selection column, first data row
    top = -grid.size["height"] // 2 + 35 + 17
    ActionChains(browser).move_to_element_with_offset(grid, left, top).click().perform()


def _store_transcript_answering_the_first_question(url: str) -> str:
    """A transcript for the first meeting in which one utterance repeats its first question
    (plus a marker); returns the marker."""
    from sqlalchemy import text

    from db.engine import get_engine

    marker = "The quartz lighthouse agreement was signed."
    with get_engine(url).begin() as conn:
        meeting, question = conn.execute(text(
            "SELECT m.external_id, q.qa_text FROM meeting m JOIN question q "
            "ON q.meeting_id = m.id ORDER BY m.external_id, q.number LIMIT 1")).one()
        filler = [f"(PERSON{i % 3 + 1}) Lorem ipsum dolor sit amet number {i}."
                  for i in range(60)]
        lines = [*filler[:30], f"(PERSON4) {question} {marker}", *filler[30:]]
        conn.execute(text("UPDATE meeting SET transcript = :t WHERE external_id = :m"),
                     {"t": "\n".join(lines), "m": meeting})
    return marker


def test_meeting_browser_row_opens_the_detail_panel(
        streamlit_server: str, browser: object, wait_for_text: Callable[..., None],
        bundled_sqlite: str) -> None:

    marker = _store_transcript_answering_the_first_question(bundled_sqlite)
    browser.get(streamlit_server)  # type: ignore[attr-defined]
    follow_nav_link(browser, "Meeting browser")
    wait_for_text(browser, "Select a row to read the response in full below.", timeout=120)
    _pick_first_row(browser, "meeting-responses")
    screenshot(browser, "tables-meeting-detail", settle=2.0)
    wait_for_text(browser, "Selected response", "Response", "Scores", timeout=60)
    wait_for_text(browser, "Transcript excerpt", marker, timeout=60)
    panel = browser.find_element("css selector", ".st-key-detail-panel")  # type: ignore[attr-defined]
    assert "Reference answer" in panel.text and "gpt-4:" in panel.text
    assert marker in panel.text and "number 0." not in panel.text  # a passage, not the whole
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'});", panel)  # type: ignore[attr-defined]
    screenshot(browser, "tables-meeting-excerpt", settle=1.0)


def test_drilldown_row_opens_the_detail_panel(
        shared_server: str, browser: object, wait_for_text: Callable[..., None]) -> None:
    open_page(browser, shared_server, "Model drilldown", wait_for_text)
    click_tab(browser, "Questions")
    wait_for_text(browser, "Select a row to read it in full below.")
    _pick_first_row(browser, "drilldown-questions-table")
    wait_for_text(browser, "Selected response", "Reference answer", "Scores", timeout=60)
    panel = browser.find_element("css selector", ".st-key-detail-panel")  # type: ignore[attr-defined]
    assert "gpt-4:" in panel.text
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'});", panel)  # type: ignore[attr-defined]
    screenshot(browser, "tables-drilldown-detail", settle=1.0)

