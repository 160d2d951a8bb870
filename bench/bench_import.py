"""Benchmark: importing a tidy scores CSV, side by side with pandas, and refusing junk.

For each database (SQLite, PostgreSQL) and each size (100,000 and 1,000,000 rows), a scores CSV
is written for the bundled data's 6,775 responses (judges with many samples, a crowd of
annotators), and a fresh copy of the bundled database imports it three ways, each in its own
process whose wall time, CPU time (user + system; a PostgreSQL server's own work is not in
it), peak memory (``ru_maxrss`` from ``os.wait4``) and, on PostgreSQL, the CPU time of the
server processes serving its database (:class:`ServerCpu`) are measured:

- ``ours``: ``python -m elitr_core import FILE`` (streamed, checked by the typed gate, every row
  resolved to a stored response, duplicates refused, bulk-written, all or nothing);
- ``pandas``: the yardstick, ``pandas.read_csv`` + ``DataFrame.to_sql`` of the same rows into a
  new table of the same kind of database (no checks, no look-ups, no merge);
- ``before`` (with ``--before DIR``): the same command in another checkout of the project
  (``git archive main | tar -x -C DIR``, with its ``.venv``), importing into a copy of a
  database that checkout's own ``init`` made (its schema: its indexes and migrations).

Then a ZIP of 20,000 small valid responses files (one response and one GPT-4 score each),
imported by ``ours`` (and ``before``); its rows count files, not score rows.
Then the refusals: CSVs of 10 million junk lines (after a valid header, without one, after a
header and a quote that never closes) and a ZIP of 20,000 small members, each imported by the
CLI (expected: exit status 2, nothing written).
Every figure comes with the load average (``/proc/loadavg``) read just before it.

    python bench/bench_import.py [--rows 100000 1000000] [--databases sqlite postgresql]
        [--pg-url postgresql://postgres@127.0.0.1:5432/postgres] [--before DIR]
        [--no-zip] [--no-refusals]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PANDAS = """
import sys, pandas, sqlalchemy
url = sys.argv[2].replace("postgresql://", "postgresql+psycopg://", 1)
frame = pandas.read_csv(sys.argv[1])
frame.to_sql("yardstick", sqlalchemy.create_engine(url), index=False)
"""
HEADER = ["meeting", "question_id", "split", "setting", "mode", "seed", "model", "evaluator",
          "annotator", "sample", "score"]


def measure(command: list[str], cwd: Path = ROOT, *, server: str | None = None
            ) -> dict[str, float | int | str]:
    """Run ``command``; its wall seconds, peak memory (MB), exit status and the load before;
    with ``server`` (the URL of the PostgreSQL database it works in) the CPU seconds of the
    server processes serving that database too."""
    load = Path("/proc/loadavg").read_text().split()[0]
    watch = ServerCpu(server) if server else None
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    assert process.stderr is not None
    err = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"seconds": time.perf_counter() - start, "mb": usage.ru_maxrss / 1024,
            "cpu": usage.ru_utime + usage.ru_stime, "server": watch.stop() if watch else "-",
            "status": process.returncode, "load": load, "stderr": err.strip()[-300:]}


class ServerCpu(threading.Thread):
    """CPU seconds of the PostgreSQL backends connected to one database (the server must run
    on this machine): polled every 50 ms from ``/proc`` while they live, so the last 50 ms of
    a backend that exits may be missed."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.done = url, threading.Event()
        self.seen: dict[int, float] = {}  # backend pid -> its CPU seconds, last seen
        self.start()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            query = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() " \
                    "AND pid <> pg_backend_pid()"
            while not self.done.wait(0.05):
                for (pid,) in conn.execute(query).fetchall():
                    with contextlib.suppress(OSError):  # exited meanwhile
                        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]
                        ticks = sum(int(f) for f in fields.split()[11:13])
                        self.seen[pid] = ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> str:
        self.done.set()
        self.join()
        return f"{sum(self.seen.values()):.1f}"


