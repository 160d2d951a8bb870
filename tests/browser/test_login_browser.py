"""The researcher login in Chromium: it survives a reload, a new tab and a direct address;
logging out revokes it; the cookie is HttpOnly and holds no password."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import open_user_menu, running_server, screenshot

PASSWORD = "correct horse battery"


@pytest.fixture
def password_server(bundled_sqlite: str, tmp_path: Path) -> Iterator[str]:
    with running_server(bundled_sqlite, tmp_path / "streamlit.log",
                        {"ELITR_ADMIN_PASSWORD": PASSWORD}) as url:
        yield url


FIELD = ("css selector", "input[type=password]")
BUTTON = ("xpath", "//button[.//p[text()='Log in']]")


def _login_form(driver: object) -> tuple[object, object] | None:
    """The password field and the Log in button, once both are drawn."""
    fields = driver.find_elements(*FIELD)  # type: ignore[attr-defined]
    buttons = driver.find_elements(*BUTTON)  # type: ignore[attr-defined]
    return (fields[0], buttons[0]) if fields and buttons else None


def _log_in(driver: object, url: str, password: str, wait: Callable[..., None]) -> None:
    from selenium.webdriver.support.wait import WebDriverWait

    driver.get(url)  # type: ignore[attr-defined]
    wait(driver, "Researcher password")
    # the label shows before the whole form is drawn: wait for the field and the button
    field, button = WebDriverWait(driver, 60).until(_login_form)  # type: ignore[arg-type]
    field.send_keys(password)  # type: ignore[attr-defined]
    button.click()  # type: ignore[attr-defined]


def test_login_survives_reload_and_new_tab_and_logout_revokes(
    password_server: str, browser: object, wait_for_text: Callable[..., None]
) -> None:
    url = password_server
    _log_in(browser, url, "wrong", wait_for_text)
    wait_for_text(browser, "Wrong password.")
    _log_in(browser, url, PASSWORD, wait_for_text)
    wait_for_text(browser, "Runs per model and setting")
    open_user_menu(browser)  # Log out sits in the top bar's user menu
    cookie = browser.get_cookie("elitr_session")  # type: ignore[attr-defined]
    assert cookie["httpOnly"] and PASSWORD not in cookie["value"]
    assert len(cookie["value"].split(".")) == 3  # token.expires.signature
    browser.refresh()  # type: ignore[attr-defined]
    wait_for_text(browser, "Runs per model and setting")
    browser.switch_to.new_window("tab")  # type: ignore[attr-defined]
    browser.get(f"{url}/leaderboard")  # type: ignore[attr-defined]
    wait_for_text(browser, "Leaderboard")
    open_user_menu(browser)
    screenshot(browser, "login-kept-in-new-tab")
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    assert "Researcher password" not in body
    # the user menu's Log out is a form POSTing the session's token to /session/end
    browser.find_element("xpath", "//form[@action='/session/end']//button").click()  # type: ignore[attr-defined]
    wait_for_text(browser, "You are logged out.", "Researcher password")
    assert browser.get_cookie("elitr_session") is None  # type: ignore[attr-defined]
    # the same cookie, sent again, opens nothing: the session is revoked in the database
    browser.add_cookie({"name": "elitr_session", "value": cookie["value"]})  # type: ignore[attr-defined]
    browser.get(f"{url}/leaderboard")  # type: ignore[attr-defined]
    wait_for_text(browser, "Researcher password")
    screenshot(browser, "login-after-logout")


def test_a_deep_link_opened_logged_out_logs_in_to_that_page(
    password_server: str, browser: object, wait_for_text: Callable[..., None]
) -> None:
    import time

    _log_in(browser, f"{password_server}/judge_audit", PASSWORD, wait_for_text)
    # (the login form showed at /judge_audit: _log_in waited for it before typing)
    wait_for_text(browser, "Judge against human")
    open_user_menu(browser)
    assert browser.current_url.rstrip("/").endswith("/judge_audit")  # type: ignore[attr-defined]
    # and what a logged-out visitor sees there: the login, no "Page not found" modal
    browser.delete_all_cookies()  # type: ignore[attr-defined]
    browser.get(f"{password_server}/leaderboard")  # type: ignore[attr-defined]
    wait_for_text(browser, "Researcher password")
    time.sleep(2.0)  # the modal would open once the navigation is known
    body = browser.find_element("tag name", "body").text  # type: ignore[attr-defined]
    screenshot(browser, "login-deep-link")
    assert "Page not found" not in body and "Researcher password" in body
