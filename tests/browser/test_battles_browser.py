"""The Battles page in headless Chromium: a CREAM judge's win matrix, ratings, key facts."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from db.engine import get_engine
from elitr_core.backends.fake import FakeBackend
from elitr_core.judging.pairs import PairwiseSpec
from elitr_core.judging.pairwise_runner import pairwise_judge_run
from tests.browser.conftest import running_server, screenshot
from tests.browser.test_analysis_browser import PAGES, open_page

MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B", "LongChat-7B-v1.5")


@pytest.fixture
def battles_server(bundled_sqlite: str, tmp_path: Path) -> Iterator[str]:
    """The app on the bundled data judged by a fake CREAM judge and a fake battle judge."""
    for style, slug in (("cream", "cream"), ("battle", "leval")):
        spec = PairwiseSpec(judge_model="fake-judge", style=style, evaluator=slug,
                            models=MODELS, split="test2", setting="qa", mode="st")
        pairwise_judge_run(get_engine(bundled_sqlite), spec, FakeBackend())
    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        yield url


def open_battles(browser: object, server: str, wait_for_text: Callable[..., None],
                 *texts: str, drawn: str = ".js-plotly-plot .main-svg") -> None:
    """Open Battles, wait for its texts and for four figures' ``drawn`` element."""
    PAGES["Battles"] = ("Win matrix", "Ratings", "Win rate against a baseline", *texts)
    try:
        open_page(browser, server, "Battles", wait_for_text)
    finally:
        del PAGES["Battles"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(browser.find_elements(  # type: ignore[attr-defined]
            "css selector", drawn)) < 4:
        time.sleep(0.5)


@pytest.mark.browser
def test_battles_page_in_chromium(battles_server: str, browser: object,
                                  wait_for_text: Callable[..., None]) -> None:
    open_battles(browser, battles_server, wait_for_text, "Key facts of one comparison")
    assert len(browser.find_elements("css selector", ".js-plotly-plot")) >= 4  # type: ignore[attr-defined]
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "Traceback" not in body and "Error" not in body.split("Filters")[0]
    path = screenshot(browser, "battles", settle=3.0)
    assert path.stat().st_size > 20_000


#: per download button: its label overflows its box (drawn shrunk, "J." for "JSON")
CUT_BUTTONS = """
return [...document.querySelectorAll("[data-testid='stDownloadButton'] button")]
  .filter(b => b.offsetParent !== null && [b, ...b.querySelectorAll("*")]
    .some(e => e.scrollWidth > e.clientWidth + 1))
  .map(b => b.innerText);
"""
#: per figure: its toolbar (shown on hover) and its title overlap
COVERED_TITLES = """
const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
return [...document.querySelectorAll(".js-plotly-plot")].filter(plot => {
  const bar = plot.querySelector(".modebar"), title = plot.querySelector(".gtitle");
  return bar && title && hit(bar.getBoundingClientRect(), title.getBoundingClientRect());
}).map(plot => plot.querySelector(".gtitle").textContent);
"""


@pytest.mark.browser
def test_battles_fits_1366x768(battles_server: str, browser: object,
                               wait_for_text: Callable[..., None]) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    browser.set_window_size(1366, 768)  # type: ignore[attr-defined]
    open_battles(browser, battles_server, wait_for_text, drawn=".js-plotly-plot .gtitle")
    time.sleep(1)
    assert browser.execute_script(CUT_BUTTONS) == []  # type: ignore[attr-defined]
    for plot in browser.find_elements("css selector", ".js-plotly-plot"):  # type: ignore[attr-defined]
        browser.execute_script("arguments[0].scrollIntoView({block: 'center'});", plot)  # type: ignore[attr-defined]
        ActionChains(browser).move_to_element(plot).perform()  # the toolbar shows on hover
        time.sleep(0.3)
        assert browser.execute_script(COVERED_TITLES) == []  # type: ignore[attr-defined]
