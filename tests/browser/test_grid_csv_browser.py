"""The grid's own "Download as CSV" (the icon on every table) writes what the table shows: an
empty cell where the grid shows an en dash (not -Infinity), and an interval whole (not its low
bound alone). The page's own CSV button is byte-identical to the CLI (tests/pages/)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable

from tests.browser.conftest import wait_idle
from tests.browser.test_analysis_browser import open_page

#: the File System Access API the grid saves through, replaced by one that keeps the bytes
CAPTURE = """
window.__csv = [];
window.showSaveFilePicker = async () => ({createWritable: async () => ({
  write: async (chunk) => { window.__csv.push(new TextDecoder().decode(chunk)); },
  close: async () => {}})});
"""


def grid_csv(browser: object, index: int = 0) -> list[dict[str, str]]:
    """Press the toolbar's "Download as CSV" of the page's ``index``-th table; its rows."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.support.ui import WebDriverWait

    # a table is a widget (with a key class) only when its rows can be selected
    container = "[data-testid='stElementContainer']:has([data-testid='stDataFrame'])"
    grid = WebDriverWait(browser, 60).until(lambda d: d.find_elements(
        "css selector", container))[index]  # type: ignore[attr-defined]
    browser.execute_script(CAPTURE)  # type: ignore[attr-defined]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", grid)  # type: ignore[attr-defined]
    ActionChains(browser).move_to_element(grid).perform()
    button = WebDriverWait(browser, 30).until(lambda d: [
        b for b in grid.find_elements("css selector", "button[aria-label='Download as CSV']")
        if b.is_displayed()])[0]
    button.click()
    text = ""
    for _ in range(40):
        text = "".join(browser.execute_script("return window.__csv;"))  # type: ignore[attr-defined]
        if text.count("\n") > 1:
            break
        time.sleep(0.25)
    return list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))


def test_the_grids_csv_writes_missing_cells_empty_and_intervals_whole(
        shared_server: str, browser: object, wait_for_text: Callable[..., None]) -> None:
    open_page(browser, shared_server, "Leaderboard", wait_for_text)
    wait_idle(browser)
    rows = grid_csv(browser)
    assert rows, "the grid's CSV has rows"
    text = repr(rows)
    assert "Infinity" not in text and "inf" not in text.lower().replace("info", "")
    gpt35 = next(r for r in rows if "GPT-3.5" in r.values())
    assert gpt35["QA-mt test2"] == ""  # GPT-3.5 was run in single-turn only: an en dash shown

    open_page(browser, shared_server, "Calibration", wait_for_text)
    wait_idle(browser)
    rows = grid_csv(browser)
    assert "ci" in rows[0] and "ci_low" not in rows[0]
    intervals = [r["ci"] for r in rows if r["ci"]]
    assert intervals and all(i.startswith("[") and ", " in i and i.endswith("]")
                             for i in intervals)
