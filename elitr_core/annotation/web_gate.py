"""The gate in front of the server: who the client is, and whether a browser request comes from
the dashboard's own page.

One ASGI middleware (:class:`WebGate`, installed by ``server.py``) on every HTTP and WebSocket
request:

1. the client's address and scheme as :func:`elitr_core.annotation.proxies.origin` decides
   (forwarding headers only from trusted proxies, only the family they set), so the login
   limit sees the real client and the cookie is ``Secure`` when a trusted proxy says HTTPS;
2. the app's WebSocket (``/_stcore/stream``) and the project's own HTTP routes accept a browser
   request only from the app's own origin: scheme, host and port, where scheme and host are
   the forwarded ones behind a trusted proxy. Streamlit admits any ``Origin`` whose host name
   is allowed, on any port, so a page served from another port of the same host (a notebook,
   a dev server) could open the WebSocket with the researcher's cookie and drive the app.
   Browsers send ``Origin`` on every WebSocket and every POST, and ``Sec-Fetch-Site`` on every
   request to a secure or local origin (navigations included); either naming another origin
   refuses the request. A request with neither (curl, a test client) is not a browser's and
   passes: it carries no one's cookie by accident;
3. every request names an allowed host, and in the no-login mode comes from this machine
   (:class:`elitr_core.annotation.hosts.HostPolicy`): a DNS-rebinding page passes 2 (its
   origin is its own name) but not this;
4. every HTTP answer forbids framing (``X-Frame-Options: DENY`` and CSP
   ``frame-ancestors 'none'``: a page of another origin cannot frame the logged-in dashboard
   to trick clicks), MIME sniffing, and a ``Referer`` to other sites (an annotator's link
   carries their token; ``same-origin``, not ``no-referrer``, under which Chromium sends
   ``Origin: null`` on the app's own log-out POST and check 2 refuses it)
   (:data:`SECURITY_HEADERS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from elitr_core.annotation.hosts import NOT_LOCAL, WRONG_HOST, HostPolicy
from elitr_core.annotation.proxies import Origin, ProxySetting, origin

Scope = Mapping[str, Any]
Endpoint = tuple[str, str, int]
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Sec-Fetch-Site values of a request that the app's own page (or the address bar) made
_OWN_SITE = {"same-origin", "none"}
REFUSED = "This address answers only the dashboard's own pages: open the dashboard itself."
#: sent with every HTTP answer (deploy/nginx sends them too, for its own answers)
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


def _endpoint(scheme: str, netloc: str) -> Endpoint | None:
    """(scheme, host, port) of ``scheme://netloc``, default port filled in; None if malformed."""
    scheme = scheme.strip().lower()
    if scheme not in _DEFAULT_PORTS or not netloc or any(c in netloc for c in "/?#@\\ "):
        return None
    try:
        parts = urlsplit(f"{scheme}://{netloc}")
        port = parts.port or _DEFAULT_PORTS[scheme]
    except ValueError:
        return None
    return (scheme, parts.hostname, port) if parts.hostname else None


def own_origin(found: Origin, headers: Mapping[str, str]) -> Endpoint | None:
    """The app's own origin as this request reached it: the (forwarded) scheme, made ``http``
    or ``https``, and the forwarded host, else the ``Host`` header."""
    scheme = {"ws": "http", "wss": "https"}.get(found.scheme, found.scheme)
    return _endpoint(scheme, found.host or headers.get("host", ""))


def from_own_page(found: Origin, headers: Mapping[str, str]) -> bool:
    """Whether a request with these (lower-case) ``headers`` came from the app's own origin,
    or from no web page at all (neither ``Origin`` nor ``Sec-Fetch-Site``)."""
    site = headers.get("sec-fetch-site")
    if site is not None and site.strip().lower() not in _OWN_SITE:
        return False
    sent = headers.get("origin")
    if sent is None:
        return True
    scheme, _, netloc = sent.strip().partition("://")  # "null" (an opaque origin) has no netloc
    claimed = _endpoint(scheme, netloc)
    return claimed is not None and claimed == own_origin(found, headers)


class WebGate:
    """ASGI middleware: apply :func:`origin` to every request, refuse a browser request from
    another origin on the WebSocket and on ``guarded`` paths (the project's routes), a host
    or client that ``policy`` refuses, and add :data:`SECURITY_HEADERS` to every answer."""

    def __init__(self, app: Any, setting: ProxySetting | None = None,
                 guarded: Iterable[str] = (), policy: HostPolicy | None = None) -> None:
        self.app = app
        self.setting = setting or ProxySetting()
        self.guarded = frozenset(guarded)
        self.policy = policy or HostPolicy()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in {"http", "websocket"} or not scope.get("client"):
            await self.app(scope, receive, send)
            return
        pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        found = origin(scope["client"][0], scope.get("scheme", "http"), pairs, self.setting)
        scope = {**scope, "client": (found.client, scope["client"][1]), "scheme": found.scheme}
        headers = {k.lower(): v for k, v in pairs}
        own = own_origin(found, headers)
        refusal = (WRONG_HOST if not self.policy.host_allowed(own[1] if own else None)
                   else NOT_LOCAL if not self.policy.client_allowed(found.client)
                   else None)
        checked = scope["type"] == "websocket" or scope.get("path") in self.guarded
        if refusal is None and checked and not from_own_page(found, headers):
            refusal = REFUSED
        if refusal is not None:
            await _refuse(scope, receive, send, refusal)
            return
        await self.app(scope, receive, _with_headers(send))


def _with_headers(send: Any) -> Any:
    """``send`` adding :data:`SECURITY_HEADERS` to an HTTP answer's start."""
    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", ()),
                                               *SECURITY_HEADERS]}
        await send(message)
    return sending


async def _refuse(scope: Scope, receive: Any, send: Any, text: str) -> None:
    """403 for HTTP; for a WebSocket, a close before the handshake (the server answers 403)."""
    if scope["type"] == "websocket":
        await receive()  # websocket.connect
        await send({"type": "websocket.close", "code": 1008})
        return
    body = text.encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()),
                            *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": body})
