"""server.py's start-up checks and the browser surface it serves (issue 41, item 2), on the
real server as ``make run`` starts it: a malformed ELITR_TRUSTED_PROXIES, an empty or
malformed password setting or a malformed ELITR_ALLOWED_HOSTS stops it with one line; every
answer forbids framing; a DNS-rebinding name and, without a login, a client of another machine
are refused; a client's ``clear_cache`` empties no cache."""

from __future__ import annotations

import asyncio
import http.client
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from websockets.exceptions import InvalidStatus

from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.guidelines import set_study_examples
from elitr_core.annotation.hosts import NOT_LOCAL, WRONG_HOST
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database, writing
from tests.browser.conftest import running_server
from tests.streamlit_ws import Session

ROOT = Path(__file__).resolve().parents[1]
HASH = "pbkdf2_sha256$600000$" + "ab" * 16 + "$" + "cd" * 32  # well formed


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "import server"], cwd=ROOT,
                          env={**os.environ, "ELITR_WARM": "0", **env},
                          capture_output=True, text=True, timeout=120)


def test_a_malformed_trusted_proxy_list_stops_the_server_with_one_line() -> None:
    done = _start({"ELITR_TRUSTED_PROXIES": "127.0.0.1,proxy.local"})
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ELITR_TRUSTED_PROXIES: 'proxy.local' is not an IP")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("env", "line"), [
    ({"ELITR_ADMIN_PASSWORD": ""}, "error: ELITR_ADMIN_PASSWORD is set but empty"),
    ({"ELITR_ADMIN_PASSWORD": "   "}, "error: ELITR_ADMIN_PASSWORD is set but empty"),
    ({"ELITR_ADMIN_PASSWORD_HASH": ""}, "error: ELITR_ADMIN_PASSWORD_HASH is set but empty"),
    ({"ELITR_ADMIN_PASSWORD_HASH": "hunter2"},
     "error: ELITR_ADMIN_PASSWORD_HASH is not a password hash"),
    ({"ELITR_ADMIN_PASSWORD_HASH": HASH.replace("$600000$", "$0$")},
     "error: ELITR_ADMIN_PASSWORD_HASH is not a password hash"),
    ({"ELITR_ADMIN_PASSWORD_HASH": HASH.replace("$600000$", "$99999999999$")},
     "error: ELITR_ADMIN_PASSWORD_HASH is not a password hash"),
    ({"ELITR_ALLOWED_HOSTS": "https://dash.example.org"},
     "error: ELITR_ALLOWED_HOSTS: 'https://dash.example.org' is not a host name"),
], ids=["empty", "blank", "empty-hash", "not-a-hash", "0-iterations", "huge-iterations",
        "url-as-host"])
