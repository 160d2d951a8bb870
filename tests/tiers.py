"""Test tiers by cost, set from what a test uses (issue 38): ``browser``, ``server``, ``model``,
``postgres``. ``make quick`` runs the tests in none of them; ``make test`` runs all.

A test's tiers come from

- the fixtures in its closure (:data:`FIXTURES`; a fixture that uses one counts too, since
  pytest resolves the closure), and for the fixtures parametrized over both databases only the
  PostgreSQL leg (:data:`LEGS`);
- the helpers it calls, directly or through any function, class or fixture of the test code
  (:data:`HELPERS`, found by reading the code: :class:`Scan`);
- a mark written on the test by hand.

What cannot slip through: a test whose code (or the code of a helper it calls) starts a process
named in :data:`PROGRAMS` (``streamlit run``, ``server.py``, chromium, nginx, ``initdb``,
``lm_eval``, ``transformers serve``...) and is not in that program's tier fails the collection
with one sentence naming the test, the program and the line (:func:`unmarked`); a command built
at run time that the reading cannot see is caught when it starts (tests/spawn_guard.py, an audit
hook on ``subprocess.Popen``), and ``pg_database`` checks its caller's tier itself.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import sysconfig
import textwrap
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

#: the tiers, with what puts a test in one (pytest's marker descriptions)
MARKERS = {
    "browser": "drives a real Chromium (Selenium, or kaleido's figure export)",
    "server": "starts server.py (streamlit run), the replicas, nginx or a Label Studio server",
    "model": "runs a model on torch (SmolLM2, a tiny Llama), transformers serve, or the "
             "inspect / lm_eval CLIs",
    "postgres": "needs PostgreSQL (DATABASE_URL_TEST), or starts a PostgreSQL server",
}
TIERS = tuple(MARKERS)
TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
#: the project's own code: not test code (reading it is the tiers' business only through
#: HELPERS)
PROJECT = tuple(ROOT / name for name in ("elitr_core", "db", "ui", "pages", "app.py",
                                         "server.py", "bench"))

#: fixtures that put a test in a tier (``db_url``'s and ``bundled_db``'s PostgreSQL legs reach
#: ``pg_url`` / ``bundled_pg_template`` through ``getfixturevalue``: see :data:`LEGS`)
FIXTURES = {
    "browser": "browser",
    "streamlit_server": "server",
    "shared_server": "server",
    "pg_url": "postgres",
    "schema_pg_template": "postgres",
    "bundled_pg_template": "postgres",
}

#: parametrized fixtures whose leg with this value needs PostgreSQL
LEGS = {"db_url": "postgresql", "empty_db_url": "postgresql", "bundled_db": "postgresql"}

#: helpers that start one of the costly things, by module and name: a test that calls one
#: (directly, or through any function, class or fixture of the test code) is in its tier
HELPERS = {
    ("tests.browser.conftest", "running_server"): "server",
    ("tests.test_deploy", "_replicas"): "server",
    ("tests.test_deploy", "_nginx"): "server",
    ("tests.elitr_core.annotation.test_proxies_nginx", "_nginx"): "server",
    # a real Label Studio server (its own virtualenv), for the round trip of its tasks
    ("tests.label_studio", "label_studio_server"): "server",
    ("tests.conftest", "pg_database"): "postgres",
    ("tests.conftest", "_pg_admin_url"): "postgres",
    ("tests.pg_instance", "pg_instance"): "postgres",
    ("tests.pg_instance", "PgInstance"): "postgres",
    ("tests.elitr_core.backends.smollm2", "smollm2_dir"): "model",
    ("tests.elitr_core.backends.smollm2", "load"): "model",
    ("tests.elitr_core.backends.smollm2", "greedy"): "model",
    # the torch engine (hf backend) on a tiny random Llama written for the test
    ("tests.elitr_core.backends.tiny_model", "build_tiny_llama"): "model",
    ("tests.elitr_core.backends.test_serve_transformers", "serving"): "model",
    ("selenium.webdriver", "Chrome"): "browser",
    # figure export renders in the system Chromium (kaleido)
    ("elitr_core.export.figures", "figure_bytes"): "browser",
    ("elitr_core.export.figures", "_warm_renderer"): "browser",
}

#: programs that only a test of the tier may start: an argv word equal to a key (or a path
#: ending in it) puts a process in that tier
PROGRAMS = {
    "chromium": "browser", "chromedriver": "browser", "google-chrome": "browser",
    "streamlit": "server", "server.py": "server", "replicas.sh": "server", "nginx": "server",
    "uvicorn": "server", "label-studio": "server",
    "lm_eval": "model", "inspect": "model", "inspect_ai": "model", "transformers": "model",
    "initdb": "postgres", "pg_ctl": "postgres", "postgres": "postgres", "psql": "postgres",
    "pg_dump": "postgres", "pg_restore": "postgres",
}

#: the calls that start a process
SPAWNERS = frozenset({
    ("subprocess", "Popen"), ("subprocess", "run"), ("subprocess", "call"),
    ("subprocess", "check_call"), ("subprocess", "check_output"), ("os", "system"),
    ("os", "popen"), ("os", "posix_spawn"), ("os", "posix_spawnp"), ("os", "execv"),
    ("os", "execvp"), ("os", "execve"), ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
})


def program_tier(word: str) -> str | None:
    """The tier of a process whose argv holds ``word`` (``/usr/sbin/nginx`` -> server)."""
    return PROGRAMS.get(word.rsplit("/", 1)[-1]) if word else None


@dataclass
class Found:
    """What the code a test runs uses: tiers from helpers and fixtures, and the programs it
    starts (tier -> where)."""

    tiers: set[str] = field(default_factory=set)
    postgres_fixtures: set[str] = field(default_factory=set)  # asked for by getfixturevalue
    starts: dict[str, str] = field(default_factory=dict)

    def add(self, other: Found) -> None:
        self.tiers |= other.tiers
        self.postgres_fixtures |= other.postgres_fixtures
        for tier, where in other.starts.items():
            self.starts.setdefault(tier, where)


@functools.cache
@functools.cache
def _libraries() -> tuple[Path, ...]:
    return tuple({Path(p).resolve() for p in (sys.prefix, sys.base_prefix,
                                              sysconfig.get_paths()["purelib"])})


@functools.cache  # asked for every name a test's code resolves: tens of thousands of times
def _test_code(source: str) -> bool:
    path = Path(source).resolve()
    return not any(path == p or p in path.parents for p in (*PROJECT, *_libraries()))


def _in_tests(obj: Any) -> bool:
    """Test code (tests/, or a test file made elsewhere), not the project's or a library's."""
    try:
        source = inspect.getsourcefile(obj)
    except TypeError:
        return False
    return bool(source) and _test_code(source)  # type: ignore[arg-type]


def _helper(obj: Any) -> str | None:
    module = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", None))
    return HELPERS.get((module, name)) if module and name else None  # type: ignore[arg-type]


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _resolve(parts: list[str], scope: dict[str, Any]) -> Iterator[Any]:
    """The objects the prefixes of a dotted name stand for in a module's globals."""
    if parts[0] not in scope:
        return
    obj = scope[parts[0]]
    yield obj
    for part in parts[1:]:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return
        if isinstance(obj, staticmethod | classmethod):
            obj = obj.__func__
        yield obj


