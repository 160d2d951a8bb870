"""A page on another port of the same host cannot use the researcher's session (issue 27,
item 1), on ``server.py`` as ``make run`` starts it, in headless Chromium.

The researcher logs in at ``http://127.0.0.1:<app>``; a page served from
``http://127.0.0.1:<other>`` (any local dev server or notebook) then tries, with the
researcher's cookie in the same browser, to open the app's WebSocket and to use the project's
routes (a login ticket, a log out), and to frame the logged-in dashboard (issue 41, item 2:
a frame under a decoy page turns the researcher's clicks into the attacker's). Each is
refused; the app itself keeps working.
"""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from elitr_core.annotation.sessions import check_cookie, redeem_ticket, start_session
from elitr_core.data.database import open_database, reading, writing
from tests.browser.conftest import open_user_menu, running_server, screenshot
from tests.browser.test_login_browser import PASSWORD, _log_in

#: opens the app's WebSocket as Streamlit's own client does and reports what happened
PROBE = """<!doctype html><title>probe</title><body><pre id="out">waiting</pre><script>
const out = document.getElementById("out"); let frames = 0;
const ws = new WebSocket("ws://127.0.0.1:APP/_stcore/stream", ["streamlit", "PLACEHOLDER"]);
ws.binaryType = "arraybuffer";
ws.onopen = () => { out.textContent = "open"; };
ws.onmessage = () => { frames += 1; out.textContent = "open, frames " + frames; };
ws.onerror = () => { out.textContent = "refused"; };
</script></body>"""
#: a form on the other page that posts to the app's log out route (the top frame navigates)
LOGOUT_FORM = """<!doctype html><title>form</title><body>
<form method="post" action="http://127.0.0.1:APP/session/end"><input name="token" value="x">
<button id="go">go</button></form></body>"""

#: the other page framing the dashboard (clickjacking: the frame under a decoy)
FRAME = """<!doctype html><title>frame</title><body><p>decoy</p>
<iframe id="app" src="http://127.0.0.1:APP/" width="1200" height="700"></iframe></body>"""


@contextmanager
def _other_site(pages: dict[str, str]) -> Iterator[str]:
    """A plain HTTP server on another free port of 127.0.0.1 serving ``pages``; its URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            body = pages.get(self.path, "").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _text(driver: object, selector: str = "body") -> str:
    return str(driver.find_element("css selector", selector).text)  # type: ignore[attr-defined]


def _probe(driver: object, url: str) -> str:
    """Load the probe page and return what its WebSocket did once it settled."""
    driver.get(url)  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while _text(driver, "#out") == "waiting" and time.monotonic() < deadline:
        time.sleep(0.3)
    time.sleep(3)  # an open socket goes on receiving the app's frames
    return _text(driver, "#out")


def _framed(driver: object, url: str) -> str:
    """Load a page framing the app; the frame's text once the app would have drawn."""
    driver.get(url)  # type: ignore[attr-defined]
    frame = driver.find_element("id", "app")  # type: ignore[attr-defined]
    driver.switch_to.frame(frame)  # type: ignore[attr-defined]
    try:
        deadline = time.monotonic() + 20  # the app draws its Home page within seconds
        text = ""
        while time.monotonic() < deadline and "Runs per model" not in text:
            time.sleep(1)
            text = _text(driver)
        return text
    finally:
        driver.switch_to.default_content()  # type: ignore[attr-defined]


def test_a_page_on_another_port_is_refused_and_the_app_works(
    bundled_sqlite: str, tmp_path: Path, browser: object, wait_for_text: Callable[..., None],
) -> None:
    env = {"ELITR_ADMIN_PASSWORD": PASSWORD}
    with running_server(bundled_sqlite, tmp_path / "streamlit.log", env) as url:
        app_port = url.rsplit(":", 1)[1]
        pages = {"/probe": PROBE.replace("APP", app_port),
                 "/form": LOGOUT_FORM.replace("APP", app_port),
                 "/frame": FRAME.replace("APP", app_port)}
        # the researcher logs in: the app itself works (its WebSocket, /session/start)
        _log_in(browser, url, PASSWORD, wait_for_text)
        wait_for_text(browser, "Runs per model and setting")
        open_user_menu(browser)
        cookie = browser.get_cookie("elitr_session")  # type: ignore[attr-defined]
        with _other_site(pages) as other:
            assert _probe(browser, f"{other}/probe") == "refused"
            screenshot(browser, "same-origin-probe-refused", settle=0.5)
            assert "Runs per model and setting" not in _framed(browser, f"{other}/frame")
            screenshot(browser, "same-origin-frame-refused", settle=0.5)
            # a form on the other page posting to the log out route: refused (403)
            browser.get(f"{other}/form")  # type: ignore[attr-defined]
            browser.find_element("id", "go").click()  # type: ignore[attr-defined]
            wait_for_text(browser, "answers only the dashboard's own pages")
            # a link to a login ticket from the other page: refused, the ticket stays unused
            with writing(open_database(bundled_sqlite)) as session:
                ticket = start_session(session, "test")
            browser.get(f"{other}/form")  # type: ignore[attr-defined]
            browser.execute_script(  # type: ignore[attr-defined]
                "location.assign(arguments[0])", f"{url}/session/start?ticket={ticket}")
            wait_for_text(browser, "answers only the dashboard's own pages")
        with reading(open_database(bundled_sqlite)) as session:
            assert check_cookie(session, cookie["value"])  # not logged out by the form
        with writing(open_database(bundled_sqlite)) as session:
            assert redeem_ticket(session, ticket) is not None  # the link did not use it
        # and the app itself still works, logged in, its WebSocket included
        browser.get(url)  # type: ignore[attr-defined]
        wait_for_text(browser, "Runs per model and setting")
        open_user_menu(browser)
        screenshot(browser, "same-origin-app-works")
