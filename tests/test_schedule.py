"""tests/schedule.py: test files are handed to the xdist workers costliest first."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import schedule

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Item:
    """What by_cost reads of a pytest item: its id and its tier markers."""

    nodeid: str
    tiers: list[str] = field(default_factory=list)

    def iter_markers(self):  # type: ignore[no-untyped-def]
        return [getattr(pytest.mark, name).mark for name in self.tiers]


def ids(items) -> list[str]:  # type: ignore[no-untyped-def]
    return [item.nodeid for item in items]


def run_on_two_workers(folder: Path, workers: int = 2) -> None:
    """``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (the Makefile's options) on the
    test files and conftest in ``folder``; they must pass."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers),
         "--dist", "loadfile", "--no-loadscope-reorder", str(folder)],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 0, run.stdout + run.stderr


def test_costliest_files_first_and_each_files_tests_keep_their_order() -> None:
    items = [Item("tests/a.py::t1"), Item("tests/b.py::t1"), Item("tests/a.py::t2"),
             Item("tests/c.py::t1"), Item("tests/b.py::t2")]
    measured = {"tests/a.py": 5.0, "tests/b.py": 50.0, "tests/c.py": 5.0}
    assert ids(schedule.by_cost(items, measured)) == [  # type: ignore[arg-type]
        "tests/b.py::t1", "tests/b.py::t2", "tests/a.py::t1", "tests/a.py::t2", "tests/c.py::t1"]


def test_an_unmeasured_file_is_estimated_from_its_tests_tiers() -> None:
    """Two browser tests outweigh forty plain ones; a measured figure wins over the estimate."""
    plain = [Item(f"tests/plain.py::t{i}") for i in range(40)]
    browser = [Item(f"tests/browser/page.py::t{i}", ["browser", "server"]) for i in range(2)]
    order = ids(schedule.by_cost([*plain, *browser], {}))  # type: ignore[list-item]
    assert order[:2] == ["tests/browser/page.py::t0", "tests/browser/page.py::t1"]
    assert schedule.estimate(browser) == 2 * schedule.ESTIMATE["browser"]  # type: ignore[arg-type]
    order = ids(schedule.by_cost([*plain, *browser], {"tests/browser/page.py": 1.0}))  # type: ignore[list-item]
    assert order[0] == "tests/plain.py::t0"


def test_a_missing_or_broken_durations_file_orders_by_estimates(tmp_path: Path) -> None:
    assert schedule.load(tmp_path / "absent.json") == {}
    (tmp_path / "broken.json").write_text("{not json")
    assert schedule.load(tmp_path / "broken.json") == {}
    (tmp_path / "list.json").write_text("[1, 2]")
    assert schedule.load(tmp_path / "list.json") == {}


def test_the_committed_durations_name_existing_files_and_cover_the_costly_ones() -> None:
    """tests/durations.json lists files that exist (a renamed file would fall back to its
    estimate, silently): refresh it with python -m tests.schedule RUN.xml."""
    measured = schedule.load()
    assert measured, "tests/durations.json is missing"
    missing = [name for name in measured if not (ROOT / name).is_file()]
    assert missing == []


def test_durations_are_read_from_junit_xml(tmp_path: Path) -> None:
    report = tmp_path / "run.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_schedule" name="a" time="1.5"/>'
        '<testcase classname="tests.test_schedule" name="b" time="2.0"/>'
        '<testcase classname="tests.db.test_engine" name="c" time="4.25"/>'
        '<testcase classname="tests.test_tiers.TestSomething" name="d" time="0.5"/>'
        '</testsuite></testsuites>')
    assert schedule.from_junit([report]) == {"tests/db/test_engine.py": 4.2,
                                             "tests/test_schedule.py": 3.5,
                                             "tests/test_tiers.py": 0.5}


