"""Benchmark: how long ``python -m elitr_core judge --backend openai`` takes to its first request.

Run ``python bench/bench_judge_start.py [--rounds 6] [--python /other/python3.11 ...]``. A fresh
SQLite database holds the bundled data; the loopback fake OpenAI server of the tests answers
after 0.1 s. Each run judges GPT-4's 130 QA-st test2 answers as a new evaluator, in a new
process, and records the seconds from the process start to the first request the server sees,
to the command's exit, and the CPU seconds the process used. Side by side, run by run in
turn (so that the machine's load falls on every variant alike):

- ``as shipped``: the command as ``python -m elitr_core`` runs it;
- ``usual collector``: the same with :func:`elitr_core.cli.startup.starting` made a no-op
  (Python's collector scans the objects start-up makes every 700 allocations);

each with this interpreter and every ``--python`` given (for example an interpreter built
without optimisations, run on this environment's packages through ``PYTHONPATH``). Medians
and ranges are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import uptime  # noqa: E402
from db.transaction import writing  # noqa: E402
from elitr_core.data.database import open_database  # noqa: E402
from elitr_core.data.importers import import_bundled  # noqa: E402
from tests.elitr_core.backends.fake_openai_server import (  # noqa: E402
    ServerScript,
    running_server,
)

#: The command with the start-up collector setting turned off, for the side-by-side figure.
USUAL_COLLECTOR = ("import runpy, elitr_core.cli.startup as s; s.starting = lambda: None; "
                   "runpy.run_module('elitr_core', run_name='__main__', alter_sys=True)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--python", action="append", default=[], metavar="PATH",
                        help="also time this interpreter (on this environment's packages)")
    args = parser.parse_args()
    url = f"sqlite:///{tempfile.mkdtemp()}/bench.db"
    with writing(open_database(url)) as session:
        import_bundled(session)
    packages = sysconfig.get_paths()["purelib"]
    variants: dict[str, tuple[list[str], dict[str, str]]] = {}
    for python in [sys.executable, *args.python]:
        extra = {} if python == sys.executable else {"PYTHONPATH": packages}
        name = f"{python} ({_version(python)})"
        variants[f"{name}, as shipped"] = ([python, "-m", "elitr_core"], extra)
        variants[f"{name}, usual collector"] = ([python, "-c", USUAL_COLLECTOR], extra)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
    print(f"{time.strftime('%Y-%m-%d %H:%M')}; before: {uptime()}")
    with running_server(ServerScript(latency=0.1)) as server:
        for round_ in range(args.rounds):
            for index, (name, (command, extra)) in enumerate(variants.items()):
                server.reset()
                argv = [*command, "judge", "--backend", "openai", "--judge-model", "judge",
                        "--base-url", server.base_url, "--style", "gpt4",
                        "--evaluator", f"bench-judge-{round_}-{index}", "--split", "test2",
                        "--setting", "qa", "--mode", "st", "--model", "GPT-4",
                        "--concurrency", "16", "--db", url]
                env = {**os.environ, "OPENAI_API_KEY": "EMPTY", **extra}
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.monotonic()
                subprocess.run(argv, env=env, cwd=ROOT, check=True, capture_output=True)
                whole = time.monotonic() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                first = min(r.started for r in server.successful()) - start
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                results[name].append((first, whole, cpu))
    print(f"after: {uptime()}; {args.rounds} rounds, 130 requests a run\n")
    print("| interpreter, variant | first request s: median (min-max) | whole command s: "
          "median | CPU s: median |")
    print("|---|---|---:|---:|")
    for name, runs in results.items():
        first_s, whole_s, cpu_s = zip(*runs, strict=True)
        print(f"| {name} | {statistics.median(first_s):.2f} ({min(first_s):.2f}-"
              f"{max(first_s):.2f}) | {statistics.median(whole_s):.2f} | "
              f"{statistics.median(cpu_s):.2f} |")


def _version(python: str) -> str:
    return subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True, check=True).stdout.strip()


if __name__ == "__main__":
    main()