def response_keys(url: str) -> list[tuple[object, ...]]:
    """(meeting, question number, split, setting, mode, seed, model) of every stored response."""
    from sqlalchemy import text

    from db.engine import get_engine

    query = text("SELECT m.external_id, q.number, r.split, r.setting, r.mode, r.seed, r.model "
                 "FROM response s JOIN run r ON r.id = s.run_id JOIN question q ON "
                 "q.id = s.question_id JOIN meeting m ON m.id = q.meeting_id "
                 "WHERE r.variant = '' AND r.language = 'en' ORDER BY s.id")
    with get_engine(url).connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


def write_csv(path: Path, keys: list[tuple[object, ...]], rows: int) -> None:
    """``rows`` distinct scores: 4 judges x 25 samples and 48 crowd annotators per response."""
    combos = [(f"judge-{j}", "", s) for j in range(4) for s in range(25)]
    combos += [("crowd-human", f"annotator-{a:02d}", 0) for a in range(48)]
    rng = random.Random(0)
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(HEADER)
        written = 0
        for evaluator, annotator, sample in combos:
            for meeting, number, split, setting, mode, seed, model in keys:
                out.writerow([meeting, number, split, setting, mode,
                              "" if seed == -1 else seed, model, evaluator, annotator, sample,
                              rng.randint(2, 20) / 2])
                written += 1
                if written == rows:
                    return
    raise SystemExit(f"only {written} distinct scores can be made, fewer than {rows}")


def python_of(tree: Path) -> Path:
    """The Python that runs the project in ``tree`` (its ``.venv``; this one for ours)."""
    return Path(sys.executable) if tree == ROOT else tree / ".venv" / "bin" / "python"


class Databases:
    """Fresh copies of a database holding the bundled data, for SQLite or PostgreSQL, with the
    schema that the project in ``tree`` makes (``init``)."""

    def __init__(self, kind: str, folder: Path, pg_url: str, tree: Path = ROOT) -> None:
        self.kind, self.folder, self.pg_url, self.tree = kind, folder, pg_url, tree
        self.made: list[str] = []
        self.file = folder / f"template-{uuid.uuid4().hex[:8]}.db"
        self.template = (f"sqlite:///{self.file}" if kind == "sqlite"
                         else self._pg_create(f"elitr_bench_template_{uuid.uuid4().hex[:8]}"))
        result = measure([str(python_of(tree)), "-m", "elitr_core", "init", "--db",
                          self.template], cwd=tree)
        if result["status"] != 0:
            raise SystemExit(f"init failed: {result['stderr']}")

    def _pg_admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.pg_url, autocommit=True) as connection:
            connection.execute(sql)

    def _pg_create(self, name: str, template: str | None = None) -> str:
        self._pg_admin(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template
                                                      else ""))
        return self.pg_url.rsplit("/", 1)[0] + f"/{name}"

    def fresh(self) -> str:
        """A new copy of the template; its URL."""
        if self.kind == "sqlite":
            target = self.folder / f"copy-{uuid.uuid4().hex[:8]}.db"
            shutil.copy(self.file, target)
            return f"sqlite:///{target}"
        from db.engine import dispose_engines

        dispose_engines()  # PostgreSQL copies a template nobody is connected to
        name = self.template.rsplit("/", 1)[1]
        copy = self._pg_create(f"elitr_bench_{uuid.uuid4().hex[:8]}", template=name)
        self.made.append(copy.rsplit("/", 1)[1])
        return copy

    def drop_all(self) -> None:
        from db.engine import dispose_engines

        dispose_engines()
        if self.kind == "postgresql":
            for name in [*self.made, self.template.rsplit("/", 1)[1]]:
                self._pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def score_count(url: str) -> int:
    from sqlalchemy import text

    from db.engine import dispose_engines, get_engine

    with get_engine(url).connect() as connection:
        count = int(connection.execute(text("SELECT count(*) FROM score")).scalar_one())
    dispose_engines()
    return count


