"""The scale-out as a lab deploys it (deploy/): ``deploy/replicas.sh 2`` on PostgreSQL behind
Debian's nginx running ``deploy/nginx/elitr-dashboard.conf`` as shipped (its own ports and
upstream lines put in). Participants, each from their own address (127.0.0.x), score two items
over Streamlit's websocket protocol (``tests/streamlit_ws.py``); one replica is killed; its
participants reconnect as the browser does and resume on the other replica at their next item;
every answer is stored once, none lost, none doubled. Also: a replica count that PostgreSQL's
max_connections cannot serve is refused at start with the fix.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db.models import Assignment, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database
from tests.conftest import _init_bundled
from tests.deploy_site import certificate, nginx_conf, site_text, wait_health
from tests.streamlit_ws import Session
from tests.workers import claim
from tests.workers import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "deploy" / "nginx" / "elitr-dashboard.conf"
PER_REPLICA = 2  # participants wanted on each replica


def _two_free_ports() -> int:
    """A port P with P + 1 free too (replicas.sh uses consecutive ports)."""
    while True:
        port = _free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
                if claim("port", str(port + 1)):  # no other test of the run has it either
                    return port
            except OSError:
                continue


@contextmanager
def _replicas(url: str, first: int, run_dir: Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {**os.environ, "DATABASE_URL": url, "ELITR_RUN_DIR": str(run_dir), "ELITR_WARM": "0",
           "PYTHON": sys.executable}
    proc = subprocess.Popen(["bash", str(ROOT / "deploy" / "replicas.sh"), "2", str(first)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for port in (first, first + 1):
            wait_health(f"http://127.0.0.1:{port}", run_dir)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


@dataclass(frozen=True)
class Site:
    """The shipped site as this test runs it: its HTTPS and plain ports, the context that
    trusts its self-signed certificate."""

    tls_port: int
    plain_port: int
    tls: ssl.SSLContext

    @property
    def base(self) -> str:
        """The site's HTTPS address."""
        return f"https://127.0.0.1:{self.tls_port}"


