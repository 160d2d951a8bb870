"""The server entry point: the dashboard (``app.py``) plus two small HTTP routes that set and
clear the researcher's HttpOnly session cookie (a Streamlit script cannot set one itself).

``streamlit run server.py`` serves both (Streamlit finds the ``st.App`` below). Every HTTP and
WebSocket request first passes :class:`~elitr_core.annotation.web_gate.WebGate`: forwarding
headers count only from the proxies of ``ELITR_TRUSTED_PROXIES``, and only the family of
``ELITR_PROXY_HEADER`` (``elitr_core.annotation.proxies``), so the login limit sees the real
client and the cookie is ``Secure`` when a trusted proxy says HTTPS; and the WebSocket and
the routes below answer a browser only from the app's own origin (scheme, host and port),
only allowed ``Host`` names, in the no-login mode only this machine's clients
(``elitr_core.annotation.hosts``), and every answer forbids framing. Streamlit's development
messages (``clear_cache``, which empties every cache for all users, and the like) are dropped
outside its development mode (:class:`DevMessagesDropped`). An empty or malformed researcher
password setting stops the start with one line.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs

import streamlit as st
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from streamlit import config
from streamlit.proto.BackMsg_pb2 import BackMsg

from elitr_core import settings
from elitr_core.annotation.auth import check_password_setting
from elitr_core.annotation.hosts import HostPolicy, host_policy
from elitr_core.annotation.proxies import ProxySetting, proxy_setting
from elitr_core.annotation.sessions import COOKIE_NAME, check_logout_token, redeem_ticket, revoke
from elitr_core.annotation.web_gate import WebGate
from elitr_core.data.bounded import BodyTooLarge, read_body
from elitr_core.data.database import get_engine, open_database, writing
from elitr_core.errors import UserError
from ui.auth_ui import auth_configured


def _no_uvicorn_proxy_headers() -> None:
    """uvicorn believes X-Forwarded-For/-Proto from 127.0.0.1 by default, through a
    ProxyHeadersMiddleware it wraps around this app once it has imported this module (the
    FORWARDED_ALLOW_IPS it reads was read before); WebGate decides instead, so uvicorn's
    wrapper becomes a pass-through (tests/browser/test_proxy_browser.py checks the result)."""
    import uvicorn.config

    def passthrough(app: object, trusted_hosts: object = None) -> object:
        return app

    # a function where uvicorn expects its class: it only calls it
    uvicorn.config.ProxyHeadersMiddleware = passthrough  # type: ignore[assignment,misc]


#: The log-out form's body: ``token=`` and a token of 43 characters; anything longer is refused.
MAX_END_BODY = 1024
T = TypeVar("T")
_PAGE_NAME = re.compile(r"[a-z][a-z0-9_]{0,40}")


def session_start(request: Request) -> RedirectResponse:
    """Redeem a one-time login ticket for the signed session cookie, then go home."""
    with writing(open_database(settings.database_url())) as session:
        cookie = redeem_ticket(session, request.query_params.get("ticket", ""))
    # back to the page the researcher asked for before logging in (a page name, not a URL:
    # nothing else is followed, so the route cannot send anyone to another site)
    page = request.query_params.get("next", "")
    response = RedirectResponse("../" + (page if _PAGE_NAME.fullmatch(page) else ""),
                                status_code=303)
    if cookie is not None:
        response.set_cookie(COOKIE_NAME, cookie.value, max_age=cookie.max_age, path="/",
                            httponly=True, samesite="lax",
                            secure=request.url.scheme == "https")
    return response


def _end(value: str, token: str) -> bool:
    """Revoke the cookie's session when ``token`` is its logout token; False when it is not."""
    with writing(open_database(settings.database_url())) as session:
        if not check_logout_token(session, value, token):
            return False
        revoke(session, value)
        return True


async def session_end(request: Request) -> Response:
    """Log out (a POST with the session's logout token, so that a link or a form on another
    site cannot): revoke the session in the database, delete the cookie, go to the login."""
    if request.method != "POST":  # a link (GET) from anywhere logs nobody out
        return PlainTextResponse("Log out with the dashboard's own Log out button.",
                                 status_code=405, headers={"Allow": "POST"})
    value = request.cookies.get(COOKIE_NAME, "")
    try:  # the form holds one token: a long body is refused as it arrives, never held whole
        body = await read_body(request.stream(), declared=request.headers.get("content-length"),
                               max_bytes=MAX_END_BODY)
    except BodyTooLarge:
        return PlainTextResponse("Log out with the dashboard's own Log out button.",
                                 status_code=413)
    form = parse_qs(body.decode("latin-1"))
    token = (form.get("token") or [""])[0]
    if value and not await run_in_threadpool(_end, value, token):
        return PlainTextResponse("Log out with the dashboard's own Log out button.",
                                 status_code=403)
    response = RedirectResponse("../?logged_out=1", status_code=303)
    response.delete_cookie(COOKIE_NAME, path="/")
    return response