class Scan:
    """Reads the test code a test runs, following every function, class and fixture of
    ``tests/`` it names, once per code object."""

    def __init__(self) -> None:
        self._done: dict[Any, Found] = {}

    def of(self, obj: Any) -> Found:
        obj = inspect.unwrap(obj) if callable(obj) else obj
        key = getattr(obj, "__code__", obj)
        try:
            if key in self._done:
                return self._done[key]
        except TypeError:
            return Found()
        found = self._done[key] = Found()  # a cycle stops here
        if isinstance(obj, type):
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if isinstance(member, types.FunctionType) and _in_tests(member):
                    found.add(self.of(member))
            return found
        if isinstance(obj, types.FunctionType):
            found.add(self._function(obj))
        return found

    def _function(self, func: types.FunctionType) -> Found:
        found = Found()
        try:
            lines, first = inspect.getsourcelines(func)
        except (OSError, TypeError):
            return found
        tree = ast.parse(textwrap.dedent("".join(lines)))
        scope = {**func.__globals__, **_local_imports(tree)}
        path = Path(func.__code__.co_filename)
        where = str(path.relative_to(ROOT) if ROOT in path.parents else path)
        words: list[tuple[str, int]] = []
        spawns = False
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                words.append((node.value, first + node.lineno - 1))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "getfixturevalue" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                name = node.args[0].value
                if FIXTURES.get(name) == "postgres":
                    found.postgres_fixtures.add(name)
                elif name in FIXTURES:
                    found.tiers.add(FIXTURES[name])
            if not isinstance(node, ast.Name | ast.Attribute) or \
                    isinstance(getattr(node, "ctx", None), ast.Store):
                continue
            parts = _dotted(node)
            if parts is None:
                continue
            if tuple(parts[-2:]) in SPAWNERS or (len(parts) == 1 and any(
                    parts[0] == name and getattr(scope.get(name), "__module__", "") in
                    ("subprocess", "os", "asyncio.subprocess") for _, name in SPAWNERS)):
                spawns = True
            for obj in _resolve(parts, scope):
                tier = _helper(obj)
                if tier:
                    found.tiers.add(tier)
                    break
                if isinstance(obj, str):
                    words.append((obj, first + node.lineno - 1))
                elif isinstance(obj, list | tuple):
                    words.extend((w, first + node.lineno - 1) for w in obj if isinstance(w, str))
                elif (isinstance(obj, types.FunctionType) or isinstance(obj, type)) \
                        and _in_tests(obj):
                    found.add(self.of(obj))
        if spawns:
            for word, line in words:
                tier = program_tier(word)
                if tier:
                    found.starts.setdefault(tier, f"{where}:{line} starts {word!r}")
        return found


