"""Every cell of the Battles page's tables is drawn whole at 1366x768 in Chromium: no column
is narrower than its header or any of its texts. The grid sizes a column by itself from the
first rows it draws and keeps that width when the data changes: after switching from a judge
with criterion "verdict" to one with "completeness", the ``criterion`` column cut it.

The grid draws on a canvas, so the test reads what it draws from the grid's own React props
(the column widths it lays out, each row's display text, its font and cell padding) and measures
each text with the canvas's ``measureText`` in that font.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import running_server, screenshot, wait_idle
from tests.browser.test_battles_browser import open_battles
from tests.browser.test_intervals_1366_browser import HEIGHT, WIDTH, choose, show_grids
from tests.pages.test_battles import judge_all

#: per visible grid: its columns (title, width drawn, the widest text and header measured in
#: the grid's font, in px), the cell padding, and every text of a column named "criterion"
MEASURE = """
const measure = document.createElement("canvas").getContext("2d");
const grids = [];
for (const [index, grid] of document.querySelectorAll("[data-testid='stDataFrame']").entries()) {
  if (grid.offsetParent === null || grid.closest("details:not([open])")) continue;
  const canvas = grid.querySelector("canvas");
  if (!canvas) { grids.push(null); continue; }
  let fiber = canvas[Object.keys(canvas).find(k => k.startsWith("__reactFiber"))], props = null;
  for (; fiber; fiber = fiber.return) {  // the glide grid that draws the canvas
    const p = fiber.memoizedProps;
    if (p && p.getCellContent && Array.isArray(p.columns) && p.theme &&
        p.columns.every(c => typeof c.width === "number")) { props = p; break; }
  }
  if (!props) { grids.push(null); continue; }
  const font = style => `${style} ${props.theme.fontFamily}`;
  const columns = props.columns.map((column, index) => {
    const texts = [];
    for (let row = 0; row < props.rows; row++) {
      const text = props.getCellContent([index, row]).displayData;
      if (typeof text === "string") texts.push(text);
    }
    measure.font = font(props.theme.baseFontStyle);
    let widest = "", widestPx = 0;
    for (const text of texts) {
      const px = measure.measureText(text).width;
      if (px > widestPx) { widest = text; widestPx = px; }
    }
    measure.font = font(props.theme.headerFontStyle);
    return {title: column.title, width: column.width, widest, widestPx,
            headerPx: measure.measureText(column.title).width,
            texts: column.title === "Criterion" ? texts : []};
  });
  grids.push({index, columns, padding: props.theme.cellHorizontalPadding});
}
return grids;
"""


@pytest.fixture
def judged_server(bundled_sqlite: str, tmp_path: Path) -> Iterator[str]:
    """The app on the bundled data judged by a fake battle judge (evaluator ``battle``, the
    page's first, criterion "verdict") and a fake CREAM judge (``cream``, more criteria)."""
    judge_all(bundled_sqlite)
    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        yield url


def measured_grids(browser: object) -> list[dict[str, Any]]:
    """:data:`MEASURE` once every visible grid has been on screen (drawn) and the fonts are in."""
    from selenium.webdriver.support.ui import WebDriverWait

    show_grids(browser, 0.3)
    WebDriverWait(browser, 30).until(lambda d: d.execute_script(  # type: ignore[attr-defined]
        "return document.fonts.status === 'loaded';"))
    grids: list[dict[str, Any]] = []

    def all_read(driver: object) -> bool:
        grids[:] = driver.execute_script(MEASURE)  # type: ignore[attr-defined]
        return bool(grids) and all(g is not None for g in grids)

    WebDriverWait(browser, 30).until(all_read)
    return grids


def cut_cells(grid: dict[str, Any]) -> list[str]:
    """The columns of a grid narrower than their header or widest text (with the padding the
    grid leaves on both sides of a cell), in words."""
    problems = []
    padding = 2 * float(grid["padding"])
    for column in grid["columns"]:
        if not column["title"]:  # the row selection's marker column
            continue
        need = max(column["widestPx"], column["headerPx"]) + padding
        if need > column["width"] + 0.5:
            problems.append(f"{column['title']}: {column['width']} px wide, "
                            f"{column['widest']!r} needs {need:.1f} px")
    return problems


def test_every_battles_cell_is_drawn_whole_at_1366x768(
        judged_server: str, browser: object, wait_for_text: Callable[..., None]) -> None:
    browser.set_window_size(WIDTH, HEIGHT)  # type: ignore[attr-defined]
    # first the battle judge (criterion "verdict"), then CREAM, as a user switching judges:
    # the grid measured its columns on the texts it drew first and kept those widths
    open_battles(browser, judged_server, wait_for_text, "Win share, verdict (battle)")
    measured_grids(browser)
    choose(browser, "Pairwise judge", "cream")  # CREAM: several criteria, "completeness" too
    wait_for_text(browser, "Agreement with the human ranking", timeout=120)
    wait_idle(browser)
    grids = measured_grids(browser)
    criteria = {t for g in grids for c in g["columns"] for t in c["texts"]}
    assert "completeness" in criteria, criteria  # the table that cut it is measured
    problems = [f"table {number}: {problem}" for number, grid in enumerate(grids)
                for problem in cut_cells(grid)]
    for number, grid in enumerate(grids):  # the tables with a criterion column
        if any(c["title"] == "Criterion" for c in grid["columns"]):
            browser.execute_script(  # type: ignore[attr-defined]
                "document.querySelectorAll(\"[data-testid='stDataFrame']\")[arguments[0]]"
                ".scrollIntoView({block: 'center'});", grid["index"])
            screenshot(browser, f"battles-columns-1366-{number}", settle=0.5)
    assert len(grids) >= 4, len(grids)
    assert not problems, "\n".join(problems)
