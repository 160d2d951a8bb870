"""Real-browser fixtures: `streamlit run server.py` on a free port, driven by headless Chromium.

Uses Debian's chromium and chromedriver (installed by `make test`). Screenshots go to the
git-ignored ``artifacts/screenshots/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.workers import answers
from tests.workers import free_port as _free_port

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
HERE = Path(__file__).resolve().parent


@contextmanager
def running_server(database_url: str, log_path: Path,
                   env: dict[str, str] | None = None) -> Iterator[str]:
    """``streamlit run server.py`` (what ``make run`` starts) on a free port; yield its URL."""
    port = _free_port()
    # no start-up warm-up (ui.warm): it would compete with the browser for the 2 cores
    full_env = {**os.environ, "DATABASE_URL": database_url, "ELITR_WARM": "0", **(env or {})}
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "server.py", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        if not answers(f"{url}/_stcore/health", 90):
            raise RuntimeError(f"streamlit did not start: {log_path.read_text()}")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@pytest.fixture
def streamlit_server(bundled_sqlite: str, tmp_path: Path) -> Iterator[str]:
    """Start the app against a copy of the bundled database; yield its base URL."""
    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        yield url


@pytest.fixture(scope="session")
def shared_bundled(bundled_sqlite_template: Path,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A copy of the bundled database that no test writes to (SQLite URL), for
    :func:`shared_server`."""
    from db.engine import dispose_engines

    target = tmp_path_factory.mktemp("shared-bundled") / "bundled.db"
    shutil.copy(bundled_sqlite_template, target)
    yield f"sqlite:///{target}"
    dispose_engines()


@pytest.fixture(scope="session")
def shared_server(shared_bundled: str, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[str]:
    """One app on the bundled data for the tests that only read it (analysis pages, Home, the
    Leaderboard and drilldown tables, the grids' CSV): each test still gets its own fresh
    Chromium; a server of its own would only add a start and first renders (10-20 s each on
    two shared cores). A test that writes to its database uses :func:`streamlit_server`."""
    log = tmp_path_factory.mktemp("shared-server") / "streamlit.log"
    with running_server(shared_bundled, log) as url:
        yield url


@pytest.fixture(scope="session")
def browser_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One HTTP and JavaScript code cache for the Chromiums of this process (xdist worker),
    which run one after another: each test's browser still starts on an empty profile (no
    cookies, storage or history) but takes Streamlit's hashed, immutable JavaScript chunks
    from the cache, with V8's compiled code, instead of fetching, parsing and compiling them
    cold on every page load (measured: 9.7 instead of 10.2 CPU-s and 8.1 instead of 9.2 s for
    a start, Home and the Leaderboard). A fetch a test looks for is still made: the app's
    pages and data are sent ``no-cache``, and the plain-text test's beacon answers 204
    without caching headers; ``performance`` lists a resource taken from the cache too."""
    return tmp_path_factory.mktemp("chrome-cache")


@pytest.fixture
def browser(tmp_path: Path, browser_cache: Path) -> Iterator[object]:
    """A headless Debian Chromium driven by Selenium through Debian's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.fail("chromium and chromedriver are required: run `make test` (it installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'chrome'}",
        f"--disk-cache-dir={browser_cache}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _loose(text: str) -> str:
    """``text`` lower-cased with every run of white space (no-break spaces too) as one space."""
    return " ".join(text.replace("\u00a0", " ").split()).lower()


@pytest.fixture
def wait_for_text() -> Callable[..., None]:
    """Wait until the page body contains every given text."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def wait(driver: object, *texts: str, timeout: float = 60) -> None:
        wanted = [_loose(t) for t in texts]
        polls = 0

        def ready(d: object) -> bool:
            # Selenium's body.text (the check) makes the renderer lay out and walk the whole
            # page: 75-260 ms of its CPU a read on the analysis pages, twice a second for as
            # long as a wait lasts. document.body.innerText costs 3-5 ms: it says when a read
            # of body.text is worth making (compared loosely: case, spaces and no-break spaces
            # aside, so it never holds back a text that body.text would show); body.text is
            # still read every 10th poll whatever innerText says.
            nonlocal polls
            polls += 1
            if polls % 10:
                try:
                    inner = d.execute_script(  # type: ignore[attr-defined]
                        "return document.body ? document.body.innerText : '';")
                except WebDriverException:
                    inner = None  # the page is being replaced: let body.text's read decide
                if isinstance(inner, str) and not all(w in _loose(inner) for w in wanted):
                    return False
            try:
                body = d.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]
            except WebDriverException as error:
                # the same stale body, when the old document goes between chromedriver's
                # finding it and reading it ("unknown error: ... Node with given id does not
                # belong to the document"): seen once the JS came from the browser cache
                if "does not belong to the document" not in str(error.msg):
                    raise
                return False
            return all(t in body for t in texts)

        # a body read while the page is replaced (the login's redirect through /session/start)
        # is stale: look again, as for a text not shown yet
        WebDriverWait(driver, timeout,
                      ignored_exceptions=(StaleElementReferenceException,)).until(ready)

    return wait


def wait_idle(driver: object, timeout: float = 120) -> None:
    """Until the app's script run has finished and no spinner or skeleton is left."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(lambda d: d.execute_script(  # type: ignore[attr-defined]
        "const app = document.querySelector('[data-test-script-state]');"
        "return !!app && app.getAttribute('data-test-script-state') === 'notRunning' && "
        "!document.querySelector('[data-testid=stSkeleton], [data-testid=stSpinner]');"))


def screenshot(driver: object, name: str, *, settle: float = 2.0) -> Path:
    """Save a PNG under artifacts/screenshots/ and return its path.

    Data grids draw on a canvas after the page text is there: give them ``settle`` seconds.
    """
    time.sleep(settle)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    driver.save_screenshot(str(path))  # type: ignore[attr-defined]
    return path


def follow_nav_link(driver: object, title: str, timeout: float = 120) -> None:
    """Open the page ``title`` through the top navigation bar, as a user does: its section's
    menu (``ui.navigation.RESEARCHER_PAGES``), then the page's link."""
    from selenium.webdriver.support.ui import WebDriverWait

    from ui.navigation import RESEARCHER_PAGES

    section = next(name for name, entries in RESEARCHER_PAGES.items()
                   if any(t == title for _, t, _ in entries))
    menu = f"//*[@data-testid='stTopNavSection'][contains(., '{section}')]"
    link = f"//a[@data-testid='stTopNavDropdownLink'][contains(., '{title}')]"
    WebDriverWait(driver, timeout).until(
        lambda d: d.find_elements("xpath", menu))[0].click()  # type: ignore[attr-defined]
    WebDriverWait(driver, 30).until(
        lambda d: [e for e in d.find_elements("xpath", link)  # type: ignore[attr-defined]
                   if e.is_displayed()])[0].click()


USER_MENU = ("css selector", ".st-key-elitr-user-menu button")


def open_user_menu(driver: object, timeout: float = 60) -> None:
    """Open the researcher's menu at the top bar's right (``ui.layout.user_menu``) and wait
    until its Log out shows: the proof that this browser is signed in."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, timeout).until(
        lambda d: [e for e in d.find_elements(*USER_MENU)  # type: ignore[attr-defined]
                   if e.is_displayed()])[0].click()
    WebDriverWait(driver, timeout).until(lambda d: [
        e for e in d.find_elements(  # type: ignore[attr-defined]
            "xpath", "//*[self::button or self::p][normalize-space()='Log out']")
        if e.is_displayed()])
