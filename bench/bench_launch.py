"""A study launch: Prolific arrivals at a given rate against one replica, or two behind the
shipped nginx, side by side with an older commit; and a long study's turnover.

Every arrival opens the study's Prolific link (an invented participant id) over Streamlit's
own websocket protocol (``tests/streamlit_ws.py``, no browser), each from its own address
(127.0.x.y: the join limit per address stays on, and nginx's sticky hash spreads them as it
would real participants). ``--arrivals`` within ``--within`` seconds (uniformly at random);
the study has ``--seats`` places (default: one per arrival) over two meetings of the bundled
data. Everyone who is admitted holds until the burst is over, then closes the walkthrough and
scores one item every ``--pace`` seconds (+-25 %) for ``--duration`` measured seconds.

Figures per tree and target (``--replicas 1,2``: one ``streamlit run server.py``; two from
``deploy/replicas.sh 2`` behind ``deploy/nginx/elitr-dashboard.conf``, over TLS):

- the first page (link opened -> first page drawn: a first entry's page is the walkthrough
  over the header) p50/p95/max; admitted, refused, failed; participations stored against
  seats (over-admission); with ``--steady-on``, the first item (walkthrough closed -> first
  item drawn) p50/p95/max, everyone closing it at once when the burst is over;
- the server's CPU per arrival (all replicas, over the burst) and per scored item (the pick's
  and the submit's reruns, over the measured window); submit -> next item p50/p95/max;
- RSS of the replicas before and after the burst (MiB, summed), PostgreSQL's CPU per arrival.

A burst starts once the replicas are idle (their start-up warm-up of the analysis caches done,
as on a server deployed before a launch): ``ELITR_WARM=0`` is no longer needed to keep the
warm-up out of the figures, and with it the first arrivals paid the imports the warm-up does
(about 5 ms an arrival over 300).

``--turnover N`` instead plays a long study on one replica, compressed: ``--places``
participants at a time, each closing the walkthrough, scoring ``--stay`` items at ``--pace``
and leaving, a new arrival taking the place, until N sessions have ended; the replica's RSS
every ``--sample`` seconds is printed as a curve, and its last value against the value after
the first quarter of the sessions.

    python bench/bench_launch.py --arrivals 500 --within 20 --replicas 2,1 --pace 20 \
        --steady-on 2
    python bench/bench_launch.py --arrivals 60 --within 6 --pace 2 --before REF
    python bench/bench_launch.py --turnover 1200 --places 60 --stay 3 --pace 1

PostgreSQL only (``--pg``, an admin URL: a temporary database per tree and target). The load
average is printed before, between and after the runs: the machine may be shared.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bench.bench_crowd import _print  # noqa: E402
from bench.crowd_server import Database, cpu_seconds, database, rss_mib  # noqa: E402
from bench.launch_site import Target, nginx_errors, target  # noqa: E402
from bench.report import uptime as _uptime  # noqa: E402
from bench.trees import checkout, clean_up  # noqa: E402
from tests.streamlit_ws import Session  # noqa: E402

SETUP = """
import sys
from db.transaction import writing
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database
url, per_item = sys.argv[1], int(sys.argv[2])
assert main(["init", "--db", url]) == 0
with writing(open_database(url)) as session:
    create_study(session, StudySpec(name="launch", per_item=per_item, split="test2",
                                    setting="qa", mode="st",
                                    meetings=("meeting_en_test2_001", "meeting_en_test2_002")))
"""
ADMITTED, REFUSED = "Scoring with the keyboard", ("enough annotators", "full", "network address")


def _address(i: int) -> str:
    """Participant ``i``'s own address (127.0.1.1, 127.0.1.2, ...: all of 127/8 is local)."""
    return f"127.0.{1 + i // 250}.{1 + i % 250}"


def _link(i: int) -> str:
    return (f"study=launch&PROLIFIC_PID={i + 1:024x}&STUDY_ID={'b' * 24}"
            f"&SESSION_ID={10**6 + i:024x}")


