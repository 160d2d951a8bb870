"""What parallel test workers (pytest-xdist) must never share: ports and PostgreSQL databases.

Each claim is a file made with ``O_EXCL`` in a folder of the whole run (every worker of one
``pytest -n`` run sees the same ``PYTEST_XDIST_TESTRUNUID``), so a port or a database name is
handed to one test of the run only, whichever worker asks; a claim is never given back during the
run. Files need no claim: every test writes under its own ``tmp_path`` (each worker has its own
base folder), and the few that write under the repository name the file after it.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path


def run_folder() -> Path:
    """The folder of this run's claims (per xdist run, or per process without xdist)."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
    folder = Path(tempfile.gettempdir()) / f"elitr-test-claims-{run}"
    folder.mkdir(exist_ok=True)
    return folder


def worker() -> str:
    """This worker's name (``gw0``, ...; ``main`` without xdist)."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


def claim(kind: str, value: str) -> bool:
    """Record that this worker uses ``value`` (a port, a database name); False if some test of
    the run (on any worker) had it already."""
    path = run_folder() / f"{kind}-{value}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(worker())
    return True


def claims(kind: str) -> dict[str, str]:
    """The values of ``kind`` claimed so far in this run, and which worker has each."""
    prefix = f"{kind}-"
    return {p.name[len(prefix):]: p.read_text() for p in run_folder().glob(f"{prefix}*")}


def free_port(host: str = "127.0.0.1") -> int:
    """A loopback port free now and handed to no other test of the run: a port the kernel
    gives back after a test released it (another worker's server may be starting on it) is
    skipped."""
    for _ in range(1000):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if claim("port", str(port)):
            return port
    raise RuntimeError("no free port left that no other test of this run had")


def claim_database(name: str) -> None:
    """A PostgreSQL database name used by one test of the run only."""
    if not claim("database", name):
        raise RuntimeError(f"the PostgreSQL database {name} was already made by another test "
                           "of this run: name each one with a random suffix (pg_database)")


def answers(url: str, timeout_s: float, *, alive: Callable[[], bool] = lambda: True,
            poll_s: float = 0.3) -> bool:
    """Whether ``url`` (a server's health check on its port) answers 200 within
    ``timeout_s``; False at once when ``alive()`` says the server's process has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and alive():
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return True
        except OSError:
            time.sleep(poll_s)
    return False
