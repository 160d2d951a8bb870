"""Score five items in headless Chromium with the keyboard only, then read the database."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from sqlalchemy import select

from db.models import Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database
from tests.browser.conftest import screenshot

KEYS = ["7", "0", "3", "1", "9"]  # 0 means 10
EXPECTED = [7.0, 10.0, 3.0, 1.0, 9.0]


@pytest.fixture
def token(bundled_sqlite: str) -> str:
    with writing(open_database(bundled_sqlite)) as session:
        create_study(session, StudySpec(name="kbd", per_item=1, split="test2", setting="qa",
                                        mode="st", models=("GPT-4",),
                                        meetings=("meeting_en_test2_001",)))
        return add_annotator(session, "keyboard", "silver")


def _wait_progress(driver: object, answered: int, wait: Callable[..., None]) -> None:
    wait(driver, f"{answered} of 12 items scored", timeout=30)


def test_keyboard_only_scoring(token: str, streamlit_server: str, browser: object,
                               wait_for_text: Callable[..., None], bundled_sqlite: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.get(f"{streamlit_server}/?token={token}")  # type: ignore[attr-defined]
    wait_for_text(browser, "Scoring with the keyboard", "Start scoring")  # first-visit tour
    screenshot(browser, "annotate-tour")
    browser.find_element(  # type: ignore[attr-defined]
        "xpath", "//button[.//p[text()='Start scoring']]").click()
    wait_for_text(browser, "Scoring: kbd", "Item 1 of 12", "Perfect match", "Guidelines")
    time.sleep(1.0)  # the key listener is installed once the page has rendered
    actions = ActionChains(browser)
    for i, key in enumerate(KEYS):
        actions.send_keys(key).perform()
        time.sleep(0.8)  # the score pick round-trips to the server before Enter
        actions.send_keys(Keys.ENTER).perform()
        wait_for_text(browser, f"Item {i + 2} of 12", timeout=30)
        _wait_progress(browser, i + 1, wait_for_text)
    _wait_idle(browser)
    actions.send_keys(Keys.ARROW_LEFT).perform()  # back to item 5: its answer is shown
    wait_for_text(browser, "Item 5 of 12", timeout=30)
    _wait_idle(browser)  # "Item 5" shows before the rest of the rerun has drawn the buttons
    actions.send_keys(Keys.ARROW_RIGHT).perform()
    wait_for_text(browser, "Item 6 of 12", timeout=30)
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "GPT-4" not in body and "Traceback" not in body
    with reading(open_database(bundled_sqlite)) as session:
        from db.models import Assignment

        rows = session.execute(
            select(Assignment.position, Assignment.kind, Score.value)
            .join(Score, (Score.response_id == Assignment.response_id)
                  & (Score.annotator_key == Assignment.annotator_id))
            .order_by(Assignment.position)).all()
    assert [(p, v) for p, _, v in rows] == list(enumerate(EXPECTED))


def _wait_idle(browser: object, timeout: float = 30) -> None:
    """Until Streamlit's "Running..." status is gone (the page's rerun has finished)."""
    from selenium.webdriver.support.wait import WebDriverWait

    WebDriverWait(browser, timeout).until(lambda d: not d.find_elements(  # type: ignore[attr-defined]
        "css selector", '[data-testid="stStatusWidget"]'))
    time.sleep(0.3)


HOSTILE = ("See ![pixel](http://127.0.0.1:9/track.png) and <img src='http://127.0.0.1:9/raw.png'>"
           " <b>bold</b>\n" + "A long response line that needs scrolling. " * 60)


def test_scale_and_submit_fit_1366x768_and_responses_fetch_nothing(
    token: str, streamlit_server: str, browser: object, wait_for_text: Callable[..., None],
    bundled_sqlite: str,
) -> None:
    from sqlalchemy import text

    with writing(open_database(bundled_sqlite)) as session:
        session.execute(text("UPDATE response SET text = :t"), {"t": HOSTILE})
    browser.set_window_size(1366, 768)  # type: ignore[attr-defined]
    browser.get(f"{streamlit_server}/?token={token}")  # type: ignore[attr-defined]
    wait_for_text(browser, "Start scoring")
    browser.find_element(  # type: ignore[attr-defined]
        "xpath", "//button[.//p[text()='Start scoring']]").click()
    wait_for_text(browser, "Item 1 of 12", "A long response line")
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.action_chains import ActionChains

    _wait_idle(browser)
    # The key listener is installed once the page has rendered, which under load can come after
    # the text shows: a key pressed before it is lost, so press again (picking 7 twice is 7).
    for _ in range(5):
        ActionChains(browser).send_keys("7").perform()
        try:
            wait_for_text(browser, "Your score: 7", timeout=10)
            break
        except TimeoutException:
            continue
    else:
        raise AssertionError("the key 7 never picked a score")
    path = screenshot(browser, "annotate")
    assert path.stat().st_size > 10_000
    height = browser.execute_script("return window.innerHeight")  # type: ignore[attr-defined]
    for key in ("annotate-pick-1", "annotate-pick-10", "annotate-submit"):
        rect = browser.execute_script(  # type: ignore[attr-defined]
            f"return document.querySelector('[class*=\"st-key-{key}-at-\"] button')"
            ".getBoundingClientRect()")
        assert 0 <= rect["top"] and rect["bottom"] <= height, (key, rect, height)
    assert browser.execute_script(  # type: ignore[attr-defined]
        "return window.scrollY") == 0
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "![pixel](http://127.0.0.1:9/track.png)" in body and "<b>bold</b>" in body
    fetched = browser.execute_script(  # type: ignore[attr-defined]
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => n.includes('127.0.0.1:9/'))")
    images = browser.execute_script(  # type: ignore[attr-defined]
        "return [...document.querySelectorAll('img')].map(i => i.src)"
        ".filter(s => s.includes('127.0.0.1:9'))")
    assert fetched == [] and images == []


def _dialog_open(driver: object) -> bool:
    return bool(driver.find_elements(  # type: ignore[attr-defined]
        "css selector", '[role="dialog"]'))


def test_enter_only_closes_the_tour_which_shows_once_per_annotator(
    token: str, streamlit_server: str, browser: object, wait_for_text: Callable[..., None],
    bundled_sqlite: str,
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.wait import WebDriverWait

    from db.models import Annotator

    browser.get(f"{streamlit_server}/?token={token}")  # type: ignore[attr-defined]
    wait_for_text(browser, "Scoring with the keyboard", "Start scoring")
    _wait_idle(browser)  # the first item is drawn when the walkthrough closes, not behind it
    assert "Item 1 of 12" not in browser.find_element(  # type: ignore[attr-defined]
        "tag name", "body").text
    time.sleep(1.0)  # the key listener is installed once the page has rendered
    ActionChains(browser).send_keys(Keys.ENTER).perform()  # closes the tour, submits nothing
    WebDriverWait(browser, 30).until(lambda d: not _dialog_open(d))
    _wait_idle(browser)
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "Pick a score" not in body and "Item 1 of 12" in body and "0 of 12" in body
    with reading(open_database(bundled_sqlite)) as session:
        seen = session.execute(select(Annotator.tour_seen_at)).scalars().all()
    assert [s for s in seen if s is not None]  # stored with the annotator, not the browser
    # a new browser session (a reload) does not show it again
    browser.delete_all_cookies()  # type: ignore[attr-defined]
    browser.get(f"{streamlit_server}/?token={token}")  # type: ignore[attr-defined]
    wait_for_text(browser, "Item 1 of 12")
    _wait_idle(browser)
    time.sleep(1.0)
    assert not _dialog_open(browser)
    # "?" reopens it on request
    browser.find_element(  # type: ignore[attr-defined]
        "css selector", ".st-key-annotate-help button").click()
    wait_for_text(browser, "Scoring with the keyboard")
    screenshot(browser, "annotate-tour-reopened")
