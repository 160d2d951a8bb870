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


def scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's ``--dist loadfile`` scheduling with each :data:`TOGETHER` group as one unit."""
    from xdist.scheduler import LoadFileScheduling

    class TogetherScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

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
