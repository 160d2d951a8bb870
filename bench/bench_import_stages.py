"""Benchmark: where a scores-CSV import spends its time, stage by stage, in one process.

``import_scores_csv`` runs as the CLI runs it, on a copy of a database (``--db``, made by the
caller: SQLite file or PostgreSQL URL), with each stage's functions wrapped in timers: reading
the CSV into columns, the typed gate, resolving names to ids, staging, the duplicate check,
the changed-values check, the merge, the commit. Each stage's process CPU seconds and wall
seconds are printed, and on PostgreSQL the CPU seconds of the server backend (``/proc``: the
server must run on this machine), with the load average.

    python bench/bench_import_stages.py --db sqlite:///COPY.db FILE.csv [--tree DIR]

``--tree DIR`` times the code of another checkout (``git archive main | tar -x -C DIR``) on
the same file, for a side-by-side comparison (its database made by its own ``init``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import text

CPU: dict[str, float] = defaultdict(float)
WALL: dict[str, float] = defaultdict(float)
SERVER: dict[str, float] = defaultdict(float)
BACKEND: list[int] = []


def server_cpu() -> float:
    """CPU seconds of the PostgreSQL backend of the import (0 on SQLite)."""
    if not BACKEND:
        return 0.0
    fields = Path(f"/proc/{BACKEND[0]}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Clock:
    """Adds the time spent inside it to the stage ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.start = (time.process_time(), time.perf_counter(), server_cpu())

    def __exit__(self, *_: object) -> None:
        cpu, wall, server = self.start
        CPU[self.name] += time.process_time() - cpu
        WALL[self.name] += time.perf_counter() - wall
        SERVER[self.name] += server_cpu() - server


def timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with Clock(name):
            result = function(*args, **kwargs)
            return list(result) if name == "changed values" else result
    return wrapper


def timed_batches(function: Callable[[Path], Iterator[Any]]) -> Callable[[Path], Iterator[Any]]:
    """The CSV reader, timed from one batch to the next."""
    @functools.wraps(function)
    def wrapper(path: Path) -> Iterator[Any]:
        batches = function(path)
        while True:
            with Clock("read CSV"):
                batch = next(batches, None)
            if batch is None:
                return
            yield batch
    return wrapper


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--db", required=True)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the checkout whose code runs (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree))
    from db import score_staging
    from elitr_core.data import records, scores_csv
    from elitr_core.data.database import open_database, writing
    from elitr_core.data.report import ImportReport

    scores_csv._batches = timed_batches(scores_csv._batches)  # type: ignore[assignment]
    checker = records.ScoreRowChecker
    gate = "check_table" if hasattr(checker, "check_table") else "check_columns"  # before
    setattr(checker, gate, timed("typed gate", getattr(checker, gate)))
    resolver = scores_csv._Resolver
    resolver.resolve = timed("resolve ids", resolver.resolve)  # type: ignore[method-assign]
    staging = score_staging.ScoreStaging
    for name, method in (("stage", "write"), ("duplicates", "first_duplicate"),
                         ("changed values", "changed_values"), ("merge", "merge")):
        setattr(staging, method, timed(name, getattr(staging, method)))
    engine = open_database(args.db)
    load = Path("/proc/loadavg").read_text().split()[0]
    with Clock("total"):
        with writing(engine) as session:
            if engine.dialect.name == "postgresql":
                BACKEND.append(session.execute(text("SELECT pg_backend_pid()")).scalar_one())
            with Clock("total before commit"):
                scores_csv.import_scores_csv(session, args.csv, ImportReport())
    print(f"load average (1 min) before: {load}; after: "
          f"{Path('/proc/loadavg').read_text().split()[0]}")
    print("| stage | CPU s | server CPU s | wall s |")
    print("| --- | --- | --- | --- |")
    for name in CPU:
        print(f"| {name} | {CPU[name]:.2f} | {SERVER[name]:.2f} | {WALL[name]:.2f} |")


if __name__ == "__main__":
    main()