def test_xdist_hands_out_files_in_this_order(tmp_path: Path) -> None:
    """A real ``pytest -n 2 --dist loadfile --no-loadscope-reorder`` (the Makefile's options)
    starts the two costliest files first and the cheapest among the last, where xdist's own
    order (most tests first) would start the many-test cheap file first."""
    costs = {"test_cheap_many.py": 1.0, "test_big.py": 90.0, "test_mid.py": 30.0,
             "test_small.py": 5.0, "test_tiny.py": 2.0, "test_bigger.py": 120.0}
    log = tmp_path / "started.log"
    for name in costs:
        count = 12 if name == "test_cheap_many.py" else 1
        body = "".join(
            f"def test_{i}():\n"
            f"    with open({str(log)!r}, 'a') as f:\n"
            f"        f.write({name!r} + '\\n')\n"
            f"    import time; time.sleep(0.2)\n" for i in range(count))
        (tmp_path / name).write_text(body)
    (tmp_path / "conftest.py").write_text(
        "from tests import schedule\n"
        f"COSTS = {costs!r}\n"
        "def pytest_collection_modifyitems(items):\n"
        "    items[:] = schedule.by_cost(items, COSTS)\n")
    makefile = (ROOT / "Makefile").read_text()
    assert "--dist loadfile --no-loadscope-reorder" in makefile
    run_on_two_workers(tmp_path)
    started = list(dict.fromkeys(log.read_text().split()))
    assert set(started[:2]) == {"test_bigger.py", "test_big.py"}
    assert "test_cheap_many.py" not in started[:4]


def test_a_together_group_is_one_unit_in_its_own_order() -> None:
    """The files of a TOGETHER group are adjacent, in the group's order, ranked by their sum."""
    second, first = schedule.TOGETHER[0][1], schedule.TOGETHER[0][0]
    items = [Item(f"{second}::t1"), Item("tests/mid.py::t1"), Item(f"{first}::t1"),
             Item(f"{second}::t2")]
    measured = {second: 30.0, first: 30.0, "tests/mid.py": 50.0}
    assert ids(schedule.by_cost(items, measured)) == [  # type: ignore[arg-type]
        f"{first}::t1", f"{second}::t1", f"{second}::t2", "tests/mid.py::t1"]
    assert schedule.unit_of(f"{second}::t2") == schedule.unit_of(first) == first
    assert schedule.unit_of("tests/mid.py::t1") == "tests/mid.py"


def test_xdist_runs_a_together_group_on_one_worker(tmp_path: Path) -> None:
    """A real ``pytest -n 2`` with the conftest's scheduler: the group's files run on one
    worker, one after the other, although each alone would go to the idle worker."""
    log = tmp_path / "ran.log"
    for name in ("test_a.py", "test_b.py", "test_c.py", "test_d.py"):
        (tmp_path / name).write_text(
            "import os, time\n"
            "def test_it():\n"
            f"    with open({str(log)!r}, 'a') as f:\n"
            f"        f.write(os.environ['PYTEST_XDIST_WORKER'] + ' {name}\\n')\n"
            "    time.sleep(0.5)\n")
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from tests import schedule\n"
        "schedule.TOGETHER = (('test_c.py', 'test_a.py'),)\n"
        "COSTS = {'test_a.py': 5.0, 'test_b.py': 8.0, 'test_c.py': 5.0, 'test_d.py': 1.0}\n"
        "def pytest_collection_modifyitems(items):\n"
        "    items[:] = schedule.by_cost(items, COSTS)\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        "    return schedule.scheduler(config, log)\n")
    run_on_two_workers(tmp_path)
    ran = [line.split() for line in log.read_text().splitlines()]
    workers = {name: worker for worker, name in ran}
    assert workers["test_c.py"] == workers["test_a.py"] != workers["test_b.py"]
    order = [name for _, name in ran]
    assert order.index("test_c.py") < order.index("test_a.py")


@dataclass
class Options:
    """What schedule.workers reads of a pytest config: the ``-m`` expression."""

    markexpr: str

    def getoption(self, name: str, default: object = None) -> object:
        return getattr(self, name, default)


QUICK = (ROOT / "Makefile").read_text().split("QUICK := ", 1)[1].splitlines()[0].strip()


