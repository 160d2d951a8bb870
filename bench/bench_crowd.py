"""A crowd study against one server, over Streamlit's own websocket protocol, side by side
with an older commit.

N participants (``tests/streamlit_ws.py``: what the browser sends and reads, no browser) open
their token link, close the walkthrough and score items as the keyboard does: a digit, then
Enter. ``--pace 0`` scores as fast as they can; ``--pace 20`` one item per ~20 s (a reader's
pace, +-25 % so that they do not march in step), arrivals spread over one pace. After every
participant has scored once, ``--duration`` seconds are measured:

- submits/s; submit -> next item (Enter's rerun until the next item is drawn) p50/p95/max;
- the first page (link opened -> page drawn) p50/p95/max, over the arrivals;
- the server's CPU seconds per rerun and per submitted item (every rerun it causes);
- RSS of the server per open session (after the arrivals, less before them), and every 10 s
  of the window (start, max, end): with ``--stay K`` each participant leaves after K items and
  a new one takes the place, so a long run shows whether memory stays bounded;
- PostgreSQL's CPU: its backends serving this database, per submitted item.

Each tree runs on its own fresh database (its own code makes the study), one after the other:

    python bench/bench_crowd.py --participants 20 --pace 0 --duration 30
    python bench/bench_crowd.py --participants 500 --pace 20 --before REF
    python bench/bench_crowd.py --before REF --before-args "--runner.postScriptGC false"

PostgreSQL by default (``--pg``, an admin URL: a temporary database is made and dropped),
``--pg ''`` for SQLite. The load average is printed before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bench.crowd_server import (  # noqa: E402
    Database,
    cpu_seconds,
    database,
    make_study,
    rss_mib,
    server,
)
from bench.report import uptime  # noqa: E402
from bench.trees import checkout, clean_up  # noqa: E402
from tests.streamlit_ws import Session  # noqa: E402

ITEM = re.compile(r"Item (\d+) of (\d+)")


@dataclass
class Tally:
    """What the participants saw; ``window`` is (start, end) of the measured seconds."""

    first: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)  # submit -> next item, in the window
    submits: int = 0
    reruns: int = 0
    failures: list[str] = field(default_factory=list)
    window: tuple[float, float] = (0.0, 0.0)
    started: int = 0

    def inside(self) -> bool:
        return self.window[0] <= time.monotonic() < self.window[1]


def _item(text: str) -> int:
    found = ITEM.search(text)
    return int(found.group(1)) if found else -1


async def _score(s: Session, tally: Tally, rng: random.Random, pace: float) -> bool:
    """One item: a digit, (a pause), Enter; False at the end of the queue."""
    shown = _item(s.page.text())
    if shown < 0:
        return False
    await s.click(f"annotate-pick-{rng.randint(1, 10)}")
    counted = tally.inside()
    if pace:
        await asyncio.sleep(rng.uniform(0.3, 1.0))  # finds Enter
    page = await s.click("annotate-submit", timeout=120)
    if _item(page.text()) != shown + 1 and "All" not in page.text():
        tally.failures.append(f"after item {shown}: no next item")
    if counted and tally.inside():
        tally.submits += 1
        tally.reruns += 2
        tally.latency.append(page.seconds)
    return True


async def _session(base: str, token: str, tally: Tally, rng: random.Random, pace: float,
                   stay: int) -> None:
    """One participant: open the link, close the walkthrough, score until the window ends
    (or ``stay`` items, then leave)."""
    started = time.monotonic()
    s = await Session.open(base, query=f"token={token}", timeout=300)
    tally.first.append(time.monotonic() - started)
    if "annotate-tour-done" in s.page.keys():
        await s.click("annotate-tour-done")
    tally.started += 1
    done = 0
    while time.monotonic() < tally.window[1] and (not stay or done < stay):
        began = time.monotonic()
        if not await _score(s, tally, rng, pace):
            break
        done += 1
        if pace:
            await asyncio.sleep(max(0.0, rng.uniform(0.75, 1.25) * pace
                                    - (time.monotonic() - began)))
    await s.close()


async def _participant(base: str, tokens: list[str], tally: Tally, pace: float, delay: float,
                       seed: int, stay: int) -> None:
    """One place in the crowd: a participant, and with ``stay`` the next one who takes the
    place when they leave (a new link: a new session, the old one ends)."""
    rng = random.Random(seed)
    await asyncio.sleep(delay)
    while tokens and time.monotonic() < tally.window[1]:
        try:
            await _session(base, tokens.pop(), tally, rng, pace, stay)
        except Exception as exc:  # noqa: BLE001 - counted and reported, the crowd goes on
            tally.failures.append(f"{type(exc).__name__}: {exc}"[:200])
        if not stay:
            return


async def _sample_rss(pid: int, until: float, out: list[float]) -> None:
    while time.monotonic() < until:
        out.append(rss_mib(pid))
        await asyncio.sleep(10)


async def _crowd(base: str, tokens: list[str], args: argparse.Namespace,
                 pid: int, db: Database) -> dict[str, float]:
    """Run the participants; measure the window once all of them have arrived."""
    tally = Tally(window=(float("inf"), float("inf")))
    rss_before, n, pace = rss_mib(pid), args.participants, args.pace
    ramp = pace or 2.0
    tasks = [asyncio.create_task(_participant(base, tokens, tally, pace, ramp * i / n, i,
                                              args.stay)) for i in range(n)]
    while tally.started + len(tally.failures) < n and not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
    await asyncio.sleep(pace or 1.0)  # everyone has scored about once
    cpu0, pg0, own0 = cpu_seconds(pid), db.backend_cpu(), time.process_time()
    rss: list[float] = []
    tally.window = (time.monotonic(), time.monotonic() + args.duration)
    await _sample_rss(pid, tally.window[1], rss)
    cpu, pg1 = cpu_seconds(pid) - cpu0, db.backend_cpu()
    own = time.process_time() - own0  # this client's own share of the machine
    pg = sum(v - pg0.get(k, 0.0) for k, v in pg1.items())
    await asyncio.gather(*tasks)
    return {**_figures(tally, args.duration, cpu, pg),
            "RSS MiB/session": (rss[0] - rss_before) / n, "RSS MiB window start": rss[0],
            "RSS MiB window max": max(rss), "RSS MiB window end": rss[-1],
            "client CPU s/s": own / args.duration,
            "sessions opened": len(tally.first), "failures": len(tally.failures),
            "failure kinds": sorted({f.split(":")[0] for f in tally.failures})}


def _figures(t: Tally, duration: float, cpu: float, pg: float) -> dict[str, float]:
    def q(values: list[float], p: int) -> float:
        return statistics.quantiles(values, n=100)[p - 1] if len(values) > 1 else \
            (values[0] if values else float("nan"))

    n = max(t.submits, 1)
    return {"submits/s": t.submits / duration, "submits": t.submits,
            "next p50 s": q(t.latency, 50), "next p95 s": q(t.latency, 95),
            "next max s": max(t.latency, default=float("nan")),
            "first p50 s": q(t.first, 50), "first p95 s": q(t.first, 95),
            "first max s": max(t.first, default=float("nan")),
            "server CPU s/s": cpu / duration, "CPU ms/rerun": 1000 * cpu / max(t.reruns, 1),
            "CPU ms/item": 1000 * cpu / n, "PG CPU ms/item": 1000 * pg / n}


def _run_tree(root: Path, args: argparse.Namespace, extra: list[str], tmp: Path) -> dict:
    with database(args.pg or None, tmp) as db:
        tokens = make_study(root, db.url, _links_needed(args))
        with server(root, db.url, tmp / f"server-{root.name}.log", extra) as (base, pid):
            return asyncio.run(_crowd(base, tokens, args, pid, db))


def _links_needed(args: argparse.Namespace) -> int:
    """Links for the participants, and with --stay for those who take their places."""
    if not args.stay:
        return int(args.participants)
    per_item = args.pace or 0.2
    rounds = (args.duration + 2 * (args.pace or 2)) / (args.stay * per_item)
    return int(args.participants * (rounds + 2))


def _print(results: dict[str, dict[str, float]]) -> None:
    labels = list(results)
    print("\n| figure | " + " | ".join(labels) + " |")
    print("|---" * (len(labels) + 1) + "|")
    for name in next(iter(results.values())):
        cells = [results[label][name] for label in labels]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" if isinstance(c, float) and c < 10
                                         else f"{c:.1f}" if isinstance(c, float) else str(c)
                                         for c in cells) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=20)
    parser.add_argument("--pace", type=float, default=0.0,
                        help="seconds per item (0: as fast as they can)")
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds")
    parser.add_argument("--stay", type=int, default=0,
                        help="items each participant scores before leaving (a new one takes "
                             "the place); 0: all stay to the end")
    parser.add_argument("--before", help="a git commit to run side by side with this tree")
    parser.add_argument("--before-args", default="", help="server flags for --before's run")
    parser.add_argument("--args", default="", help="server flags for this tree's run")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="PostgreSQL admin URL ('' for SQLite)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-crowd-"))
    try:
        trees = {"this tree": (HERE, shlex.split(args.args))}
        if args.before:
            flags = f" {args.before_args}" if args.before_args else ""
            label = f"before ({args.before[:10]}{flags})"
            trees = {label: (checkout(args.before, tmp), shlex.split(args.before_args)),
                     **trees}
        print(f"{args.participants} participants, pace {args.pace or 'as fast as they can'}, "
              f"{args.duration:.0f} s measured, {'PostgreSQL' if args.pg else 'SQLite'}")
        print(f"uptime before: {uptime()}", flush=True)
        results = {}
        for label, (root, extra) in trees.items():
            results[label] = _run_tree(root, args, extra, tmp)
            print(f"{label}: {results[label]} ({uptime()})", flush=True)  # one tree done
        print(f"uptime after:  {uptime()}")
        _print(results)
    finally:
        clean_up(tmp, args.before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