@dataclass
class Crowd:
    """What the participants saw."""

    first: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)  # submit -> next, inside the window
    item: list[float] = field(default_factory=list)  # walkthrough closed -> first item drawn
    failures: list[str] = field(default_factory=list)
    window: tuple[float, float] = (math.inf, math.inf)
    ended: int = 0  # sessions that left (turnover)

    def inside(self) -> bool:
        return self.window[0] <= time.monotonic() < self.window[1]


async def _open(site: Target, i: int, crowd: Crowd) -> Session | None:
    """Participant ``i`` opens the link; their session when admitted."""
    started = time.monotonic()
    try:
        s = await Session.open(site.base, query=_link(i), source=_address(i), tls=site.tls,
                               timeout=300)
    except Exception as exc:  # noqa: BLE001 - counted and reported, the crowd goes on
        crowd.first.append(time.monotonic() - started)
        crowd.kinds.append("failed")
        crowd.failures.append(f"{type(exc).__name__}: {exc}"[:160])
        return None
    crowd.first.append(time.monotonic() - started)
    text = s.page.text()
    kind = "admitted" if ADMITTED in text else \
        "refused" if any(r in text for r in REFUSED) else "other"
    crowd.kinds.append(kind)
    if kind != "admitted":
        if kind == "other":
            crowd.failures.append(f"other page: {text[:120]}")
        await s.close()
        return None
    return s


async def _score(s: Session, crowd: Crowd, rng: random.Random, pace: float, until: float,
                 items: int = 0) -> None:
    """Close the walkthrough, then a digit and Enter every ``pace`` s until ``until`` (or
    ``items`` items)."""
    try:
        # a first entry's page is the walkthrough alone: the first item is drawn on its close
        closed = await s.click("annotate-tour-done", timeout=120)
        crowd.item.append(closed.seconds)
        done = 0
        while time.monotonic() < until and (not items or done < items):
            await asyncio.sleep(rng.uniform(0.75, 1.25) * pace)
            shown = s.page.text()
            await s.click(f"annotate-pick-{rng.randint(1, 10)}", timeout=120)
            counted = crowd.inside()
            page = await s.click("annotate-submit", timeout=120)
            if page.text() == shown:
                crowd.failures.append("a submit showed no next item")
            if counted and crowd.inside():
                crowd.latency.append(page.seconds)
            done += 1
    except Exception as exc:  # noqa: BLE001 - counted and reported, the crowd goes on
        crowd.failures.append(f"{type(exc).__name__}: {exc}"[:160])
    finally:
        await s.close()
        crowd.ended += 1


def _cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids)


def _rss(pids: list[int]) -> float:
    return sum(rss_mib(pid) for pid in pids)


def _q(values: list[float], p: int) -> float:
    if len(values) < 2:
        return values[0] if values else math.nan
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


def _stored(db: Database) -> int:
    """Participations the study holds (neither lapsed nor excluded)."""
    import psycopg

    with psycopg.connect(db.url.replace("+psycopg", "")) as conn:
        row = conn.execute("SELECT count(*) FROM participation WHERE status NOT IN "
                           "('lapsed', 'excluded')").fetchone()
    return int(row[0]) if row else -1


async def _idle(pids: list[int], quiet: float = 0.02, every: float = 1.0,
                limit: float = 240.0) -> float:
    """Wait until the replicas use under ``quiet`` CPU-s in ``every`` s: their start-up done
    (the analysis caches' warm-up, ``ui/warm.py``, imports and computes for seconds in the
    background, as a deployed server has long finished before a launch). The seconds waited."""
    began = time.monotonic()
    last = _cpu(pids)
    while time.monotonic() - began < limit:
        await asyncio.sleep(every)
        now = _cpu(pids)
        if now - last < quiet:
            break
        last = now
    return time.monotonic() - began


