"""Sessions and login behind a proxy, on the real server (``streamlit run server.py``), issue 19
item 6: forwarding headers count only from ELITR_TRUSTED_PROXIES, the cookie is Secure when a
trusted proxy says HTTPS, and logging out is a POST with the session's own token."""

from __future__ import annotations

import http.client
import urllib.parse
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import select

from db.models import LoginAttempt
from elitr_core.annotation.sessions import (
    FREE_FAILURES,
    check_cookie,
    logout_token,
    redeem_ticket,
    start_session,
)
from elitr_core.data.database import open_database, reading, writing
from tests.browser.conftest import running_server, screenshot
from tests.browser.test_login_browser import PASSWORD, _log_in

pytestmark = pytest.mark.browser


def _request(url: str, method: str, path: str, headers: dict[str, str] | None = None,
             body: str | None = None) -> http.client.HTTPResponse:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    response.read()
    return response


def _set_cookie(url: str, db: str, headers: dict[str, str]) -> str:
    """The Set-Cookie header of /session/start for a fresh ticket, sent with ``headers``."""
    with writing(open_database(db)) as session:
        ticket = start_session(session, "test")
    response = _request(url, "GET", f"/session/start?ticket={ticket}", headers)
    assert response.status == 303
    return response.getheader("set-cookie") or ""


def test_cookie_is_secure_only_when_a_trusted_proxy_says_https(
    bundled_sqlite: str, tmp_path: Path
) -> None:
    https = ({"X-Forwarded-Proto": "https"}, {"Forwarded": "for=203.0.113.9;proto=https"})
    with running_server(bundled_sqlite, tmp_path / "untrusted.log") as url:
        for headers in https:  # any client may write these: not believed by default
            cookie = _set_cookie(url, bundled_sqlite, headers)
            assert "elitr_session=" in cookie and "secure" not in cookie.lower()
    # behind a proxy, a login (the no-login mode answers this machine's clients only)
    login = {"ELITR_ADMIN_PASSWORD": PASSWORD}
    with running_server(bundled_sqlite, tmp_path / "trusted.log",
                        {"ELITR_TRUSTED_PROXIES": "127.0.0.1,::1", **login}) as url:
        x_forwarded, forwarded = https
        assert "secure" in _set_cookie(url, bundled_sqlite, x_forwarded).lower()
        # the proxy sets X-Forwarded-* (the default): a Forwarded it passed through is not read
        assert "secure" not in _set_cookie(url, bundled_sqlite, forwarded).lower()
        assert "secure" not in _set_cookie(url, bundled_sqlite, {}).lower()
    with running_server(bundled_sqlite, tmp_path / "forwarded.log",
                        {"ELITR_TRUSTED_PROXIES": "127.0.0.1,::1",
                         "ELITR_PROXY_HEADER": "forwarded", **login}) as url:
        assert "secure" in _set_cookie(url, bundled_sqlite, forwarded).lower()
        assert "secure" not in _set_cookie(url, bundled_sqlite, x_forwarded).lower()


def test_log_out_is_a_post_with_the_session_s_token(bundled_sqlite: str, tmp_path: Path) -> None:
    with writing(open_database(bundled_sqlite)) as session:
        ticket = start_session(session, "test")
    with writing(open_database(bundled_sqlite)) as session:
        cookie = redeem_ticket(session, ticket)
        assert cookie is not None
        token = logout_token(session, cookie.value)
    jar = {"Cookie": f"elitr_session={cookie.value}",
           "Content-Type": "application/x-www-form-urlencoded"}

    def alive() -> bool:
        with reading(open_database(bundled_sqlite)) as session:
            return check_cookie(session, cookie.value)

    with running_server(bundled_sqlite, tmp_path / "streamlit.log") as url:
        # a link (GET) from another site, or a form without the token, logs nobody out
        assert _request(url, "GET", "/session/end", jar).status == 405
        assert _request(url, "POST", "/session/end", jar, "").status == 403
        assert _request(url, "POST", "/session/end", jar, "token=" + "0" * 64).status == 403
        assert alive()
        response = _request(url, "POST", "/session/end", jar, f"token={token}")
        assert response.status == 303 and "logged_out" in (response.getheader("location") or "")
        assert 'elitr_session=""' in (response.getheader("set-cookie") or "")
        assert not alive()


def _attempt_clients(db: str) -> list[str]:
    with reading(open_database(db)) as session:
        return list(session.exec(select(LoginAttempt.client).order_by(LoginAttempt.id)))


@pytest.mark.parametrize(("trusted", "limited"), [("", True), ("127.0.0.1,::1", False)])
def test_an_invented_forwarded_for_does_not_escape_the_login_limit(
    trusted: str, limited: bool, bundled_sqlite: str, tmp_path: Path, browser: object,
    wait_for_text: Callable[..., None],
) -> None:
    """Chromium sends a new X-Forwarded-For with every wrong password (on the page load and the
    WebSocket alike). Without trusted proxies the attempts all count against the real peer and
    the limit holds; with the local peer trusted (the positive control), the invented
    addresses are recorded as given, so the headers did reach the server."""
    env = {"ELITR_ADMIN_PASSWORD": PASSWORD, "ELITR_TRUSTED_PROXIES": trusted}
    with running_server(bundled_sqlite, tmp_path / "streamlit.log", env) as url:
        for guess in range(FREE_FAILURES + 1):
            browser.execute_cdp_cmd("Network.enable", {})  # type: ignore[attr-defined]
            browser.execute_cdp_cmd(  # type: ignore[attr-defined]
                "Network.setExtraHTTPHeaders",
                {"headers": {"X-Forwarded-For": f"203.0.113.{guess + 1}"}})
            _log_in(browser, url, f"wrong {guess}", wait_for_text)
            expected = "Too many wrong passwords" if limited and guess == FREE_FAILURES \
                else "Wrong password."
            wait_for_text(browser, expected)
        screenshot(browser, f"login-limit-forwarded-{'trusted' if trusted else 'default'}")
    clients = _attempt_clients(bundled_sqlite)
    if limited:
        assert set(clients) == {"localhost"} and len(clients) == FREE_FAILURES
    else:
        assert clients == [f"203.0.113.{i + 1}" for i in range(FREE_FAILURES + 1)]