def test_a_bad_login_or_host_setting_stops_the_server_with_one_line(
        env: dict[str, str], line: str) -> None:
    """An empty password once counted as "no login": behind nginx every page was open."""
    done = _start(env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(line), done.stderr
    assert "Traceback" not in done.stderr


def _get(url: str, host: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    port = int(url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.putrequest("GET", "/", skip_host=True)
    conn.putheader("Host", host or f"127.0.0.1:{port}")
    for name, value in (headers or {}).items():
        conn.putheader(name, value)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read().decode()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def _framing_refused(headers: dict[str, str]) -> None:
    assert headers.get("x-frame-options") == "DENY", headers
    assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), headers
    assert headers.get("x-content-type-options") == "nosniff"
    assert headers.get("referrer-policy") == "same-origin"


@pytest.fixture
def annotator_db(bundled_sqlite: str) -> tuple[str, str]:
    """The bundled data with one study and an annotator's token."""
    with writing(open_database(bundled_sqlite)) as session:
        create_study(session, StudySpec(name="probe", per_item=2, split="test2",
                                        setting="qa", mode="st"))
        return bundled_sqlite, add_annotator(session, "probe-annotator", "silver")


async def _rebinding(url: str, token: str) -> None:
    """A page of rebind.example (resolved to 127.0.0.1) opening the WebSocket from its own
    origin: the same-origin check alone passes it."""
    port = int(url.rsplit(":", 1)[1])
    with pytest.raises(InvalidStatus) as refused:
        await Session.open(f"http://rebind.example:{port}", query=f"token={token}",
                           address=("127.0.0.1", port))
    assert refused.value.response.status_code == 403


async def _clear_cache(url: str, db: str, token: str) -> str:
    """Draw the annotation page (its worked examples are cached for a minute), change the
    examples in the database, send ``clear_cache`` and draw the page again."""
    async with await Session.open(url, query=f"token={token}") as s:
        assert "Worked examples" in s.page.text()
        with writing(open_database(db)) as session:
            set_study_examples(session, "probe", [{
                "question": "Cache probe question?", "reference": "Probe reference",
                "response": "Probe response", "score": 5, "why": "a probe"}])
        msg = BackMsg()
        msg.clear_cache = True
        await s.send(msg)
        return (await s.rerun()).text()


def test_the_local_server_refuses_framing_rebinding_other_machines_and_clear_cache(
        annotator_db: tuple[str, str], tmp_path: Path) -> None:
    db, token = annotator_db
    # a trusted proxy on this machine, so that a client of another machine can be played
    env = {"ELITR_TRUSTED_PROXIES": "127.0.0.1,::1"}
    with running_server(db, tmp_path / "streamlit.log", env) as url:
        status, headers, _ = _get(url)
        assert status == 200
        _framing_refused(headers)
        status, headers, body = _get(url, host="rebind.example")
        assert (status, body) == (403, WRONG_HOST)
        _framing_refused(headers)
        assert _get(url, host="localhost")[0] == 200
        status, _, body = _get(url, headers={"X-Forwarded-For": "203.0.113.7"})
        assert (status, body) == (403, NOT_LOCAL)  # the no-login mode behind a proxy
        assert _get(url, headers={"X-Forwarded-For": "127.0.0.1"})[0] == 200
        asyncio.run(_rebinding(url, token))
        page = asyncio.run(_clear_cache(url, db, token))
    assert "Worked examples" in page
    assert "Cache probe question?" not in page  # the cache survived the client's clear_cache
    log = (tmp_path / "streamlit.log").read_text()
    assert "dropped a development-only message" in log and "Traceback" not in log


def test_with_a_login_the_listed_hosts_are_answered(bundled_sqlite: str,
                                                    tmp_path: Path) -> None:
    env = {"ELITR_ADMIN_PASSWORD": "correct horse battery",
           "ELITR_ALLOWED_HOSTS": "dash.example.org", "ELITR_TRUSTED_PROXIES": "127.0.0.1"}
    with running_server(bundled_sqlite, tmp_path / "streamlit.log", env) as url:
        status, headers, _ = _get(url, host="dash.example.org")
        assert status == 200
        _framing_refused(headers)
        assert _get(url, host="localhost:8501")[0] == 200  # a health check on the machine
        status, _, body = _get(url, host="other.example.org")
        assert (status, body) == (403, WRONG_HOST)
        # behind the proxy, the host the browser asked for counts (X-Forwarded-Host)
        assert _get(url, headers={"X-Forwarded-Host": "evil.example"})[0] == 403
        # with a login, a client of another machine gets the login page
        assert _get(url, host="dash.example.org",
                    headers={"X-Forwarded-For": "203.0.113.7"})[0] == 200


def _server_pid(port: int) -> int:
    """The pid of the ``streamlit run`` serving ``port`` (running_server keeps it to itself)."""
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"streamlit" in b" ".join(argv) and str(port).encode() in argv:
            return int(proc.name)
    raise AssertionError(f"no server process on port {port}")


def _peak_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def _post_end(port: int, headers: dict[str, str], body: Iterator[bytes]) -> int:
    """POST ``body`` to /session/end as it is produced; the status of the answer (the server
    may answer, and close, before the whole body is sent)."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest("POST", "/session/end")
        for name, value in headers.items():
            conn.putheader(name, value)
        conn.endheaders()
        try:
            for chunk in body:
                conn.send(chunk)
        except OSError:  # the server answered and closed while the body was sent
            pass
        return conn.getresponse().status
    finally:
        conn.close()


def _chunked(total: int) -> Iterator[bytes]:
    piece = b"token=" + b"t" * (1024 * 1024 - 6)
    for _ in range(total // len(piece)):
        yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    yield b"0\r\n\r\n"


def test_a_long_log_out_body_is_refused_as_it_arrives(bundled_db: str, tmp_path: Path) -> None:
    """Issue 41: anonymous POSTs to /session/end were read whole (three of 190 MB took the
    server from 305 to 1,086 MB). A declared length past the limit is refused before the body
    is read, a chunked one once the limit is passed; the server's peak memory stays put."""
    from tests.browser.conftest import running_server

    with running_server(bundled_db, tmp_path / "streamlit.log") as url:
        port = int(url.rsplit(":", 1)[1])
        pid = _server_pid(port)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        # the dashboard's own form (no session cookie: a plain redirect to the login)
        assert _post_end(port, {**form, "Content-Length": "11"}, iter([b"token=abcde"])) == 303
        before = _peak_kb(pid)
        size = 190 * 1024 * 1024
        assert _post_end(port, {**form, "Content-Length": str(size)},
                         iter([b"token=" + b"t" * 4096])) == 413
        for _ in range(3):
            assert _post_end(port, {**form, "Transfer-Encoding": "chunked"},
                             _chunked(size)) == 413
        grown = (_peak_kb(pid) - before) / 1024
        assert grown < 50, f"the server's peak grew by {grown:.0f} MB"
