"""The engine factory and concurrent upserts on SQLite and PostgreSQL."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from db.engine import database_url, get_engine
from db.evaluators import upsert_evaluator
from db.transaction import writing
from elitr_core.cli.main import main
from tests.small_db import upsert_score
from tests.unprivileged import run_cli, shared_tmp


def test_sqlite_pragmas(sqlite_url: str) -> None:
    engine = get_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 30000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1


def test_database_url_resolution(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("DATABASE_URL", raising=False)
    assert database_url().startswith("sqlite:///") and database_url().endswith("var/elitr.db")
    monkeypatch.setenv("DATABASE_URL", "postgres://u@h/d")
    assert database_url() == "postgresql+psycopg://u@h/d"
    assert database_url("sqlite:///x.db") == "sqlite:///x.db"


def test_upsert_race_writes_one_score(bundled_db: str) -> None:
    """Eight threads write the same score key 25 times each: one row, the last value."""
    engine = get_engine(bundled_db)
    with writing(engine) as session:
        response_id = session.exec(text("SELECT min(id) FROM response")).scalar_one()  # type: ignore[call-overload]
        evaluator_id = upsert_evaluator(session=session, slug="race-judge", kind="llm")
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(worker: int) -> None:
        try:
            barrier.wait()
            for i in range(25):
                with writing(engine) as session:
                    upsert_score(
                        session=session,
                        response_id=response_id,
                        evaluator_id=evaluator_id,
                        value=float(1 + (worker + i) % 10),
                    )
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT value FROM score WHERE response_id = :r AND evaluator_id = :e"),
            {"r": response_id, "e": evaluator_id},
        ).all()
        total = conn.execute(text("SELECT count(*) FROM score")).scalar_one()
    assert len(rows) == 1 and 1.0 <= rows[0][0] <= 10.0
    assert total == 7945 + 1


def test_same_import_concurrently(db_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Two imports of the same archive at once end with the same counts as one."""
    from elitr_core.data.benchmark import DATA_DIR
    from elitr_core.data.database import open_database

    open_database(db_url)
    assert main(["import", str(DATA_DIR / "data.zip"), "--db", db_url]) == 0
    statuses: list[int] = []
    args = ["import", str(DATA_DIR / "generated-responses.zip"), "--db", db_url]
    threads = [threading.Thread(target=lambda: statuses.append(main(args))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [0, 0, 0]
    with writing(get_engine(db_url)) as session:
        assert session.exec(text("SELECT count(*) FROM response")).scalar_one() == 6775  # type: ignore[call-overload]
        assert session.exec(text("SELECT count(*) FROM score")).scalar_one() == 7945  # type: ignore[call-overload]


@pytest.mark.parametrize(("url", "problem"), [
    ("mysql://root@127.0.0.1/elitr", "unsupported database 'mysql' in URL mysql://root@"),
    ("postgresql://u:secret@127.0.0.1:port/db", "invalid database URL "
     "'postgresql+psycopg://u:***@127.0.0.1:port/db' (invalid literal for int()"),
    ("not a url", "invalid database URL 'not a url'"),
])
def test_bad_database_urls(url: str, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: " + problem) and err.count("\n") == 1
    assert "sqlite:///PATH or postgresql://USER@HOST:PORT/DATABASE" in err
    assert "secret" not in err


def test_a_file_that_is_not_a_database(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database, just notes\n" * 100)
    for command in ("init", "export"):
        args = [command, "scores"] if command == "export" else [command]
        assert main([*args, "--db", f"sqlite:///{path}"]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: cannot open the SQLite database sqlite:///{path}: file is not a "
                       "database. Check that the path (--db or DATABASE_URL) is a database file "
                       "made by this program\n")
    assert path.read_text() == "not a database, just notes\n" * 100


def test_a_new_database_in_a_read_only_folder() -> None:
    with shared_tmp() as folder:
        locked = folder / "locked"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        result = run_cli("init", "--db", f"sqlite:///{locked / 'new.db'}")
        assert result.returncode == 2
        assert result.stderr == (f"error: cannot create the SQLite database {locked / 'new.db'}: "
                                 f"the folder {locked} is not writable. Choose a writable path "
                                 "with --db or DATABASE_URL\n")
        assert list(locked.iterdir()) == []


#: The export of a writable copy of a template (by its path): the same bytes for every copy,
#: made once per process for the cases that compare their read-only copy's export with it.
_WRITABLE_EXPORT: dict[Path, subprocess.CompletedProcess[str]] = {}


def _writable_export(template: Path) -> subprocess.CompletedProcess[str]:
    if template not in _WRITABLE_EXPORT:
        with shared_tmp() as folder:
            db = folder / "bundled.db"
            shutil.copy(template, db)
            _WRITABLE_EXPORT[template] = run_cli("export", "scores", "--format", "csv",
                                                 "--db", f"sqlite:///{db}")
    return _WRITABLE_EXPORT[template]


@pytest.mark.parametrize("locked", ["file", "folder"])
def test_a_read_only_database_still_exports(locked: str, bundled_sqlite_template: Path) -> None:
    """Writing commands are refused in one line; export gives the same bytes as writable."""
    from elitr_core.data.benchmark import DATA_DIR

    with shared_tmp() as folder:
        db = folder / "bundled.db"
        shutil.copy(bundled_sqlite_template, db)
        url = f"sqlite:///{db}"
        expected = _writable_export(bundled_sqlite_template)
        assert expected.returncode == 0 and len(expected.stdout.splitlines()) == 7946
        (db if locked == "file" else folder).chmod(0o444 if locked == "file" else 0o555)
        before = db.read_bytes()
        exported = run_cli("export", "scores", "--format", "csv", "--db", url)
        assert exported.returncode == 0, exported.stderr
        assert exported.stdout == expected.stdout
        refused = run_cli("import", str(DATA_DIR / "data.zip"), "--db", url)
        assert refused.returncode == 2
        assert refused.stderr == (f"error: the SQLite database {db} is read-only (the file or "
                                  "its folder cannot be written): make both writable, or copy "
                                  "it elsewhere; reading commands such as export still work\n")
        assert db.read_bytes() == before


def test_a_connection_check_that_meets_an_ended_connection_reconnects(pg_url: str) -> None:
    """PostgreSQL ends a pooled connection while the pool checks it (``pool_pre_ping``): the
    check's own clean-up then raises psycopg's ProgrammingError ("can't change 'autocommit'
    now: connection in transaction status ACTIVE") instead of a disconnect (seen after
    pg_terminate_backend, a restart's way). The next checkout must reconnect, not fail. The
    race is timing-dependent, so the check is made to meet it: the connection is really
    ended, and the check then raises what psycopg raised then."""
    import psycopg

    engine = get_engine(pg_url)
    with engine.connect() as connection:
        pid = connection.exec_driver_sql("SELECT pg_backend_pid()").scalar()
    dialect, real = engine.dialect, engine.dialect.do_ping
    met: list[object] = []

    def ping_meets_an_ended_connection(dbapi_connection: object) -> bool:
        if not met:
            met.append(dbapi_connection)
            with psycopg.connect(pg_url.replace("+psycopg", ""), autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            raise psycopg.ProgrammingError(
                "can't change 'autocommit' now: connection in transaction status ACTIVE")
        return real(dbapi_connection)  # type: ignore[arg-type]

    dialect.do_ping = ping_meets_an_ended_connection  # type: ignore[method-assign]
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT pg_backend_pid()").scalar() != pid
    finally:
        del dialect.do_ping
    assert met, "the pool did not check the connection"
    # any other error of the check is still an error
    def ping_fails_otherwise(dbapi_connection: object) -> bool:
        raise psycopg.ProgrammingError("syntax error at or near ';'")

    dialect.do_ping = ping_fails_otherwise  # type: ignore[method-assign,assignment]
    try:
        with pytest.raises(Exception, match="syntax error"):
            engine.connect()
    finally:
        del dialect.do_ping