async def _launch(site: Target, args: argparse.Namespace, db: Database) -> dict[str, Any]:
    crowd, n, rng = Crowd(), args.arrivals, random.Random(0)
    delays = sorted(rng.uniform(0, args.within) for _ in range(n))
    settled = await _idle(site.pids)
    rss0, cpu0, pg0 = _rss(site.pids), _cpu(site.pids), db.backend_cpu()

    async def arrive(i: int) -> Session | None:
        await asyncio.sleep(delays[i])
        return await _open(site, i, crowd)

    began = time.monotonic()
    sessions = await asyncio.gather(*(arrive(i) for i in range(n)))
    burst_s, cpu1, pg1 = time.monotonic() - began, _cpu(site.pids), db.backend_cpu()
    out: dict[str, Any] = {
        "start-up settled s": settled, "arrivals": n, "admitted": crowd.kinds.count("admitted"),
        "refused": crowd.kinds.count("refused"), "failed": n - crowd.kinds.count(
            "admitted") - crowd.kinds.count("refused"),
        "stored / seats": f"{_stored(db)} / {args.seats or n}",
        "burst s": burst_s, "first p50 s": _q(crowd.first, 50),
        "first p95 s": _q(crowd.first, 95), "first max s": max(crowd.first),
        "CPU ms/arrival": 1000 * (cpu1 - cpu0) / n,
        "PG CPU ms/arrival": 1000 * sum(v - pg0.get(k, 0.0) for k, v in pg1.items()) / n,
        "RSS MiB before": rss0, "RSS MiB after burst": _rss(site.pids)}
    admitted = [s for s in sessions if s is not None]
    if args.pace and args.duration and admitted and len(site.pids) in args.steady_on:
        out |= await _steady(site, admitted, crowd, args)
    else:
        await asyncio.gather(*(s.close() for s in admitted))
    out["failure kinds"] = sorted({f.split(":")[0] for f in crowd.failures})[:4]
    return out


async def _steady(site: Target, sessions: list[Session], crowd: Crowd,
                  args: argparse.Namespace) -> dict[str, Any]:
    """Everyone scores at ``pace``; ``duration`` s measured after one pace (all have begun)."""
    start = time.monotonic() + 1.25 * args.pace + 5
    crowd.window = (start, start + args.duration)
    tasks = [asyncio.create_task(_score(s, crowd, random.Random(i), args.pace,
                                        crowd.window[1]))
             for i, s in enumerate(sessions)]
    await asyncio.sleep(max(0.0, start - time.monotonic()))
    cpu0 = _cpu(site.pids)
    await asyncio.sleep(args.duration)
    cpu = _cpu(site.pids) - cpu0
    rss = _rss(site.pids)
    await asyncio.gather(*tasks)
    items = len(crowd.latency)
    # everyone closes the walkthrough at once when the burst is over: a harder burst of first
    # items than a launch brings (real participants read it for seconds, at their own times)
    return {"first item p50 s (all close the walkthrough at once)": _q(crowd.item, 50),
            "first item p95 s": _q(crowd.item, 95),
            "first item max s": max(crowd.item, default=math.nan),
            "scored in window": items, "submits/s": items / args.duration,
            "next p50 s": _q(crowd.latency, 50), "next p95 s": _q(crowd.latency, 95),
            "next max s": max(crowd.latency, default=math.nan),
            "CPU ms/item": 1000 * cpu / items if items else math.nan, "RSS MiB steady": rss}


async def _turnover(site: Target, args: argparse.Namespace) -> dict[str, Any]:
    """``places`` participants at a time until ``turnover`` sessions have ended."""
    crowd, pid = Crowd(), site.pids[0]
    curve: list[tuple[float, int, float]] = []
    nxt = iter(range(10**9))
    began = time.monotonic()

    async def place(k: int) -> None:
        rng = random.Random(k)
        await asyncio.sleep(rng.uniform(0, args.pace * args.stay))
        while crowd.ended < args.turnover:
            s = await _open(site, next(nxt), crowd)
            if s is None:
                crowd.ended += 1
                continue
            await _score(s, crowd, rng, args.pace, math.inf, items=args.stay)

    tasks = [asyncio.create_task(place(k)) for k in range(args.places)]
    while not all(t.done() for t in tasks):
        curve.append((time.monotonic() - began, crowd.ended, rss_mib(pid)))
        await asyncio.sleep(args.sample)
    curve.append((time.monotonic() - began, crowd.ended, rss_mib(pid)))
    quarter = next(r for t, e, r in curve if e >= args.turnover / 4)
    print("\nseconds | sessions ended | RSS MiB")
    for t, e, r in curve:
        print(f"{t:7.0f} | {e:14d} | {r:7.1f}")
    return {"sessions": len(crowd.first), "refused or failed": len(crowd.first) -
            crowd.kinds.count("admitted"), "RSS MiB start": curve[0][2],
            "RSS MiB after 1st quarter": quarter, "RSS MiB max": max(r for _, _, r in curve),
            "RSS MiB end": curve[-1][2], "end / quarter": curve[-1][2] / quarter,
            "failure kinds": sorted({f.split(":")[0] for f in crowd.failures})[:4]}


