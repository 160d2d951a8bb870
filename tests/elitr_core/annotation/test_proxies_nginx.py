"""Forwarded addresses with nginx's real headers (issue 27, items 5 and 1): Debian's nginx in
front of the server's gate (``WebGate``, as ``server.py`` installs it) around a small app that
answers the client, scheme and host the gate decided.

The browser connects from 127.0.0.2 (all of 127.0.0.0/8 is this machine), nginx from
127.0.0.1, the trusted proxy; so the right answer is always 127.0.0.2, whatever the client
writes. Needs nginx (``make test`` installs Debian's nginx-light).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from elitr_core.annotation.proxies import proxy_setting
from elitr_core.annotation.web_gate import WebGate
from tests.workers import free_port as _free_port

BROWSER = "127.0.0.2"
#: nginx's own recipe for X-Forwarded-* (what docs/deployment.md shows)
X_FORWARDED = """
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $http_host;"""
#: a proxy configured to set Forwarded (RFC 7239), replacing what the client sent
FORWARDED = """
            proxy_set_header Forwarded "for=$remote_addr;proto=$scheme;host=\\"$http_host\\"";"""


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answer what the gate decided: client, scheme, Host."""
    headers = dict((k.decode(), v.decode()) for k, v in scope["headers"])
    body = json.dumps({"client": scope["client"][0], "scheme": scope["scheme"],
                       "host": headers.get("host")}).encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def _gate(trusted: str, family: str, guarded: tuple[str, ...] = ()) -> Iterator[int]:
    """uvicorn (no proxy headers of its own) serving the gate around ``_echo``; its port."""
    port = _free_port()
    gate = WebGate(_echo, proxy_setting(trusted, family), guarded)
    config = uvicorn.Config(gate, host="127.0.0.1", port=port, proxy_headers=False,
                            log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def _nginx(tmp_path: Path, upstream: int, directives: str) -> Iterator[int]:
    """Debian's nginx on a free port, proxying to ``upstream`` with ``directives``."""
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is required: run `make test` (it installs Debian's nginx-light)")
    port = _free_port()
    temp = {name: tmp_path / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    conf = tmp_path / "nginx.conf"
    conf.write_text(f"""
daemon off; master_process off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {temp['body']}; proxy_temp_path {temp['proxy']};
    fastcgi_temp_path {temp['fastcgi']}; uwsgi_temp_path {temp['uwsgi']};
    scgi_temp_path {temp['scgi']};
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};{directives}
        }}
    }}
}}
""")
    proc = subprocess.Popen([nginx, "-e", str(tmp_path / "error.log"), "-p", str(tmp_path),
                             "-c", str(conf)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError((tmp_path / "error.log").read_text()) from None
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _status(port: int, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20,
                                      source_address=(BROWSER, 0))
    conn.request("GET", "/", headers=headers)
    response = conn.getresponse()
    answer = response.status, response.read()
    conn.close()
    return answer


def _ask(port: int, headers: dict[str, str]) -> dict[str, str]:
    status, body = _status(port, headers)
    assert status == 200, body
    return dict(json.loads(body))


LIES = [
    {},
    {"Forwarded": "for=6.6.6.6;proto=https;host=evil.example"},
    {"X-Forwarded-For": "7.7.7.7", "X-Forwarded-Proto": "https",
     "X-Forwarded-Host": "evil.example"},
    {"Forwarded": 'for="[2001:db8::6]";proto=https', "X-Forwarded-For": "7.7.7.7, unknown"},
    {"X-Forwarded-For": ", ".join(["7.7.7.7"] * 800)},  # near nginx's 8 KB header line limit
]


@pytest.mark.parametrize(("family", "directives"), [("x-forwarded-for", X_FORWARDED),
                                                    ("forwarded", FORWARDED)],
                         ids=["x-forwarded-for", "forwarded"])
@pytest.mark.parametrize("lie", LIES, ids=["none", "forwarded", "x-forwarded", "both", "long"])
def test_the_client_is_the_address_nginx_saw(family: str, directives: str,
                                             lie: dict[str, str], tmp_path: Path) -> None:
    with _gate("127.0.0.1", family) as upstream, \
            _nginx(tmp_path, upstream, directives) as port:
        answer = _ask(port, lie)
    assert answer["client"] == BROWSER
    assert answer["scheme"] == "http"


def test_without_trust_the_client_is_nginx(tmp_path: Path) -> None:
    """The default trusts nobody: behind nginx every client is nginx's address, which is
    safe (a shared limit) and never the client's word."""
    with _gate("", "x-forwarded-for") as upstream, \
            _nginx(tmp_path, upstream, X_FORWARDED) as port:
        answer = _ask(port, {"X-Forwarded-For": "7.7.7.7"})
    assert answer["client"] == "127.0.0.1"


@pytest.mark.parametrize(("family", "directives"), [("x-forwarded-for", X_FORWARDED),
                                                    ("forwarded", FORWARDED)],
                         ids=["x-forwarded-for", "forwarded"])
def test_behind_nginx_the_own_origin_is_the_proxy_s(family: str, directives: str,
                                                     tmp_path: Path) -> None:
    """Issue 27 item 1 behind a proxy: the browser's origin is nginx's address (the forwarded
    host and scheme), not the server's own port, nor any other port of the host."""
    with _gate("127.0.0.1", family, ("/",)) as upstream, \
            _nginx(tmp_path, upstream, directives) as port:
        assert _status(port, {"Origin": f"http://127.0.0.1:{port}"})[0] == 200
        assert _status(port, {"Sec-Fetch-Site": "same-origin"})[0] == 200
        for other in (upstream, port + 1):
            assert _status(port, {"Origin": f"http://127.0.0.1:{other}"})[0] == 403
        assert _status(port, {"Origin": f"https://127.0.0.1:{port}"})[0] == 403
        assert _status(port, {"Sec-Fetch-Site": "same-site"})[0] == 403
