"""The CLI's one error boundary (issue 19, item 3): every failure a user can cause is one line
``error: ...``, exit status 2, and the database (every row of every table) is unchanged; on
SQLite and on PostgreSQL. The cases a command line alone makes (``--out`` a folder, usage
errors, text that is not UTF-8, a read-only database ...) are in the hostile-input corpus
(``boundary_cases.py``); here are those that need a fault in the middle of a command, the
environment or a real process. ``--debug`` / ``ELITR_DEBUG=1`` add the traceback; a bug is one
line with status 1."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from sqlalchemy import Connection, make_url, text

from db import score_staging
from elitr_core.cli import data as cli_data
from elitr_core.cli.boundary import one_line
from elitr_core.cli.main import main
from tests import small_db
from tests.conftest import PG_URL, _pg_admin_url
from tests.dbstate import snapshot

ROOT = Path(__file__).resolve().parents[3]
NOT_UTF8 = "\udcff"  # how Python keeps the byte 0xFF of an argument that is not UTF-8

def _csv(tmp: Path) -> str:
    path = tmp / "scores.csv"
    path.write_text("meeting,question_id,split,setting,mode,seed,model,evaluator,annotator,"
                    "sample,score\nmeeting_en_dev_901,1,dev,qa,st,,A,expert,,0,7\n")
    return str(path)


def _not_utf8_db(url: str, tmp: Path) -> str:
    if url.startswith("sqlite"):
        return f"sqlite:///{tmp}/{NOT_UTF8}.db"
    return url.rsplit("/", 1)[0] + f"/elitr{NOT_UTF8}"


def _one_line(err: str, message: str) -> None:
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith("error: ") and "Traceback" not in err, err
    assert message in err, err


@pytest.fixture
def stocked(db_url: str) -> str:
    """The small scored benchmark on SQLite or PostgreSQL."""
    small_db.build(db_url)
    return db_url


def test_database_url_in_the_environment_not_utf8(
        stocked: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", _not_utf8_db(stocked, tmp_path))
    before = snapshot(stocked)
    assert main(["import", _csv(tmp_path)]) == 2
    _one_line(capsys.readouterr().err, "DATABASE_URL ")
    assert snapshot(stocked) == before


def _kill_connection(connection: Connection) -> None:
    connection.execute(text("SELECT pg_terminate_backend(pg_backend_pid())"))


def _drop_database(connection: Connection) -> None:
    import psycopg

    name = connection.engine.url.database
    with psycopg.connect(_pg_admin_url(), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.mark.parametrize("fault", [_kill_connection, _drop_database],
                         ids=["connection killed", "database dropped"])
def test_postgresql_fails_in_the_middle_of_an_import(
        pg_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, fault: Callable[[Connection], None]) -> None:
    """The server ends the command's connection after its first scores are staged: one line,
    no SQL, and (when the database survives) nothing of the import stored."""
    small_db.build(pg_url, scores=False)
    before = snapshot(pg_url)
    real = score_staging.ScoreStaging.write

    def failing(staging: score_staging.ScoreStaging, rows: Sequence[tuple[object, ...]]) -> None:
        real(staging, rows)
        fault(staging.connection)
        real(staging, rows)

    monkeypatch.setattr(score_staging.ScoreStaging, "write", failing)
    assert main(["import", _csv(tmp_path), "--db", pg_url]) == 2
    err = capsys.readouterr().err
    # db/faults names the fault and says what happened to the import's one transaction
    _one_line(err, "the connection to the database was lost (")
    assert "run the same command again" in err and "was rolled back" in err
    assert "INSERT" not in err and "SELECT" not in err
    if fault is _kill_connection:
        assert snapshot(pg_url) == before


def test_debug_shows_the_traceback(small_sqlite: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    arguments = ["export", "scores", "--db", small_sqlite, "--out", str(tmp_path)]
    assert main(arguments) == 2
    assert "Traceback" not in capsys.readouterr().err
    for given in (["--debug", *arguments], [*arguments, "--debug"]):
        assert main(given) == 2
        err = capsys.readouterr().err
        assert err.startswith("Traceback") and "UserError" in err
        assert err.splitlines()[-1] == f"error: --out {tmp_path} is a folder: give a file " \
                                       f"name, e.g. {tmp_path}/table.csv"
    monkeypatch.setenv("ELITR_DEBUG", "1")
    assert main(arguments) == 2
    assert capsys.readouterr().err.startswith("Traceback")


def test_a_bug_is_one_line_with_status_1(small_sqlite: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(args: object) -> int:
        raise TypeError("unsupported operand\nSELECT secret FROM score")

    monkeypatch.setattr(cli_data, "cmd_init", broken)
    assert main(["init", "--db", small_sqlite]) == 1
    err = capsys.readouterr().err
    assert err == ("error: unexpected TypeError: unsupported operand. This is a bug: run again "
                   "with --debug (or ELITR_DEBUG=1) and report the traceback\n")


def test_one_line_escapes_what_would_split_or_hide_a_message() -> None:
    assert one_line("plain 'GPT-4' é 漢") == "plain 'GPT-4' é 漢"
    assert one_line("a\nb\r\tc\x00d\x1b[31m") == "a\\nb\\r\\tc\\x00d\\x1b[31m"
    assert one_line("GPT-4\u200b \u202eevil\ufeff\u2028") == \
        "GPT-4\\u200b \\u202eevil\\ufeff\\u2028"
    assert one_line(f"x{NOT_UTF8}") == "x\\udcff"


def _cli(*args: str, stdout: object = subprocess.PIPE,
         limit_file_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # a disk that fills up after limit_file_bytes
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    return subprocess.run([sys.executable, "-m", "elitr_core", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, cwd=ROOT, timeout=300,
                          preexec_fn=limit if limit_file_bytes else None,
                          env={k: v for k, v in os.environ.items() if k != "ELITR_DEBUG"})


def test_the_process_on_a_full_disk(bundled_sqlite: str, tmp_path: Path) -> None:
    """Standard output on a full disk, and an --out file that would grow past the space left:
    one line, status 2, and the file that was there before is kept whole."""
    with open("/dev/full", "w") as full:
        done = _cli("export", "scores", "--db", bundled_sqlite, stdout=full)
    assert done.returncode == 2
    _one_line(done.stderr, "error: cannot write the standard output: No space left on device")

    bundled = f"sqlite:///file:{make_url(bundled_sqlite).database}?mode=ro&uri=true"
    out = tmp_path / "scores.csv"
    out.write_text("the previous export\n")
    done = _cli("export", "scores", "--db", bundled, "--out", str(out),
                limit_file_bytes=256 * 1024)  # the export is about 1 MB
    assert done.returncode == 2
    _one_line(done.stderr, f"cannot write --out {out}: File too large")
    assert out.read_text() == "the previous export\n"
    assert sorted(p.name for p in out.parent.iterdir() if "export" in p.name) == []


def test_a_reader_that_stops_early_is_no_error(small_sqlite: str) -> None:
    with subprocess.Popen([sys.executable, "-m", "elitr_core", "export", "scores", "--db",
                           small_sqlite], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=ROOT) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"meeting,question_id")
        process.stdout.close()  # as `| head -1` does
        err = process.stderr.read()
    assert process.returncode == 0 and err == b""


@pytest.mark.skipif(not PG_URL, reason="needs DATABASE_URL_TEST (PostgreSQL)")
def test_three_init_at_once_on_an_empty_postgresql_database(pg_url: str) -> None:
    """Schema creation is serialised by an advisory lock: all three succeed, data stored once."""
    processes = [subprocess.Popen([sys.executable, "-m", "elitr_core", "init", "--db", pg_url],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  cwd=ROOT) for _ in range(3)]
    results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in processes]
    assert results == [(0, "")] * 3
    counts = snapshot(pg_url)
    assert len(counts["meeting"]) == 18 and len(counts["alembic_version"]) == 1
