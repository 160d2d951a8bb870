"""The Studies page in headless Chromium: a silver study part-way, with progress and quality."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from sqlalchemy import select

from db.models import Assignment, Evaluator, Score
from db.transaction import reading, writing
from elitr_core.annotation.studies import StudySpec, create_study, join_prolific, submit
from elitr_core.data.database import open_database
from tests.browser.conftest import follow_nav_link, screenshot

STUDY = "silver-test2"
MEETINGS = ("meeting_en_test2_001", "meeting_en_test2_002")
# (participant, answers given: None = the whole task); arrivals alternate between meetings
PARTICIPANTS = (("p1", None), ("p2", None), ("careless", None), ("p4", 20), ("p5", None))


def _pid(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:24]


@pytest.fixture
def study_db(bundled_sqlite: str) -> str:
    """The paper's silver study on two meetings: five Prolific participants, one of them
    answering against gold, one part-way through their task."""
    engine = open_database(bundled_sqlite)
    with writing(engine) as session:
        create_study(session, StudySpec(
            name=STUDY, pool="silver", per_item=3, split="test2", setting="qa", mode="st",
            models=("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"), meetings=MEETINGS, seed=1,
            prolific_code="C0DE1234", attention_rate=0.1))
        gold = {r: v for r, v in session.execute(
            select(Score.response_id, Score.value).join(Evaluator)
            .where(Evaluator.slug == "gold-human", Score.annotator_key == 0))}
    for k, (name, stop) in enumerate(PARTICIPANTS):
        entry = join_prolific(engine, STUDY, _pid(name), _pid("study"), _pid(f"s-{name}"))
        with reading(engine) as session:
            queue = session.execute(select(Assignment.position, Assignment.kind,
                                           Assignment.response_id)
                                    .where(Assignment.annotator_id == entry.annotator_id)
                                    .order_by(Assignment.position)).all()
        for position, kind, response_id in queue[:stop]:
            good = {"attention-high": 10, "attention-low": 1}.get(
                kind, int(min(10, max(1, gold[response_id] + (response_id + k) % 5 - 2))))
            value = 11 - good if name == "careless" else good
            submit(engine, entry, position, value, seconds=20.0 + position % 7)
    return bundled_sqlite


def test_studies_page_in_chromium(study_db: str, streamlit_server: str, browser: object,
                                  wait_for_text: Callable[..., None]) -> None:
    from selenium.webdriver.common.by import By

    browser.get(streamlit_server)  # type: ignore[attr-defined]
    wait_for_text(browser, "ELITR-Bench dashboard")
    follow_nav_link(browser, "Studies")
    wait_for_text(browser, "Progress per annotator", "Units short of annotators",
                  "Quality control", "Agreement of the study's annotators",
                  f"silver-human:{STUDY}", "Krippendorff's alpha")
    body = browser.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
    assert "Traceback" not in body and "Error" not in body
    metrics = [m.text.split("\n") for m in browser.find_elements(  # type: ignore[attr-defined]
        By.CSS_SELECTOR, "[data-testid='stMetric']")]
    assert ["Annotators", "5"] in metrics and ["Items", "84"] in metrics
    assert ["Status", "open"] in metrics
    # wide and tall enough for the quality table's flags column and the ICC tables
    browser.set_window_size(1700, 2000)  # type: ignore[attr-defined]
    path = screenshot(browser, "studies", settle=3.0)
    assert path.stat().st_size > 10_000


def _grid_headers(grid: object) -> list[str]:
    """The column headers a data grid has drawn (its accessible table lists the columns in
    view, not those scrolled out to the right)."""
    return [h.get_attribute("textContent")  # type: ignore[attr-defined]
            for h in grid.find_elements("css selector", "th")]  # type: ignore[attr-defined]


def _click(browser: object, element: object) -> None:
    """Click ``element`` scrolled to the window's middle: Selenium's own scroll puts it at the
    top edge, under the navigation bar (which then receives the click)."""
    browser.execute_script(  # type: ignore[attr-defined]
        "arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()  # type: ignore[attr-defined]


def test_studies_at_1366x768_flags_links_and_closing(
    study_db: str, streamlit_server: str, browser: object, wait_for_text: Callable[..., None],
) -> None:
    import time

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.wait import WebDriverWait

    browser.set_window_size(1366, 768)  # type: ignore[attr-defined]
    browser.get(f"{streamlit_server}/studies")  # type: ignore[attr-defined]
    from selenium.common.exceptions import StaleElementReferenceException, TimeoutException

    wait_for_text(browser, "Quality control", "Krippendorff's alpha")
    quality = ("//h3[contains(., 'Quality control')]"
               "/following::*[@data-testid='stDataFrame'][1]")

    def drawn(driver: object) -> object:
        """The quality grid, once it has drawn its Flags header (under load the page may
        still be drawing, or drawing again, when its texts are there)."""
        grid = driver.find_element(By.XPATH, quality)  # type: ignore[attr-defined]
        driver.execute_script(  # type: ignore[attr-defined]
            "arguments[0].scrollIntoView({block: 'center'})", grid)
        return grid if "Flags" in _grid_headers(grid) else False

    try:
        WebDriverWait(browser, 30, poll_frequency=1.0,
                      ignored_exceptions=(StaleElementReferenceException,)).until(drawn)
    except TimeoutException:
        pass  # the assertion below says what the grid drew
    grid = browser.find_element(By.XPATH, quality)  # type: ignore[attr-defined]
    headers = _grid_headers(grid)
    assert "Flags" in headers, headers  # in view, not cut off at 1366 px
    screenshot(browser, "studies-1366-quality")
    # Annotators -> Add annotator: the full link from the address this browser uses
    _click(browser, browser.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//*[@role='tab'][contains(., 'Annotators')]"))
    name = WebDriverWait(browser, 30).until(lambda d: d.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//input[@aria-label='Annotator name']"))
    name.send_keys("Alice")
    browser.find_element(By.XPATH, "//button[.//p[text()='Add annotator']]").click()  # type: ignore[attr-defined]
    wait_for_text(browser, "Personal link of Alice")
    block = WebDriverWait(browser, 30).until(lambda d: d.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//pre[contains(., '?token=')]"))
    assert block.text.strip().startswith(f"{streamlit_server}/?token="), block.text
    ActionChains(browser).move_to_element(block).perform()  # st.code's copy button shows
    assert block.find_elements(By.XPATH, "./ancestor::*[@data-testid][1]//button")
    screenshot(browser, "studies-annotator-link")
    # Status -> Close the study: asks first, then closes
    _click(browser, browser.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//*[@role='tab'][contains(., 'Status')]"))
    close = WebDriverWait(browser, 30).until(lambda d: d.find_element(  # type: ignore[attr-defined]
        By.XPATH, "//button[.//p[text()='Close the study']]"))
    close.click()
    wait_for_text(browser, "Annotators can no longer answer")
    started = time.monotonic()
    browser.find_element(By.XPATH, "//button[.//p[text()='Yes, close the study']]").click()  # type: ignore[attr-defined]
    wait_for_text(browser, "is closed; its aggregate is stored")
    # the figure for the README (no timed assertion: this machine's load varies)
    print(f"close the study: {time.monotonic() - started:.2f} s from the click to the message")
