"""The command line on a full disk (issue 27, item 8): one true line saying the disk is full,
never that the file "may not be a database made by this program", and the database file
unchanged. The test mounts a small tmpfs holding a copy of the bundled database and fills it
(mounting needs root, as CI runs; elsewhere the test is skipped with that reason)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def full_disk(bundled_sqlite: str, tmp_path: Path) -> Iterator[Path]:
    """A copy of the bundled database on a tmpfs with no byte left."""
    source = Path(bundled_sqlite.removeprefix("sqlite:///"))
    mount = tmp_path / "disk"
    mount.mkdir()
    size_kb = source.stat().st_size // 1024 + 1024
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")
    try:
        shutil.copy(source, mount / "db.sqlite")
        with (mount / "fill").open("wb") as fill:
            try:
                while True:
                    fill.write(b"\0" * 65536)
                    fill.flush()
            except OSError:
                pass
        yield mount / "db.sqlite"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("args", [["export", "leaderboard"],
                                  ["annotator", "add", "--name", "x", "--pool", "gold"],
                                  ["init"]])
def test_a_full_disk_is_one_true_line(args: list[str], full_disk: Path) -> None:
    before = _digest(full_disk)
    done = subprocess.run([sys.executable, "-m", "elitr_core", *args, "--db",
                           f"sqlite:///{full_disk}"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "DATABASE_URL": ""})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "disk is full" in lines[0] and "made by this program" not in lines[0], lines[0]
    assert _digest(full_disk) == before