def _local_imports(tree: ast.AST) -> dict[str, Any]:
    """What the imports inside a function bind (the test code imports helpers there too): the
    test code's own modules, and others only when already imported (reading the code must not
    import torch or a harness)."""
    bound: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] == "tests":
                module = importlib.import_module(node.module)
            elif node.module in sys.modules:
                module = sys.modules[node.module]
            else:
                continue
            for alias in node.names:
                if hasattr(module, alias.name):
                    bound[alias.asname or alias.name] = getattr(module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in sys.modules:
                    bound[alias.asname or alias.name.split(".")[0]] = \
                        sys.modules[alias.name.split(".")[0]]
    return bound


def _leg_is_sqlite(item: pytest.Item) -> bool:
    """A leg of a test parametrized over the two databases that runs on SQLite."""
    spec = getattr(item, "callspec", None)
    if spec is None:
        return False
    values = {str(v) for v in spec.params.values()} | set(spec.id.split("-"))
    return "sqlite" in values and not any("postgres" in v for v in values)


def _fixture_funcs(item: pytest.Item) -> Iterator[Any]:
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        for fixturedef in defs:
            if _in_tests(fixturedef.func):
                yield fixturedef.func


def tiers_of(item: pytest.Item, scan: Scan) -> tuple[set[str], Found]:
    """The tiers a test belongs to, and what its code was found to use."""
    names = set(getattr(item, "fixturenames", ()))
    tiers = {FIXTURES[n] for n in names if n in FIXTURES}
    spec = getattr(item, "callspec", None)
    for name, value in LEGS.items():
        if spec is not None and spec.params.get(name) == value:
            tiers.add("postgres")
    found = Found()
    function = getattr(item, "function", None)
    for obj in [function, *_fixture_funcs(item)]:
        if obj is not None:
            found.add(scan.of(obj))
    code_tiers = set(found.tiers)
    if found.postgres_fixtures:
        code_tiers.add("postgres")
    if "postgres" in code_tiers and _leg_is_sqlite(item):
        code_tiers.discard("postgres")
    return tiers | code_tiers, found


def unmarked(item: pytest.Item, found: Found) -> list[str]:
    """One sentence per program the test starts outside its tier."""
    marks = {m.name for m in item.iter_markers()}
    return [f"{item.nodeid}: {where}, which belongs to the '{tier}' tier, but the test is not "
            f"marked {tier}: start it through a helper or fixture of tests/tiers.py (HELPERS, "
            f"FIXTURES) or mark the test @pytest.mark.{tier}"
            for tier, where in sorted(found.starts.items())
            if tier not in marks and not (tier == "postgres" and _leg_is_sqlite(item))]


def classify(items: Iterable[pytest.Item]) -> list[str]:
    """Mark each test with its tiers; return the sentences of the tests that start something
    outside their tiers (the collection fails on them)."""
    scan = Scan()
    problems: list[str] = []
    for item in items:
        tiers, found = tiers_of(item, scan)
        have = {m.name for m in item.iter_markers()}
        for tier in sorted(tiers - have):
            item.add_marker(getattr(pytest.mark, tier))
        problems += unmarked(item, found)
    return problems
