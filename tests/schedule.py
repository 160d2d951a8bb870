"""The order test files start in: the costliest first, so that two workers end together.

``make test`` runs the files on pytest-xdist workers, each file on one worker (``--dist
loadfile``), handed out in collection order (``--no-loadscope-reorder``). xdist's own order is
by number of tests, which sends the few-test, minutes-long files (a Chromium page walk, a
crowd of websocket participants, a model) last: one worker then runs such a file alone while
the other has long finished. Longest-first (the LPT rule of scheduling) bounds that tail by the
cost of the last, cheapest files.

A file's cost is its measured seconds in ``tests/durations.json`` (from a run's JUnit XML:
``python -m tests.schedule RUN.xml``), or, for a file not measured yet, an estimate from the
tiers of its tests (:data:`ESTIMATE`). The order is the same on every worker (xdist requires
identical collections): it depends only on the collected items and the committed file.

The files of a group in :data:`TOGETHER` are one unit of work: one after the other on one worker
(:func:`scheduler`), because they share work that a process does once (``smollm2.greedy``'s
plain answers), which two workers would each do.
"""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest

DURATIONS = Path(__file__).resolve().parent / "durations.json"

# Seconds a test of each tier takes, about (a test in several tiers counts its dearest one);
# only for files that tests/durations.json does not list yet.
ESTIMATE = {"browser": 20.0, "server": 10.0, "model": 10.0, "postgres": 2.0}
PLAIN = 0.3

#: Files that run on one worker, in this order (each group is one unit of work for xdist).
#: test_serve_transformers computes every plain answer that test_smollm2 compares with (the
#: same prompts, ``smollm2.greedy``, cached per process) while its servers answer; on two
#: workers each file computed them all (56 plain generations done twice, ~60 CPU-s).
TOGETHER: tuple[tuple[str, ...], ...] = (
    ("tests/elitr_core/backends/test_serve_transformers.py",
     "tests/elitr_core/backends/test_smollm2.py"),
)


#: Tiers whose tests leave their worker's core partly idle: the test waits on other processes
#: (Chromium drawing, the app server's script runs, nginx, Label Studio) and on fixed pauses.
#: A whole run at ``-n 2`` on the two cores left 265-289 core-seconds idle (17%, mostly while
#: both workers ran browser files); at 3 workers, 45 (busy CPU rose 8%: one more collection, the
#: session fixtures once more, contention), and the run took 844 s instead of 895 s (the same
#: session). The quick tier, which has none of these, stays at a worker per core: it left 24
#: core-seconds idle of 426.
WAITING = ("browser", "server")


def workers(config: pytest.Config) -> int | None:
    """``-n auto``'s number of workers: one per usable core, and one more when the run selects
    tests of a :data:`WAITING` tier (``make test``; not ``make quick``, whose ``-m`` leaves them
    out). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides when set (None: xdist's own rule)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from _pytest.mark.expression import Expression

    usable = cores()
    chosen = config.getoption("markexpr", "") or ""
    if not chosen:
        return usable + 1
    expression = Expression.compile(chosen)

    def only(tier: str) -> Any:  # a test with this tier's mark alone
        return lambda name, /, **_: name == tier

    waits = any(expression.evaluate(only(tier)) for tier in WAITING)
    return usable + 1 if waits else usable


def file_of(item: pytest.Item) -> str:
    """The file part of a test's id (xdist's unit of work under --dist loadfile)."""
    return item.nodeid.split("::", 1)[0]


def unit_of(nodeid: str) -> str:
    """The unit of work of a test (its file, or the first file of its :data:`TOGETHER` group):
    what xdist hands to one worker."""
    name = nodeid.split("::", 1)[0]
    return next((group[0] for group in TOGETHER if name in group), name)


def estimate(items: Iterable[pytest.Item]) -> float:
    """Seconds the items of one unmeasured file should take, from their tiers."""
    return sum(max((ESTIMATE[m.name] for m in item.iter_markers() if m.name in ESTIMATE),
                   default=PLAIN) for item in items)


def load(path: Path = DURATIONS) -> dict[str, float]:
    """The measured seconds per file; none when the file is missing or unreadable (the
    estimates then order every file)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def by_cost(items: Sequence[pytest.Item], measured: dict[str, float]) -> list[pytest.Item]:
    """``items`` with whole units (files, or :data:`TOGETHER` groups of files in their order)
    ordered costliest first (ties by name); a file's tests keep their order."""
    files: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[file_of(item)].append(item)
    cost = {name: measured.get(name, estimate(tests)) for name, tests in files.items()}
    units: dict[str, list[str]] = defaultdict(list)
    for name in files:
        units[unit_of(name)].append(name)
    for unit, names in units.items():
        group = next((g for g in TOGETHER if unit in g), (unit,))
        names.sort(key=group.index)
    unit_cost = {unit: sum(cost[name] for name in names) for unit, names in units.items()}
    order = sorted(units, key=lambda unit: (-unit_cost[unit], unit))
    return [item for unit in order for name in units[unit] for item in files[name]]


