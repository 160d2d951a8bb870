"""Parallel workers never share a port or a PostgreSQL database (tests/workers.py, issue 38):
a real ``pytest -n 2`` run over test files made in tmp_path, each test asking for ports and
database names as the suite's helpers do."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.tiers import ROOT

ASKS = """
import os
import pytest
from tests.workers import claim_database, free_port

@pytest.mark.parametrize("n", range(30))
def test_asks(n, tmp_path):
    ports = [free_port() for _ in range(3)]
    claim_database(f"db_{os.getpid()}_{n}_{tmp_path.name}")
    with open(os.environ["SEEN"], "a") as out:
        out.write(f"{os.environ['PYTEST_XDIST_WORKER']} {tmp_path} {' '.join(map(str, ports))}\\n")
"""


def test_two_workers_never_share_a_port_a_database_or_a_folder(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("test_a.py", "test_b.py", "test_c.py", "test_d.py"):
        (suite / name).write_text(textwrap.dedent(ASKS))
    seen = tmp_path / "seen.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SEEN": str(seen)}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "2", "--dist", "load", "--rootdir", str(suite), str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in seen.read_text().splitlines()]
    assert len(rows) == 120 and {r[0] for r in rows} == {"gw0", "gw1"}, rows
    ports = [p for r in rows for p in r[2:]]
    assert len(ports) == len(set(ports)) == 360
    assert len({r[1] for r in rows}) == 120  # tmp_path: one folder a test
    assert not {Path(r[1]).parent for r in rows if r[0] == "gw0"} & \
        {Path(r[1]).parent for r in rows if r[0] == "gw1"}  # and each worker its own base


def test_a_database_name_made_twice_in_a_run_is_refused(tmp_path: Path) -> None:
    script = ("from tests.workers import claim_database\n"
              "claim_database('elitr_test_same')\n"
              "claim_database('elitr_test_same')\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTEST_XDIST_TESTRUNUID": tmp_path.name}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert ("the PostgreSQL database elitr_test_same was already made by another test of "
            "this run") in done.stderr, done.stderr