@pytest.mark.parametrize(("chosen", "extra"), [
    ("", 1),  # make test: every tier
    (QUICK, 0),  # make quick
    ("browser", 1), ("server and not browser", 1), ("postgres", 0), ("model", 0),
    ("not browser", 1),  # the server tier is still in
])
def test_auto_adds_a_worker_only_when_browser_or_server_tests_run(
        chosen: str, extra: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert schedule.workers(Options(chosen)) == cores + extra  # type: ignore[arg-type]
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "5")
    assert schedule.workers(Options(chosen)) is None  # type: ignore[arg-type]


def test_make_test_starts_a_worker_more_than_the_cores() -> None:
    """A real ``pytest -n auto`` (the Makefile's options) with the project's conftest and no
    ``-m``: a worker per core and one more (the quick tier's ``-m`` is checked above, read from
    the Makefile)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    assert "-n auto --dist loadfile" in (ROOT / "Makefile").read_text()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "auto", "--dist",
         "loadfile", "tests/test_docs.py::test_every_doc_is_read"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    created = [line for line in run.stdout.splitlines() if line.startswith("created: ")]
    assert created == [f"created: {len(os.sched_getaffinity(0)) + 1}/"
                       f"{len(os.sched_getaffinity(0)) + 1} workers"], run.stdout


def test_lanes_only_with_a_worker_more_than_the_cores() -> None:
    assert schedule.waiting_node(["gw0", "gw1"], 2) is None
    assert schedule.waiting_node(["gw2", "gw0", "gw10", "gw1"], 2) == "gw10"
    queue = ["tests/a.py", "tests/browser/test_x.py", "tests/b.py"]
    assert schedule.next_unit(queue, "wait") == "tests/browser/test_x.py"
    assert schedule.next_unit(queue, "cpu") == "tests/a.py"
    assert schedule.next_unit(queue, None) == "tests/a.py"
    assert schedule.next_unit(["tests/browser/test_x.py"], "cpu") == "tests/browser/test_x.py"
    assert schedule.next_unit(["tests/a.py"], "wait") == "tests/a.py"  # an empty lane borrows


def test_xdist_gives_the_waiting_files_to_the_extra_worker(tmp_path: Path) -> None:
    """A real ``pytest -n cores+1`` with the conftest's scheduler: both waiting files run on the
    last worker although they are the cheapest (plain costliest-first order would hand them to
    whichever worker is free), and every other worker starts on a CPU file."""
    log = tmp_path / "ran.log"
    (tmp_path / "waits").mkdir()
    cpu = [f"test_c{i}.py" for i in range(2 * schedule.cores() + 2)]
    for name in [*cpu, "waits/test_w1.py", "waits/test_w2.py"]:
        (tmp_path / name).write_text(
            "import os, time\n"
            "def test_it():\n"
            f"    with open({str(log)!r}, 'a') as f:\n"
            f"        f.write(os.environ['PYTEST_XDIST_WORKER'] + ' {name}\\n')\n"
            "    time.sleep(0.3)\n")
    costs = {**{name: 10.0 for name in cpu}, "waits/test_w1.py": 1.0, "waits/test_w2.py": 1.0}
    (tmp_path / "conftest.py").write_text(
        "import pytest\n"
        "from tests import schedule\n"
        "schedule.WAITING_FOLDER = 'waits/'\n"
        f"COSTS = {costs!r}\n"
        "def pytest_collection_modifyitems(items):\n"
        "    items[:] = schedule.by_cost(items, COSTS)\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_xdist_make_scheduler(config, log):\n"
        "    return schedule.scheduler(config, log)\n")
    run_on_two_workers(tmp_path, workers=schedule.cores() + 1)
    ran = [line.split() for line in log.read_text().splitlines()]
    last = f"gw{schedule.cores()}"
    assert {worker for worker, name in ran if name.startswith("waits/")} == {last}, ran
    first = {}
    for worker, name in ran:
        first.setdefault(worker, name)
    assert all(name in cpu for worker, name in first.items() if worker != last), ran
