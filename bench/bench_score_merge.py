"""Benchmark: the PostgreSQL server's work in merging a million staged scores into ``score``.

The scores-CSV import (``db/score_staging.py``) stages rows and merges them with one ``INSERT ...
SELECT ... ON CONFLICT DO UPDATE``; on PostgreSQL that statement is most of the import. This
measures it apart from Python, on the schema variants that decide its cost: the indexes of
``score`` and the checks of its three foreign keys. Each variant runs on a fresh copy of one
database (the bundled data plus the rows to merge, in a table ``stage_src``), in a transaction
that is rolled back; it reports the server backend's CPU seconds (``/proc/PID/stat``: the
server must run on this machine), the wall seconds, the WAL the statement wrote, and the load.

Variants (``--variants`` picks some; the last three are measurements only, never the schema):

- ``5 indexes``: the schema before migration 0007 (``ix_score_response_id`` restored);
- ``4 indexes``: the schema now;
- ``no annotator index``: ``ix_score_annotator_id`` dropped as well;
- ``plain INSERT``: the same rows without ``ON CONFLICT`` (the price of the upsert's
  speculative insertion, when no key is stored yet);
- ``no FK checks``: the three foreign keys dropped (the price of their per-row triggers);
- ``FKs re-added``: dropped, the rows inserted, the keys added again, which PostgreSQL checks
  with one join over the whole table instead of a trigger per row. The import does not do
  this: the constraint is gone for the transaction, which holds ``score`` exclusively.

    python bench/bench_score_merge.py [--rows 1000000] [--rounds 2] [--variants ...]
        [--pg-url postgresql://postgres@127.0.0.1:5432/postgres]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from bench_import import response_keys, write_csv  # noqa: E402

from db.engine import dispose_engines  # noqa: E402

STAGED = "response_id, evaluator_id, annotator_id, annotator_key, sample, value"
INSERT = (f"INSERT INTO score ({STAGED}, status, created_at, updated_at) SELECT {STAGED}, "
          "'ok', now(), now() FROM s ORDER BY response_id, evaluator_id, annotator_key, sample")
MERGE = (INSERT + " ON CONFLICT (response_id, evaluator_id, annotator_key, sample) DO UPDATE "
         "SET value = excluded.value, status = excluded.status, updated_at = excluded.updated_at"
         " WHERE score.value IS DISTINCT FROM excluded.value"
         " OR score.status IS DISTINCT FROM excluded.status")
FKS = {"response_id": "response", "evaluator_id": "evaluator", "annotator_id": "annotator"}
DROP_FKS = "ALTER TABLE score " + ", ".join(f"DROP CONSTRAINT score_{c}_fkey" for c in FKS)
ADD_FKS = "ALTER TABLE score " + ", ".join(
    f"ADD CONSTRAINT score_{c}_fkey FOREIGN KEY ({c}) REFERENCES {t} (id)"
    for c, t in FKS.items())
#: name -> (schema change on the copy, statements of the measured transaction)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "5 indexes": ("CREATE INDEX ix_score_response_id ON score (response_id)", [MERGE]),
    "4 indexes": ("", [MERGE]),
    "no annotator index": ("DROP INDEX ix_score_annotator_id", [MERGE]),
    "plain INSERT": ("", [INSERT]),
    "no FK checks": ("", [DROP_FKS, MERGE]),
    "FKs re-added": ("", [DROP_FKS, MERGE, ADD_FKS]),
}


def backend_cpu(pid: int) -> float:
    """User + system CPU seconds of one server process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def template(pg_url: str, rows: int, folder: Path) -> str:
    """A database of the bundled data with ``rows`` scores to merge in ``stage_src`` (the CLI
    imports them, then they move from ``score`` to ``stage_src``); its name."""
    name = f"elitr_bench_merge_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = pg_url.rsplit("/", 1)[0] + f"/{name}"
    python = [sys.executable, "-m", "elitr_core"]
    subprocess.run([*python, "init", "--db", url], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    with psycopg.connect(url) as conn:
        bundled = conn.execute("SELECT max(id) FROM score").fetchone()[0]  # type: ignore[index]
    path = folder / "scores.csv"
    write_csv(path, response_keys(url), rows)
    dispose_engines()  # a template must have no session open
    subprocess.run([*python, "import", str(path), "--db", url], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE stage_src AS SELECT {STAGED} FROM score WHERE id > %s",
                     (bundled,))
        conn.execute("DELETE FROM score WHERE id > %s", (bundled,))
        conn.execute("VACUUM FULL ANALYZE")
    return name


def measure(pg_url: str, source: str, change: str, statements: list[str]) -> str:
    """One variant on a fresh copy of ``source``: a table line."""
    copy = f"elitr_bench_merge_run_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{source}"')
    url = pg_url.rsplit("/", 1)[0] + f"/{copy}"
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            if change:
                conn.execute(change)
            conn.execute("VACUUM ANALYZE")
        with psycopg.connect(url) as conn:
            pid = conn.info.backend_pid
            conn.execute("CREATE TEMPORARY TABLE s AS SELECT * FROM stage_src")
            conn.execute("ANALYZE s")
            lsn = conn.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]  # type: ignore[index]
            load = Path("/proc/loadavg").read_text().split()[0]
            cpu, wall = backend_cpu(pid), time.perf_counter()
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
            cpu, wall = backend_cpu(pid) - cpu, time.perf_counter() - wall
            wal = conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)",
                               (lsn,)).fetchone()[0]  # type: ignore[index]
            conn.rollback()
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
    return f"{cpu:.1f} | {wall:.1f} | {float(wal) / 1e6:,.0f} | {load} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--pg-url", default=os.environ.get(
        "DATABASE_URL_TEST", "postgresql://postgres@127.0.0.1:5432/postgres"))
    args = parser.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    with tempfile.TemporaryDirectory(prefix="bench-merge-") as scratch:
        source = template(args.pg_url, args.rows, Path(scratch))
        try:
            print(f"| variant ({args.rows:,} rows) | server CPU s | wall s | WAL MB | load |")
            print("| --- | --- | --- | --- | --- |")
            for _ in range(args.rounds):
                for name in args.variants:
                    change, statements = VARIANTS[name]
                    print(f"| {name} | {measure(args.pg_url, source, change, statements)}",
                          flush=True)
        finally:
            with psycopg.connect(args.pg_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{source}" WITH (FORCE)')
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


if __name__ == "__main__":
    main()
