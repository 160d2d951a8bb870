"""The gate in front of the server: who the client is.

One ASGI middleware (:class:`WebGate`, installed by ``server.py``) on every HTTP and WebSocket
request: the client's address and scheme as :func:`elitr_core.annotation.proxies.origin`
decides (forwarding headers only from trusted proxies, only the family they set), so the login
limit sees the real client and the cookie is ``Secure`` when a trusted proxy says HTTPS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from elitr_core.annotation.proxies import ProxySetting, origin

Scope = Mapping[str, Any]


class WebGate:
    """ASGI middleware: apply :func:`origin` to every request."""

    def __init__(self, app: Any, setting: ProxySetting | None = None) -> None:
        self.app = app
        self.setting = setting or ProxySetting()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] not in {"http", "websocket"} or not scope.get("client"):
            await self.app(scope, receive, send)
            return
        pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        found = origin(scope["client"][0], scope.get("scheme", "http"), pairs, self.setting)
        scope = {**scope, "client": (found.client, scope["client"][1]), "scheme": found.scheme}
        await self.app(scope, receive, send)