def import_rows(databases: Databases, path: Path, rows: int, before: Databases | None
                ) -> list[str]:
    """The table lines of one database and size: ours, pandas, and before when asked (into
    a database made by the checkout before)."""
    lines = []
    url = databases.fresh()
    stored = score_count(url)
    server = url if databases.kind == "postgresql" else None
    ours = measure([sys.executable, "-m", "elitr_core", "import", str(path), "--db", url],
                   server=server)
    added = score_count(url) - stored
    if ours["status"] != 0 or added != rows:
        raise SystemExit(f"import failed ({added} of {rows} stored): {ours['stderr']}")
    lines.append(_line(databases.kind, rows, "ours (`import`)", ours))
    url = databases.fresh()
    yardstick = measure([sys.executable, "-c", PANDAS, str(path), url],
                        server=url if server else None)
    if yardstick["status"] != 0:
        raise SystemExit(f"pandas failed: {yardstick['stderr']}")
    lines.append(_line(databases.kind, rows, "pandas read_csv + to_sql", yardstick))
    if before is not None:
        url = before.fresh()
        stored = score_count(url)
        old = measure([str(python_of(before.tree)), "-m", "elitr_core", "import", str(path),
                       "--db", url], cwd=before.tree, server=url if server else None)
        if old["status"] != 0 or score_count(url) - stored != rows:
            raise SystemExit(f"before failed: {old['stderr']}")
        lines.append(_line(databases.kind, rows, f"before ({_revision(before.tree)})", old))
    return lines


def _revision(tree: Path) -> str:
    """What ``tree`` holds: a git revision, or the name of the folder."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True)
    return head.stdout.strip() if head.returncode == 0 and (tree / ".git").exists() \
        else str(tree)


def _line(kind: str, rows: int, how: str, result: dict[str, float | int | str]) -> str:
    line = (f"| {kind} | {rows:,} | {how} | {result['seconds']:.1f} | {result['cpu']:.1f} | "
            f"{result['server']} | {result['mb']:,.0f} | "
            f"{float(result['seconds']) and rows / float(result['seconds']):,.0f} | "
            f"{result['load']} |")
    print(line, flush=True)
    return line


def junk_files(folder: Path) -> dict[str, Path]:
    """CSVs of 10 million junk lines (after a scores header, without one, after a header and a
    quote that never closes), a ZIP of 20,000 small members."""
    rng = random.Random(1)
    files = {}
    header = ",".join(HEADER) + "\n"
    for name, start in (("10M junk lines after a scores header", header),
                        ("10M junk lines, no header", ""),
                        ("10M junk lines after a header and an unclosed quote", header + '"')):
        path = folder / f"junk-{len(files)}.csv"
        with path.open("w", encoding="utf-8") as handle:
            handle.write(start)
            words = ["x", "junk,", ",,", "1,2", "\"a\"", "é;", "0x00"]
            if start.endswith('"'):  # no quote may close the one left open
                words.remove('"a"')
            for _ in range(100):
                handle.write("".join(rng.choice(words) + "\n" for _ in range(100_000)))
        files[name] = path
    path = folder / "many.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for index in range(20_000):
            archive.writestr(f"elitr-bench-qa_dev_st_model-{index:05d}.json", "{}")
    files["ZIP of 20,000 small members"] = path
    return files


def small_members_zip(path: Path, members: int = 20_000) -> Path:
    """A ZIP of ``members`` small valid responses files: each holds one response, with a GPT-4
    score, of a new model to one bundled QA dev question (the questions taken in turn)."""
    from elitr_core.data.benchmark import DATA_DIR, read_path

    questions = [q for f in read_path(DATA_DIR / "data.zip")
                 if f.name == "elitr-bench-qa_dev.json" for q in f.questions]
    with zipfile.ZipFile(path, "w") as archive:
        for index in range(members):
            q = questions[index % len(questions)]
            body = {"meetings": [{"id": q.meeting, "questions": [{
                "id": str(q.number), "question-type": q.question_type,
                "answer-position": q.answer_position, "question": q.text,
                "groundtruth-answer": q.reference, "generated-responses": [{
                    "model": f"small-{index // len(questions)}",
                    "generated-response": f"answer {index}",
                    "gpt-4-eval_score": str(index % 10 + 1)}]}]}]}
            archive.writestr(f"elitr-bench-qa_dev_st_small-{index:05d}.json", json.dumps(body))
    return path


def refusals(databases: Databases, folder: Path) -> list[str]:
    """The refusal lines: seconds, peak MB, exit status, the message's start."""
    lines = []
    for name, path in junk_files(folder).items():
        url = databases.fresh()
        before = score_count(url)
        result = measure([sys.executable, "-m", "elitr_core", "import", str(path), "--db", url])
        unchanged = score_count(url) == before
        line = (f"| {databases.kind} | {name} ({path.stat().st_size / 1e6:,.0f} MB) | "
                f"{result['seconds']:.1f} | {result['cpu']:.1f} | {result['mb']:,.0f} | "
                f"{result['status']} | "
                f"{'yes' if unchanged else 'NO'} | {str(result['stderr'])[:90]} | "
                f"{result['load']} |")
        print(line, flush=True)
        lines.append(line)
    return lines


