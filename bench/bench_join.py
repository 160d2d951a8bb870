"""A burst of Prolific arrivals at one study on one server, side by side with an older commit.

``--arrivals`` participants (40) open the study's Prolific link within ``--within`` seconds
(1 s), each with an invented participant id, over Streamlit's own websocket protocol
(``tests/streamlit_ws.py``, no browser). The study has ``--seats`` tasks (20: two meetings of
the bundled data, 10 annotators each), so about half are admitted and half are told the study
is full. Figures: the first page (link opened -> page drawn) median and max, admitted and
refused, and the most connections PostgreSQL showed waiting on a lock at once (sampled every
50 ms). The join limit per address is off for the run (every arrival comes from 127.0.0.1 and
stands for a different person):

    python bench/bench_join.py --before REF

Each tree runs on its own fresh PostgreSQL database (``--pg``, an admin URL), its own code
making the study; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bench.bench_crowd import _print  # noqa: E402
from bench.crowd_server import Database, database, server  # noqa: E402
from bench.report import uptime  # noqa: E402
from bench.trees import checkout, clean_up  # noqa: E402
from tests.streamlit_ws import Session  # noqa: E402

SETUP = """
import dataclasses, sys
from db.transaction import writing
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database
url, per_item = sys.argv[1], int(sys.argv[2])
assert main(["init", "--db", url]) == 0
off = {"join_limit": 0} if "join_limit" in {f.name for f in dataclasses.fields(StudySpec)} else {}
with writing(open_database(url)) as session:
    create_study(session, StudySpec(name="burst", per_item=per_item, split="test2",
                                    setting="qa", mode="st", **off,
                                    meetings=("meeting_en_test2_001", "meeting_en_test2_002")))
"""
ADMITTED, REFUSED = ("Scoring with the keyboard", "Item 1 of"), ("enough annotators", "full")


def _lock_waiters(db: Database, stop: threading.Event, most: list[int]) -> None:
    """Sample how many of the database's connections wait on a lock (keep the most)."""
    import psycopg

    with psycopg.connect(db.admin_url or "", autocommit=True) as conn:
        while not stop.is_set():
            n = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND "
                             "wait_event_type = 'Lock'", (db.name,)).fetchone()
            most[0] = max(most[0], int(n[0]) if n else 0)
            time.sleep(0.05)


async def _arrive(base: str, i: int, delay: float) -> tuple[float, str]:
    await asyncio.sleep(delay)
    pid, session = f"{i + 1:024x}", f"{10_000 + i:024x}"
    query = f"study=burst&PROLIFIC_PID={pid}&STUDY_ID={'b' * 24}&SESSION_ID={session}"
    started = time.monotonic()
    try:
        async with await Session.open(base, query=query, timeout=300) as s:
            text = s.page.text()
    except Exception as exc:  # noqa: BLE001 - counted as a failure, the burst goes on
        return time.monotonic() - started, f"failed: {exc}"
    seconds = time.monotonic() - started
    kind = "admitted" if any(t in text for t in ADMITTED) else \
        "refused" if any(t in text for t in REFUSED) else f"other: {text[:80]}"
    return seconds, kind


async def _burst(base: str, arrivals: int, within: float) -> list[tuple[float, str]]:
    rng = random.Random(0)
    return await asyncio.gather(*(_arrive(base, i, rng.uniform(0, within))
                                  for i in range(arrivals)))


def _run_tree(root: Path, args: argparse.Namespace, tmp: Path) -> dict[str, float]:
    with database(args.pg, tmp) as db:
        done = subprocess.run([sys.executable, "-c", SETUP, db.url, str(args.seats // 2)],
                              cwd=root, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"study set-up failed in {root}: {done.stderr[-2000:]}")
        with server(root, db.url, tmp / f"server-{root.name}.log", []) as (base, _pid):
            stop, most = threading.Event(), [0]
            sampler = threading.Thread(target=_lock_waiters, args=(db, stop, most))
            sampler.start()
            try:
                results = asyncio.run(_burst(base, args.arrivals, args.within))
            finally:
                stop.set()
                sampler.join()
    seconds = [s for s, _ in results]
    kinds = [k for _, k in results]
    refused = [s for s, k in results if k == "refused"]
    return {"first page p50 s": statistics.median(seconds), "first page max s": max(seconds),
            "refusal p50 s": statistics.median(refused) if refused else float("nan"),
            "admitted": kinds.count("admitted"), "refused": kinds.count("refused"),
            "other": len(kinds) - kinds.count("admitted") - kinds.count("refused"),
            "most lock waiters": most[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=int, default=40)
    parser.add_argument("--within", type=float, default=1.0, help="seconds the arrivals span")
    parser.add_argument("--seats", type=int, default=20, help="tasks (two meetings' seats)")
    parser.add_argument("--before", help="a git commit to run side by side with this tree")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="PostgreSQL admin URL")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-join-"))
    try:
        trees = {"this tree": HERE}
        if args.before:
            trees = {f"before ({args.before[:10]})": checkout(args.before, tmp), **trees}
        print(f"{args.arrivals} arrivals within {args.within:g} s, {args.seats} tasks, "
              "one server, PostgreSQL")
        print(f"uptime before: {uptime()}", flush=True)
        results = {label: _run_tree(root, args, tmp) for label, root in trees.items()}
        print(f"uptime after:  {uptime()}")
        _print(results)  # type: ignore[arg-type]
    finally:
        clean_up(tmp, args.before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