#: The folder of the files that go to the waiting lane (:func:`scheduler`): Selenium driving
#: Chromium through the app's pages. In a whole run (2026-11-28, two workers) these 18 files held
#: their worker 655 s while the tests' own process slept 386 s of it (fixed pauses and
#: Selenium's polling) and the whole browser tier, alone on the two cores, used 186 CPU-s in
#: 337 s of wall time: their worker's core stood mostly idle, and most so when both workers ran
#: such files at once.
WAITING_FOLDER = "tests/browser/"


def lane(unit: str) -> str:
    """``"wait"`` for a unit of :data:`WAITING_FOLDER`, else ``"cpu"``."""
    return "wait" if unit.startswith(WAITING_FOLDER) else "cpu"


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def waiting_node(ids: Sequence[str], usable: int) -> str | None:
    """The worker (xdist gateway id, ``gw0``...) that runs the waiting lane: the last one,
    when there are more workers than ``usable`` cores (:func:`workers` adds it); None with a
    worker per core or fewer (no lanes: every worker takes the next unit)."""
    if len(ids) <= usable:
        return None
    return max(ids, key=lambda name: int(name.removeprefix("gw") or 0))


def next_unit(queue: Sequence[str], wanted: str | None) -> str:
    """The unit a worker of lane ``wanted`` (None: any) takes from ``queue`` (costliest
    first): the first of its lane, or the first of all when none of its lane is left."""
    return next((unit for unit in queue if wanted is None or lane(unit) == wanted), queue[0])


def scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``--dist loadfile`` scheduling with each :data:`TOGETHER` group as one unit, and
    two lanes when there is a worker more than the cores: that worker takes the waiting files
    (:data:`WAITING_FOLDER`), costliest first, and the others the rest, so that the browser
    tests' waits overlap CPU-bound work instead of each other; a worker whose lane is empty
    takes from the other."""
    from xdist.scheduler import LoadFileScheduling

    class TogetherScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            waiting = waiting_node([n.gateway.id for n in self.nodes], cores())
            wanted = None if waiting is None else (
                "wait" if node.gateway.id == waiting else "cpu")
            unit = next_unit(list(self.workqueue), wanted)
            self.workqueue.move_to_end(unit, last=False)  # the unit xdist pops next
            super()._assign_work_unit(node)

    return TogetherScheduling(config, log)


def from_junit(paths: Iterable[Path]) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown of all its tests) in JUnit XML reports."""
    seconds: dict[str, float] = defaultdict(float)
    for path in paths:
        for case in ET.parse(path).iter("testcase"):
            module = case.get("classname", "")
            parts = module.split(".")
            # classname is the module's dotted path, plus the class for tests in a class
            for cut in range(len(parts), 0, -1):
                candidate = "/".join(parts[:cut]) + ".py"
                if (DURATIONS.parent.parent / candidate).is_file():
                    seconds[candidate] += float(case.get("time") or 0.0)
                    break
    return {name: round(value, 1) for name, value in sorted(seconds.items())}


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m tests.schedule RUN.xml [...]  (JUnit XML of a whole run, e.g. "
              "make test PYTEST_ARGS=--junitxml=RUN.xml); writes tests/durations.json",
              file=sys.stderr)
        return 2
    measured = from_junit(Path(a) for a in argv)
    DURATIONS.write_text(json.dumps(measured, indent=1) + "\n")
    print(f"{len(measured)} files, {sum(measured.values()):.0f} s in all -> {DURATIONS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