def accepted_zip(databases: Databases, folder: Path, before: Databases | None
                 ) -> list[str]:
    """The ZIP of 20,000 small valid members, imported (ours, and before when asked)."""
    path = folder / "small.zip"
    if not path.exists():
        small_members_zip(path)
    lines = []
    runs = [("ours (`import`)", databases)]
    if before is not None:
        runs.append((f"before ({_revision(before.tree)})", before))
    for how, made in runs:
        url = made.fresh()
        stored = score_count(url)
        result = measure([str(python_of(made.tree)), "-m", "elitr_core", "import", str(path),
                          "--db", url], cwd=made.tree,
                         server=url if databases.kind == "postgresql" else None)
        added = score_count(url) - stored
        if result["status"] != 0 or added != 20_000:
            raise SystemExit(f"{how}: {added} of 20,000 scores stored: {result['stderr']}")
        lines.append(_line(databases.kind, 20_000, f"ZIP of 20,000 small files: {how}", result))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[100_000, 1_000_000],
                        help="sizes to import (none: the refusals only)")
    parser.add_argument("--databases", nargs="+", default=["sqlite", "postgresql"],
                        choices=["sqlite", "postgresql"])
    parser.add_argument("--pg-url", default=os.environ.get(
        "DATABASE_URL_TEST", "postgresql://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--before", type=Path, help="a checkout of the project before")
    parser.add_argument("--no-refusals", action="store_true")
    parser.add_argument("--no-zip", action="store_true",
                        help="skip the ZIP of 20,000 small valid files")
    args = parser.parse_args()
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print("| database | rows | how | seconds | CPU s | server CPU s | peak MB | rows/s | "
          "load (1 min) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="bench-import-") as scratch:
        folder = Path(scratch)
        refused: list[str] = []
        for kind in args.databases:
            databases = Databases(kind, folder, args.pg_url)
            before = Databases(kind, folder, args.pg_url, args.before) if args.before else None
            try:
                keys = response_keys(databases.template)
                for rows in args.rows:
                    path = folder / f"scores-{rows}.csv"
                    if not path.exists():
                        write_csv(path, keys, rows)
                    import_rows(databases, path, rows, before)
                if not args.no_zip:
                    accepted_zip(databases, folder, before)
                if not args.no_refusals:
                    refused += _refusals_of(databases, folder)
            finally:
                databases.drop_all()
                if before:
                    before.drop_all()
        if refused:
            print("\n| database | input | seconds | CPU s | peak MB | exit | database unchanged | "
                  "message | load (1 min) |")
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            print("\n".join(refused))
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")


def _refusals_of(databases: Databases, folder: Path) -> list[str]:
    print(f"(refusals on {databases.kind} follow)", flush=True)
    return refusals(databases, folder)


if __name__ == "__main__":
    main()
