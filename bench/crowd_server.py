"""What bench_crowd.py measures participants against: one tree's server on its own fresh
database (PostgreSQL or SQLite), with a study and N annotator links made by that tree's code,
and the server's and PostgreSQL's CPU and memory read from /proc."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
SETUP = """
import json, sys
from db.transaction import writing
from elitr_core.annotation.admin import add_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database
url, n = sys.argv[1], int(sys.argv[2])
assert main(["init", "--db", url]) == 0
with writing(open_database(url)) as session:
    create_study(session, StudySpec(name="crowd", per_item=max(n, 2), split="test2",
                                    setting="qa", mode="st"))
    print(json.dumps([add_annotator(session, f"p{i}", "silver") for i in range(n)]))
"""


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid: int) -> float:
    """Resident memory of a process in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Database:
    """A fresh database for one tree: its URL and how to read PostgreSQL's CPU spent on it."""

    url: str
    admin_url: str | None = None
    name: str = ""

    def backend_cpu(self) -> dict[int, float]:
        """CPU seconds of every PostgreSQL backend connected to this database (pid -> s)."""
        if not self.admin_url:
            return {}
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            pids = [r[0] for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s", (self.name,))]
        out = {}
        for pid in pids:
            try:
                out[pid] = cpu_seconds(pid)
            except (FileNotFoundError, PermissionError):
                pass
        return out


@contextmanager
def database(pg_admin: str | None, tmp: Path) -> Iterator[Database]:
    """A new PostgreSQL database on the server of ``pg_admin`` (dropped afterwards), or a
    SQLite file in ``tmp`` when ``pg_admin`` is None."""
    if not pg_admin:
        yield Database(f"sqlite:///{tmp / f'crowd-{uuid.uuid4().hex[:8]}.db'}")
        return
    import psycopg

    name = f"bench_crowd_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = pg_admin.rsplit("/", 1)[0]
    try:
        yield Database(f"{base}/{name}", pg_admin, name)
    finally:
        with psycopg.connect(pg_admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def make_study(root: Path, url: str, participants: int) -> list[str]:
    """With the tree's own code: the bundled data, one study, ``participants`` links."""
    done = subprocess.run([sys.executable, "-c", SETUP, url, str(participants)], cwd=root,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"study set-up failed in {root}: {done.stderr[-2000:]}")
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(root: Path, url: str, log: Path, args: list[str]) -> Iterator[tuple[str, int]]:
    """``streamlit run server.py`` of the tree at ``root`` (``args`` added); yield (URL, pid)
    once it answers and its start-up work (ui.warm) has gone quiet."""
    port = _free_port()
    script = "server.py" if (root / "server.py").exists() else "app.py"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", *args],
            cwd=root, env={**os.environ, "DATABASE_URL": url}, stdout=out,
            stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(base, proc.pid, log)
            yield base, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # hundreds of sessions to end: do not wait
                proc.kill()
                proc.wait()


def _wait_ready(base: str, pid: int, log: Path) -> None:
    """Until the health route answers and the process uses under 5 % of a core for 2 s."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2):
                break
        except OSError:
            time.sleep(0.3)
    else:
        raise RuntimeError(f"the server did not start: {log.read_text()[-2000:]}")
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        time.sleep(2)
        if cpu_seconds(pid) - before < 0.1:
            return