@contextmanager
def _nginx(tmp: Path, first: int) -> Iterator[Site]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is required: run `make test` (it installs Debian's nginx-light)")
    cert, key = certificate(tmp)
    tls = ssl.create_default_context(cafile=str(cert))
    site = Site(_free_port(), _free_port(), tls)
    (tmp / "site.conf").write_text(site_text(SITE, tls_port=site.tls_port,
                                             plain_port=site.plain_port, first=first,
                                             cert=cert, key=key))
    (tmp / "nginx.conf").write_text(nginx_conf(tmp))
    proc = subprocess.Popen([nginx, "-e", str(tmp / "error.log"), "-p", str(tmp), "-c",
                             str(tmp / "nginx.conf")])
    try:
        wait_health(site.base, tmp, tls)
        yield site
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def study(pg_url: str) -> tuple[str, list[str]]:
    """The bundled data, one study and links for up to 40 participants, on PostgreSQL."""
    _init_bundled(pg_url)
    with writing(open_database(pg_url)) as session:
        create_study(session, StudySpec(name="replicas", per_item=40, split="test2",
                                        setting="qa", mode="st"))
        return pg_url, [add_annotator(session, f"p{i}", "silver") for i in range(40)]


async def _join(site: Site, tokens: list[str]) -> dict[str, list[tuple[str, Session]]]:
    """Participants from 127.0.0.2, .3, ... until each replica has PER_REPLICA; each scores
    two items. Returns replica -> [(address, session)]."""
    by_replica: dict[str, list[tuple[str, Session]]] = {}
    for i, token in enumerate(tokens):
        address = f"127.0.0.{i + 2}"
        s = await Session.open(site.base, query=f"token={token}", source=address,
                               tls=site.tls)
        replica = s.response_headers["x-upstream"]
        if len(by_replica.setdefault(replica, [])) >= PER_REPLICA:
            await s.close()
            continue
        by_replica[replica].append((address, s))
        await s.click("annotate-tour-done")
        for value in (3, 8):
            await s.click(f"annotate-pick-{value}")
            await s.click("annotate-submit")
        if len(by_replica) == 2 and all(len(v) >= PER_REPLICA for v in by_replica.values()):
            return by_replica
    raise AssertionError(f"nginx sent 40 addresses to {sorted(by_replica)} only")


async def _resume(site: Site, address: str, s: Session, killed: str) -> str:
    """The browser's reconnect after its replica died: the same link and session id."""
    with pytest.raises(Exception):  # noqa: B017,PT011 - the socket is gone (closed/reset)
        await s.rerun(timeout=20)
    again = await Session.open(site.base, query=s.query_string, source=address, tls=site.tls,
                               session_id=s.session_id)
    assert again.response_headers["x-upstream"] != killed  # nginx moved it to the other
    text = again.page.text()
    await again.click("annotate-pick-5")
    await again.click("annotate-submit")
    await again.close()
    return text


async def _go_on(s: Session) -> str:
    text = s.page.text()
    await s.click("annotate-pick-5")
    await s.click("annotate-submit")
    await s.close()
    return text


async def _crowd(site: Site, tokens: list[str], run_dir: Path,
                 first: int) -> tuple[str, list[str], list[str]]:
    by_replica = await _join(site, tokens)
    killed = f"127.0.0.1:{first}"
    pid = int((run_dir / f"replica-{first}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    moved = [await _resume(site, address, s, killed) for address, s in by_replica[killed]]
    stayed = [await _go_on(s) for replica, pairs in by_replica.items() if replica != killed
              for _, s in pairs]
    return killed, moved, stayed


def _answers(url: str) -> dict[int, list[tuple[int, int]]]:
    """annotator -> [(position, number of scores there)] for every scored position."""
    with reading(open_database(url)) as session:
        rows = session.execute(
            select(Assignment.annotator_id, Assignment.position, func.count(Score.id))
            .join(Score, (Score.response_id == Assignment.response_id)
                  & (Score.annotator_key == Assignment.annotator_id))
            .group_by(Assignment.annotator_id, Assignment.position)).all()
    out: dict[int, list[tuple[int, int]]] = {}
    for annotator, position, count in sorted(rows):
        out.setdefault(annotator, []).append((position, count))
    return out


def test_a_killed_replicas_participants_resume_on_the_other(
        study: tuple[str, list[str]], tmp_path: Path) -> None:
    url, tokens = study
    first = _two_free_ports()
    with _replicas(url, first, tmp_path), _nginx(tmp_path, first) as site:
        killed, moved, stayed = asyncio.run(_crowd(site, tokens,
                                                   tmp_path, first))
    assert len(moved) == PER_REPLICA and len(stayed) == PER_REPLICA, killed
    for text in moved + stayed:  # back at the first open item, both answers counted
        assert "Item 3 of" in text and "2 of" in text and "items scored" in text, text
        assert "Scoring with the keyboard" not in text  # the walkthrough was seen already
    answers = _answers(url)
    assert len(answers) == 2 * PER_REPLICA
    assert all(v == [(0, 1), (1, 1), (2, 1)] for v in answers.values()), answers


@pytest.mark.server  # starts `streamlit run server.py` itself (it refuses to start)
def test_too_many_replicas_for_postgresql_are_refused_at_start(pg_url: str,
                                                               tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    env = {**os.environ, "DATABASE_URL": pg_url, "ELITR_REPLICAS": "500", "ELITR_WARM": "0"}
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "streamlit", "run", "server.py", "--server.port",
             str(_free_port()), "--server.headless", "true"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False)
    text = log.read_text()
    assert done.returncode != 0, text
    assert "500 server replicas need at least 5 each" in text and "max_connections = " in text
    assert "Traceback" not in text


ASSET = re.compile(r'(?:src|href)="\./(static/[^"]+)"')
HEADERS = {"x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'",
           "x-content-type-options": "nosniff", "referrer-policy": "same-origin",
           "strict-transport-security": "max-age=31536000"}


def _ask(site: Site, conn: http.client.HTTPConnection, path: str, method: str = "GET",
         body: bytes | None = None) -> http.client.HTTPResponse:
    conn.request(method, path, body=body)
    response = conn.getresponse()
    response.read()
    return response


def _connect(site: Site, source: str) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("127.0.0.1", site.tls_port, source_address=(source, 0),
                                       context=site.tls, timeout=120)


def _load(site: Site, token: str, source: str) -> list[int]:
    """What a browser fetches on arrival, over one kept-alive connection: the page, every
    file of the front end it names, the health check and host-config; their statuses."""
    conn = _connect(site, source)
    conn.request("GET", f"/?token={token}")
    page = conn.getresponse()
    html = page.read().decode()
    statuses = [page.status]
    for path in ["/" + asset for asset in ASSET.findall(html)] + [
            "/_stcore/health", "/_stcore/host-config"]:
        statuses.append(_ask(site, conn, path).status)
    conn.close()
    return statuses


async def _arrivals(site: Site, tokens: list[str], source: str) -> list[tuple[list[int], str]]:
    """len(tokens) arrivals from one address within 1 s (a campus NAT opening the study's
    link together): each loads the page and opens its WebSocket."""
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(len(tokens)))

    async def arrive(i: int, token: str) -> tuple[list[int], str]:
        await asyncio.sleep(i / len(tokens))
        statuses = await asyncio.to_thread(_load, site, token, source)
        async with await Session.open(site.base, query=f"token={token}", source=source,
                                      tls=site.tls, timeout=300) as s:
            return statuses, s.page.text()

    return await asyncio.gather(*(arrive(i, t) for i, t in enumerate(tokens)))


def _flood(site: Site, source: str, count: int = 400) -> list[http.client.HTTPResponse]:
    """``count`` health checks from one address as fast as 8 connections go."""
    def some(n: int) -> list[http.client.HTTPResponse]:
        conn = _connect(site, source)
        return [_ask(site, conn, "/_stcore/health") for _ in range(n)]
    with ThreadPoolExecutor(8) as pool:
        return [r for batch in pool.map(some, [count // 8] * 8) for r in batch]


def _check_site(site: Site) -> None:
    """TLS, the headers, plain HTTP redirected, metrics and host-config kept in, the body
    limit of /session/end, a flood refused (with the headers)."""
    conn = _connect(site, "127.0.0.20")
    page = _ask(site, conn, "/")
    assert page.status == 200 and page.getheader("server") == "nginx"  # no version
    for name, value in HEADERS.items():
        assert page.headers.get_all(name) == [value], (name, page.headers)  # once each
    assert _ask(site, conn, "/_stcore/metrics").status == 404
    config = _ask(site, conn, "/_stcore/host-config")
    assert config.status == 200 and config.getheader("x-frame-options") == "DENY"
    end = _ask(site, conn, "/session/end", "POST", b"token=" + b"0" * 65_536)
    assert end.status == 413  # nginx closes that connection
    assert _ask(site, _connect(site, "127.0.0.20"), "/session/end", "POST",
                b"token=0").status == 303
    plain = http.client.HTTPConnection("127.0.0.1", site.plain_port, timeout=30)
    plain.request("GET", "/?token=abc")
    moved = plain.getresponse()
    assert moved.status == 301
    assert moved.getheader("location") == "https://127.0.0.1/?token=abc"
    flood = _flood(site, "127.0.0.21")
    refused = [r for r in flood if r.status == 429]
    assert 50 <= len(refused) < 400, len(refused)  # the burst passed, then refusals
    assert refused[0].getheader("x-frame-options") == "DENY"


def test_the_shipped_site_serves_tls_with_headers_and_admits_a_crowd_burst(
        study: tuple[str, list[str]], tmp_path: Path) -> None:
    url, tokens = study
    first = _two_free_ports()
    with _replicas(url, first, tmp_path), _nginx(tmp_path, first) as site:
        arrivals = asyncio.run(_arrivals(site, tokens[:40], "127.0.0.9"))
        _check_site(site)
    for statuses, text in arrivals:  # every file of every arrival served, none refused
        assert len(statuses) > 20 and set(statuses) == {200}, statuses
        assert "Scoring with the keyboard" in text, text  # admitted to the study
    assert len(_answers(url)) == 0 and len(arrivals) == 40


def test_the_systemd_unit_is_hardened(tmp_path: Path) -> None:
    """``systemd-analyze verify`` accepts the unit (its paths pointed at this checkout) and
    ``security --offline`` rates its exposure 3.0 or less of 10 (the unit before: 9.2)."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.fail("systemd-analyze is required: run `make test` (it installs Debian's systemd)")
    unit = (ROOT / "deploy" / "systemd" / "elitr-dashboard@.service").read_text()
    (tmp_path / "env").write_text("")
    unit = (unit.replace("/opt/elitr-bench/.venv/bin/python", sys.executable)
            .replace("WorkingDirectory=/opt/elitr-bench", f"WorkingDirectory={ROOT}")
            .replace("/etc/elitr-dashboard.env", str(tmp_path / "env")))
    path = tmp_path / "elitr-dashboard@8501.service"
    path.write_text(unit)
    verify = subprocess.run([analyze, "verify", "--man=no", str(path)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stderr
    security = subprocess.run([analyze, "security", "--offline=yes", "--threshold=30",
                               str(path)], capture_output=True, text=True, timeout=60,
                              check=False)
    assert security.returncode == 0, security.stdout[-2000:]
    for setting in ("ProtectSystem=", "NoNewPrivileges=", "PrivateTmp=", "ProtectHome="):
        assert f"✓ {setting}" in security.stdout, setting
