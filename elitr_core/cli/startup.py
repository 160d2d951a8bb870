"""A command's start-up: the cyclic garbage collector holds back while the heavy imports run.

Start-up makes objects that live as long as the process (openai's ~700 pydantic models,
SQLAlchemy's mappers, torch), and Python's collector, which runs every 700 new objects by
default, scanned them again and again as they were made: about a tenth of the CPU the
imports of a ``judge`` command take (``bench/results/startup-2026-11-23.md``). While a command
starts, the collector's first generation waits for :data:`STARTUP_GC_THRESHOLD` new objects
instead; the command calls :func:`started` once its imports are done (every command does on return).
"""

from __future__ import annotations

import gc

#: First-generation threshold of the collector while a command starts.
STARTUP_GC_THRESHOLD = 100_000

_usual_threshold = gc.get_threshold()


def starting() -> None:
    """A command starts: collect cycles rarely until :func:`started`."""
    gc.set_threshold(STARTUP_GC_THRESHOLD, *_usual_threshold[1:])


def started() -> None:
    """The command's heavy imports are done: the collector runs as usual again."""
    gc.set_threshold(*_usual_threshold)
