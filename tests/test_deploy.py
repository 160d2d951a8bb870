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
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import func, select

from db.models import Assignment, Score
from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database
from tests.conftest import _init_bundled
from tests.streamlit_ws import Session

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "deploy" / "nginx" / "elitr-dashboard.conf"
PER_REPLICA = 2  # participants wanted on each replica


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _two_free_ports() -> int:
    """A port P with P + 1 free too (replicas.sh uses consecutive ports)."""
    while True:
        port = _free_port()
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
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
            _wait_health(f"http://127.0.0.1:{port}", run_dir)
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _wait_health(base: str, run_dir: Path) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    logs = "\n".join(p.read_text() for p in run_dir.glob("*.log"))
    raise RuntimeError(f"a replica did not start: {logs[-3000:]}")


def _site(listen: int, first: int) -> str:
    """The shipped site with this test's listen port and replicas; the handshake's answer
    names the replica (X-Upstream) so that the test knows whose participant is whose."""
    text = SITE.read_text().replace("listen 80;", f"listen 127.0.0.1:{listen};")
    text = re.sub(r"server 127\.0\.0\.1:8501 ", f"server 127.0.0.1:{first} ", text)
    text = re.sub(r"server 127\.0\.0\.1:8502 ", f"server 127.0.0.1:{first + 1} ", text)
    return text.replace("proxy_pass http://elitr_replicas;",
                        "proxy_pass http://elitr_replicas;\n"
                        "        add_header X-Upstream $upstream_addr always;")


@contextmanager
def _nginx(tmp: Path, site: str, port: int) -> Iterator[None]:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        pytest.fail("nginx is required: run `make test` (it installs Debian's nginx-light)")
    (tmp / "site.conf").write_text(site)
    paths = " ".join(f"{name}_temp_path {tmp / name};"
                     for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (tmp / "nginx.conf").write_text(
        f"daemon off; master_process off; pid {tmp}/nginx.pid; error_log {tmp}/error.log;\n"
        f"events {{}}\nhttp {{ access_log off; {paths} include {tmp}/site.conf; }}\n")
    proc = subprocess.Popen([nginx, "-e", str(tmp / "error.log"), "-p", str(tmp), "-c",
                             str(tmp / "nginx.conf")])
    try:
        _wait_health(f"http://127.0.0.1:{port}", tmp)
        yield
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


async def _join(base: str, tokens: list[str]) -> dict[str, list[tuple[str, Session]]]:
    """Participants from 127.0.0.2, .3, ... until each replica has PER_REPLICA; each scores
    two items. Returns replica -> [(address, session)]."""
    by_replica: dict[str, list[tuple[str, Session]]] = {}
    for i, token in enumerate(tokens):
        address = f"127.0.0.{i + 2}"
        s = await Session.open(base, query=f"token={token}", source=address)
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


async def _resume(base: str, address: str, s: Session, killed: str) -> str:
    """The browser's reconnect after its replica died: the same link and session id."""
    with pytest.raises(Exception):  # noqa: B017,PT011 - the socket is gone (closed/reset)
        await s.rerun(timeout=20)
    again = await Session.open(base, query=s.query_string, source=address,
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


async def _crowd(base: str, tokens: list[str], run_dir: Path,
                 first: int) -> tuple[str, list[str], list[str]]:
    by_replica = await _join(base, tokens)
    killed = f"127.0.0.1:{first}"
    pid = int((run_dir / f"replica-{first}.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    moved = [await _resume(base, address, s, killed) for address, s in by_replica[killed]]
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
    first, listen = _two_free_ports(), _free_port()
    with _replicas(url, first, tmp_path), _nginx(tmp_path, _site(listen, first), listen):
        killed, moved, stayed = asyncio.run(_crowd(f"http://127.0.0.1:{listen}", tokens,
                                                   tmp_path, first))
    assert len(moved) == PER_REPLICA and len(stayed) == PER_REPLICA, killed
    for text in moved + stayed:  # back at the first open item, both answers counted
        assert "Item 3 of" in text and "2 of" in text and "items scored" in text, text
        assert "Scoring with the keyboard" not in text  # the walkthrough was seen already
    answers = _answers(url)
    assert len(answers) == 2 * PER_REPLICA
    assert all(v == [(0, 1), (1, 1), (2, 1)] for v in answers.values()), answers


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
