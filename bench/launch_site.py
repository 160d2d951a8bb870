"""What bench_launch.py runs participants against: one replica of a tree, or two started by
that tree's ``deploy/replicas.sh 2`` behind its ``deploy/nginx/elitr-dashboard.conf`` as
shipped (only its ports, upstream lines and a self-signed certificate put in, as
tests/test_deploy.py does), in nginx's Debian defaults on this machine (``worker_processes
auto``, ``worker_connections 768``)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from bench.crowd_server import _free_port, _wait_ready, server
from tests.deploy_site import certificate, nginx_conf, site_text, wait_health


@dataclass
class Target:
    """Where participants connect (``base``, ``tls``) and the server processes to measure."""

    base: str
    pids: list[int] = field(default_factory=list)
    tls: ssl.SSLContext | None = None


def _two_ports() -> int:
    """A port P with P + 1 free too (replicas.sh uses consecutive ports)."""
    while True:
        port = _free_port()
        try:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue


@contextmanager
def replicas(root: Path, url: str, run_dir: Path) -> Iterator[tuple[int, list[int]]]:
    """``deploy/replicas.sh 2`` of the tree at ``root``: (first port, replica pids)."""
    first = _two_ports()
    env = {**os.environ, "DATABASE_URL": url, "ELITR_RUN_DIR": str(run_dir),
           "PYTHON": sys.executable}
    proc = subprocess.Popen(["bash", str(root / "deploy" / "replicas.sh"), "2", str(first)],
                            cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT)
    try:
        pids = []
        for port in (first, first + 1):
            wait_health(f"http://127.0.0.1:{port}", run_dir)
            pids.append(int((run_dir / f"replica-{port}.pid").read_text()))
        for pid, port in zip(pids, (first, first + 1), strict=True):
            _wait_ready(f"http://127.0.0.1:{port}", pid, run_dir / f"replica-{port}.log")
        yield first, pids
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def nginx(root: Path, tmp: Path, first: int) -> Iterator[Target]:
    """The tree's nginx site in front of the replicas at ``first`` and ``first + 1``."""
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    tmp.mkdir(parents=True, exist_ok=True)
    tls_port, plain_port = _free_port(), _free_port()
    cert, key = certificate(tmp)
    (tmp / "site.conf").write_text(site_text(
        root / "deploy" / "nginx" / "elitr-dashboard.conf", tls_port=tls_port,
        plain_port=plain_port, first=first, cert=cert, key=key))
    # Debian's nginx.conf: worker_processes auto, worker_connections 768
    (tmp / "nginx.conf").write_text(nginx_conf(tmp, "worker_processes auto;",
                                               " worker_connections 768; "))
    proc = subprocess.Popen([binary, "-e", str(tmp / "error.log"), "-p", str(tmp), "-c",
                             str(tmp / "nginx.conf")], stderr=subprocess.DEVNULL)
    tls = ssl.create_default_context(cafile=str(cert))
    try:
        wait_health(f"https://127.0.0.1:{tls_port}", tmp, tls)
        yield Target(f"https://127.0.0.1:{tls_port}", tls=tls)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def nginx_errors(tmp: Path) -> list[str]:
    """nginx's error log lines of a run (limits hit, upstreams lost), at most 5."""
    log = tmp / "error.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if "[error]" in line or "[alert]" in line
            or "limiting" in line][:5]


@contextmanager
def target(root: Path, url: str, tmp: Path, count: int) -> Iterator[Target]:
    """One replica (``count`` 1: ``streamlit run server.py``, as bench_crowd.py) or two
    behind nginx (``count`` 2)."""
    if count == 1:
        with server(root, url, tmp / "server.log", []) as (base, pid):
            yield Target(base, [pid])
        return
    with replicas(root, url, tmp / "run") as (first, pids), nginx(root, tmp / "nginx",
                                                                   first) as site:
        site.pids = pids
        yield site