@asynccontextmanager
async def lifespan(_app: object) -> AsyncIterator[None]:
    """Once the runtime is up (its caches exist): import the statistics and figure stack and
    compute the analysis pages' default views in a background thread (``ui.warm``), so that
    the first visit of a page does not pay for them."""
    from ui.warm import start

    start()
    yield


def _at_start(check: Callable[[], T]) -> T:
    """``check()`` while the server starts: a :class:`UserError` (a setting it cannot take, a
    pool that cannot fit) stops the server with its one line, never a traceback."""
    try:
        return check()
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None


def _proxy_setting() -> ProxySetting:
    """ELITR_TRUSTED_PROXIES and ELITR_PROXY_HEADER, read once at start; a malformed entry
    stops the server with one line naming it (never trusting nothing or everything by
    mistake)."""
    return _at_start(proxy_setting)


def _host_policy() -> HostPolicy:
    """The researcher password's variables checked (an empty or malformed one stops the
    server), then ELITR_ALLOWED_HOSTS read for this login mode (a malformed name stops it)."""
    _at_start(check_password_setting)
    return _at_start(lambda: host_policy(local=not auth_configured()))


#: BackMsg types only Streamlit's development tools send; any client could send them
DEV_ONLY = frozenset({"clear_cache", "set_run_on_save", "load_git_info",
                      "debug_disconnect_websocket", "debug_shutdown_runtime"})
_LOG = logging.getLogger("elitr.server")


def _dev_only(data: bytes) -> bool:
    """Whether a WebSocket frame is a development-only BackMsg (a frame that does not parse
    goes on to Streamlit, which closes the connection)."""
    try:
        return BackMsg.FromString(data).WhichOneof("type") in DEV_ONLY
    except Exception:  # noqa: BLE001 - protobuf's DecodeError and friends: Streamlit's to judge
        return False


class DevMessagesDropped:
    """ASGI middleware: outside Streamlit's development mode, drop a client's development
    BackMsgs (:data:`DEV_ONLY`). Streamlit itself refuses only the two ``debug_*`` ones; its
    handler runs ``clear_cache`` for any client, the login page's included, and every cache
    of every user (the warmed analysis views too) is emptied."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket" or config.get_option("global.developmentMode"):
            await self.app(scope, receive, send)
            return

        async def receiving() -> Any:
            while True:
                message = await receive()
                data = message.get("bytes") if message["type"] == "websocket.receive" else None
                if not data or not _dev_only(data):
                    return message
                _LOG.warning("dropped a development-only message from %s", scope.get("client"))

        await self.app(scope, receiving, send)


def _settings_parse() -> None:
    """Every boolean and number setting parsed now (``settings.check``): a value one cannot
    take (``ELITR_SESSION_HOURS=nan``, ``ELITR_WARM=maybe``) stops the server with one line
    naming the variable and the values accepted, before any page or login reads it."""
    _at_start(settings.check)


def _pool_fits() -> None:
    """On PostgreSQL, this replica's share of the server's connections (``ELITR_REPLICAS``,
    ``db.engine.pool_plan``) is sized now; a share too small stops the server with the fix,
    before any participant meets a full pool."""
    _at_start(lambda: get_engine(settings.database_url()))


def _navigation_only() -> None:
    """Pages come from app.py's st.navigation only. Streamlit also treats a pages/ folder as
    the old multipage layout until some session has run app.py's st.navigation, so the first
    visit after a start to a deep link (/leaderboard) would run that page's script alone,
    without app.py's login."""
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False


_no_uvicorn_proxy_headers()
_navigation_only()
_settings_parse()
_pool_fits()
settings.announce_session_routes()  # ui/auth_ui.session_routes: the routes exist
ROUTES = [Route("/session/start", session_start),
          Route("/session/end", session_end, methods=["GET", "POST"])]
# the gate also refuses the WebSocket and these routes to pages of any other origin
app = st.App("app.py", lifespan=lifespan, routes=ROUTES,
             middleware=[Middleware(WebGate, setting=_proxy_setting(),
                                    guarded=[route.path for route in ROUTES],
                                    policy=_host_policy()),
                         Middleware(DevMessagesDropped)])
