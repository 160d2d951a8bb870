"""A PostgreSQL server of the test's own, which the test can restart (issue 27, item 3).

Built with Debian's PostgreSQL programs (``initdb``, ``pg_ctl`` under
``/usr/lib/postgresql/*/bin``) on a free loopback port, in a folder any user may enter; as
root (which ``initdb`` refuses) the programs run as ``nobody`` through ``setpriv``.
"""

from __future__ import annotations

import glob
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.unprivileged import NOBODY, shared_tmp
from tests.workers import free_port as _free_port


def _bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        pytest.skip(f"{name} is not installed (Debian's postgresql package)")
    return found[-1]


class PgInstance:
    """One cluster in ``folder`` on ``port``; :meth:`restart` as an administrator would."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port = folder, _free_port()
        self.data = folder / "data"
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        drop = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        subprocess.run([*(drop if os.geteuid() == 0 else []), *args], check=True,
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HOME": str(self.folder)})

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off"
        self._run(_bin("pg_ctl"), action, "-D", str(self.data), "-w", "-t", "60",
                  "-l", str(self.folder / "server.log"), "-o", options, *extra)

    def start(self) -> None:
        """initdb (first time) and start the server."""
        if not self.data.exists():
            if os.geteuid() == 0:
                os.chown(self.folder, NOBODY, NOBODY)
            self._run(_bin("initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust",
                      "-E", "UTF8", "--no-sync")
        self._pg_ctl("start")

    def restart(self) -> None:
        """Stop (ending every connection, as a crash or an upgrade does) and start again."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "immediate")


@contextmanager
def pg_instance() -> Iterator[PgInstance]:
    """A started :class:`PgInstance`, stopped and removed afterwards."""
    with shared_tmp() as folder:
        instance = PgInstance(folder)
        instance.start()
        try:
            yield instance
        finally:
            instance.stop()