def _run(root: Path, args: argparse.Namespace, count: int, tmp: Path) -> dict[str, Any]:
    seats = args.seats or (args.turnover + args.places if args.turnover else args.arrivals)
    tmp.mkdir(parents=True)
    with database(args.pg, tmp) as db:
        done = subprocess.run([sys.executable, "-c", SETUP, db.url, str(math.ceil(seats / 2))],
                              cwd=root, capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"study set-up failed in {root}: {done.stderr[-2000:]}")
        with target(root, db.url, tmp, count) as site:
            result = asyncio.run(_turnover(site, args) if args.turnover
                                 else _launch(site, args, db))
        if count == 2:
            result["nginx errors"] = len(nginx_errors(tmp / "nginx"))
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arrivals", type=int, default=500)
    parser.add_argument("--within", type=float, default=20.0, help="seconds the arrivals span")
    parser.add_argument("--seats", type=int, default=0, help="the study's places (0: arrivals)")
    parser.add_argument("--replicas", default="1", help="targets: 1, 2 or 2,1")
    parser.add_argument("--pace", type=float, default=0.0, help="seconds per item (0: none)")
    parser.add_argument("--duration", type=float, default=40.0, help="measured seconds")
    parser.add_argument("--steady-on", default="1,2",
                        help="the targets (replica counts) whose participants go on scoring")
    parser.add_argument("--turnover", type=int, default=0, help="sessions of a long study")
    parser.add_argument("--places", type=int, default=60, help="turnover: at once")
    parser.add_argument("--stay", type=int, default=3, help="turnover: items per session")
    parser.add_argument("--sample", type=float, default=10.0, help="turnover: RSS every s")
    parser.add_argument("--before", help="a git commit to run side by side with this tree")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="PostgreSQL admin URL")
    args = parser.parse_args()
    args.steady_on = {int(c) for c in args.steady_on.split(",")}
    tmp = Path(tempfile.mkdtemp(prefix="bench-launch-"))
    try:
        trees = {"this tree": HERE}
        if args.before:
            trees = {f"before ({args.before[:10]})": checkout(args.before, tmp), **trees}
        counts = [1] if args.turnover else [int(c) for c in args.replicas.split(",")]
        what = (f"turnover: {args.turnover} sessions, {args.places} at once, {args.stay} items "
                f"at {args.pace:g} s" if args.turnover else
                f"{args.arrivals} arrivals within {args.within:g} s, pace {args.pace:g} s, "
                f"{args.duration:g} s measured")
        print(f"{what}; PostgreSQL; {subprocess.getoutput('nproc')} cores")
        print(f"uptime before: {_uptime()}", flush=True)
        results = {}
        for count in counts:
            for label, root in trees.items():
                name = f"{label}, {count} replica{'s' if count > 1 else ''}"
                results[name] = _run(root, args, count, tmp / f"{len(results)}")
                print(f"{name}: {results[name]}\n  ({_uptime()})", flush=True)
        print(f"uptime after:  {_uptime()}")
        names = {k: None for r in results.values() for k in r}  # every figure, in order
        _print({label: {k: r.get(k, "-") for k in names} for label, r in results.items()})
    finally:
        clean_up(tmp, args.before)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
