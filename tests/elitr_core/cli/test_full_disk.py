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
    yield from _disk(bundled_sqlite, tmp_path, left_kb=0)


@pytest.fixture
def nearly_full_disk(bundled_sqlite: str, tmp_path: Path) -> Iterator[Path]:
    """The same with 300 KB left: a database opens, a large import does not fit."""
    yield from _disk(bundled_sqlite, tmp_path, left_kb=300)


def _disk(bundled_sqlite: str, tmp_path: Path, *, left_kb: int) -> Iterator[Path]:
    source = Path(bundled_sqlite.removeprefix("sqlite:///"))
    mount = tmp_path / "disk"
    _mount_tmpfs(mount, size_kb=source.stat().st_size // 1024 + 1024)
    try:
        shutil.copy(source, mount / "db.sqlite")
        _fill(mount, left_kb=left_kb)
        yield mount / "db.sqlite"
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _mount_tmpfs(mount: Path, *, size_kb: int) -> None:
    """Mount a tmpfs of ``size_kb`` at ``mount`` (made here), or skip: mounting needs root."""
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"mounting a tmpfs needs root: {done.stderr.strip()}")


def _fill(mount: Path, *, left_kb: int = 0) -> None:
    """Write ``mount/fill`` until ``left_kb`` is left on the disk (0: until it is full)."""
    free_kb = shutil.disk_usage(mount).free // 1024
    try:
        with (mount / "fill").open("wb", buffering=0) as fill:
            for _ in range(max(free_kb - left_kb, 0) if left_kb else 1 << 30):
                fill.write(b"\0" * 1024)
    except OSError:  # no space left: what the fixtures want
        pass


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("args", [["export", "leaderboard"],
                                  ["annotator", "add", "--name", "x", "--pool", "gold"],
                                  ["init"]])
def test_a_full_disk_is_one_true_line(args: list[str], full_disk: Path) -> None:
    before = _digest(full_disk)
    done = _cli(*args, db=f"sqlite:///{full_disk}")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "disk is full" in lines[0] and "made by this program" not in lines[0], lines[0]
    assert _digest(full_disk) == before


def test_an_import_that_fills_the_disk_is_one_line_and_keeps_the_file(
        nearly_full_disk: Path, bundled_sqlite: str, tmp_path: Path) -> None:
    """Opening works, the import's transaction does not fit: one line, the file unchanged;
    with room again the same import goes through."""
    scores = _new_judges_scores(bundled_sqlite, tmp_path)
    before = _digest(nearly_full_disk)
    done = _cli("import", str(scores), db=f"sqlite:///{nearly_full_disk}")
    errors = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert "disk of the database is full" in errors[0] and "run the same command" in errors[0]
    assert _digest(nearly_full_disk) == before
    (nearly_full_disk.parent / "fill").unlink()
    assert _cli("import", str(scores), db=f"sqlite:///{nearly_full_disk}").returncode == 0


def _cli(*args: str, db: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "elitr_core", *args, "--db", db], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "DATABASE_URL": ""})


def _new_judges_scores(db: str, tmp_path: Path) -> Path:
    """gpt-4's bundled scores as a CSV under a judge the database does not hold yet: an
    import of every row."""
    from elitr_core.cli.main import main

    scores = tmp_path / "scores.csv"  # (the input only: made in this process)
    assert main(["export", "scores", "--evaluator", "gpt-4", "--out", str(scores),
                 "--db", db]) == 0
    lines = scores.read_text().splitlines()
    scores.write_text("\n".join([lines[0], *(line.replace(",gpt-4,", ",full-disk-judge,")
                                             for line in lines[1:])]) + "\n")
    return scores


@pytest.fixture
def pg_full_temp_disk(bundled_db: str) -> Iterator[str]:
    """The bundled data on PostgreSQL whose temporary tables (the scores import's COPY
    staging) live in a tablespace on a tmpfs with no byte left."""
    import pwd
    import uuid

    import psycopg

    from tests.conftest import _pg_admin_url
    from tests.unprivileged import shared_tmp

    if not bundled_db.startswith("postgresql"):
        pytest.skip("the COPY path is PostgreSQL's (SQLite's full disk: the tests above)")
    postgres = pwd.getpwnam("postgres")
    name = f"elitr_full_{uuid.uuid4().hex[:8]}"
    database = bundled_db.rsplit("/", 1)[1]
    with shared_tmp() as folder:
        mount = folder / "disk"
        _mount_tmpfs(mount, size_kb=512)
        try:
            os.chown(mount, postgres.pw_uid, postgres.pw_gid)
            with psycopg.connect(_pg_admin_url(), autocommit=True) as conn:
                conn.execute(f"CREATE TABLESPACE {name} LOCATION '{mount}'")
                conn.execute(f'ALTER DATABASE "{database}" SET temp_tablespaces = {name}')
            _fill(mount)
            yield bundled_db
        finally:
            from db.engine import dispose_engines

            dispose_engines()
            with psycopg.connect(_pg_admin_url(), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
                conn.execute(f"DROP TABLESPACE IF EXISTS {name}")
            subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_postgresql_disk_during_the_copy_of_an_import_is_one_line(
        pg_full_temp_disk: str, tmp_path: Path) -> None:
    """Issue 41: a full PostgreSQL disk during `import` (the COPY path) ended in "This is a
    bug"; now the disk-full line, with nothing written."""
    from tests.dbstate import snapshot

    url = pg_full_temp_disk
    scores = _new_judges_scores(url, tmp_path)
    before = snapshot(url)
    done = _cli("import", str(scores), db=url)
    errors = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(errors) == 1, done.stderr
    assert "the disk of the database is full" in errors[0] and "bug" not in errors[0], errors
    assert snapshot(url) == before
