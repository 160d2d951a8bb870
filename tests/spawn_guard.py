"""The run-time half of the test tiers (tests/tiers.py): a test that starts a program of a tier
it is not marked with fails, with one sentence saying so. It catches what reading the code at
collection cannot see (a command built at run time, a program a library starts): an audit hook
on ``subprocess.Popen`` compares the program with the running test's tiers; ``pg_database``
calls :func:`require` itself."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tiers import program_tier

_current: list[pytest.Item] = []
_violations: list[str] = []


@functools.cache
def _hook_installed() -> bool:
    sys.addaudithook(_audit)
    return True


def running(item: pytest.Item | None) -> None:
    """The test now running (None between tests): :func:`guard_spawn` checks against it."""
    _hook_installed()
    _current[:] = [item] if item is not None else []


def _argv_tier(argv: Any) -> tuple[str, str] | None:
    """The tier of a process by its program (``argv[0]``, or the module of ``python -m``) or a
    script path it is given (``server.py``, ``/usr/lib/postgresql/15/bin/initdb``)."""
    words = [os.fsdecode(a) for a in argv] if isinstance(argv, list | tuple) else \
        os.fsdecode(argv).split()
    if not words:
        return None
    named = [words[0]]
    if Path(words[0]).name.startswith("python") and words[1:2] == ["-m"]:
        named += words[2:3]
    named += [w for w in words[1:] if "/" in w or w.endswith((".py", ".sh"))]
    for word in named:
        tier = program_tier(word)
        if tier:
            return tier, word
    return None


def guard_spawn(argv: Any) -> None:
    """Note a program of a tier the running test is not marked with (the test then fails,
    :func:`violations`); the program still starts, so that whatever waits on it (a thread of
    kaleido's, a server's health check) does not hang until the timeout."""
    if not _current:
        return
    hit = _argv_tier(argv)
    if hit and not _current[0].get_closest_marker(hit[0]):
        _violations.append(
            f"{_current[0].nodeid} starts {hit[1]!r}, which belongs to the '{hit[0]}' tier, "
            f"but the test is not marked {hit[0]}: start it through a helper or fixture of "
            f"tests/tiers.py or mark the test @pytest.mark.{hit[0]}")


def violations() -> list[str]:
    """What the running test started outside its tiers since the last call."""
    found = list(dict.fromkeys(_violations))
    _violations.clear()
    return found


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen" and _current:
        guard_spawn(args[1])


def require(tier: str, what: str) -> None:
    """Called by a helper of the tier: fail the running test if it is not marked so."""
    if _current and not _current[0].get_closest_marker(tier):
        pytest.fail(f"{_current[0].nodeid} uses {what}, which belongs to the '{tier}' tier, "
                    f"but the test is not marked {tier}: use a fixture of tests/tiers.py "
                    f"(FIXTURES) or mark the test @pytest.mark.{tier}", pytrace=False)
