"""The one lifecycle of a resumable pass, shared by generation runs and judge passes.

A pass asks a backend for many completions and stores each as it arrives, so a killed pass
loses nothing stored and the same command resumes it. Both kinds of pass go through the same
steps: count what is left, start the progress bar, store results as they come, and at the end
(or on any exception, Ctrl-C included) record how the pass finished. That last step must never
hide the error that stopped the pass, which is why it lives here once. The pass also owns how
it talks to the backend (:meth:`ResumablePass.ask`): one ``Backend.generate`` call per decoding
config, in a fixed order, every answer's tokens counted as it arrives), and how it stores
what comes back (:attr:`ResumablePass.store`, the one store step of ``passes/store.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.faults import brief, fault_kind
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion, Conversation, DecodingConfig
from elitr_core.data.model_text import IN_WORDS
from elitr_core.errors import UserError
from elitr_core.passes.records import Progress
from elitr_core.passes.store import Store, Storing

logger = logging.getLogger(__name__)

USAGE_KEYS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "cached_tokens")

#: ``record(session, status, error) -> status``: store how the pass stands (``status`` None
#: while running, or when the pass itself decides, e.g. ``done`` vs ``pending``).
Recorder = Callable[[Session, "str | None", "BaseException | None"], "str | None"]
Item = TypeVar("Item")


@dataclass
class PassReport:
    """What a pass did: items in all, already stored, asked now, time, tokens, final status,
    ``altered``: outputs stored altered by the storage policy (``data/model_text.py``), and
    ``stored``: the outputs asked now that are written (``passes/store.py``)."""

    total: int = 0
    skipped: int = 0
    asked: int = 0
    seconds: float = 0.0
    usage: dict[str, int] = field(default_factory=lambda: dict.fromkeys(USAGE_KEYS, 0))
    status: str = "running"
    altered: int = 0
    stored: int = 0
    #: What the pass's outputs are called in its lines ("answer(s)", "judge output(s)").
    outputs: ClassVar[str] = "output(s)"

    def add_usage(self, completion: Any) -> None:
        """Add one completion's reported token counts (a backend may report none)."""
        for key in USAGE_KEYS:
            value = getattr(completion, key, None)
            self.usage[key] = self.usage.get(key, 0) + (value if isinstance(value, int) else 0)

    def tokens(self) -> str:
        """``"1,234 prompt, 56 completion, 0 cached"`` for the summary lines."""
        return ", ".join(f"{v:,} {k.removesuffix('_tokens')}" for k, v in self.usage.items())

    def notes(self) -> list[str]:
        """Further lines the CLI prints after the summary (none by default)."""
        return []

    def altered_line(self) -> str:
        """The CLI's one line about outputs stored altered ("" when none was)."""
        if not self.altered:
            return ""
        return (f"{self.altered:,} {self.outputs} stored altered by the storage policy for "
                f"model text ({IN_WORDS})")


class ResumablePass:
    """Runs the body of a pass between ``start`` and ``finish``; see :meth:`running`.

    ``storing``: what the pass stores and how; its :attr:`store` step (``passes/store.py``)
    is flushed before the end is recorded.
    """

    def __init__(self, engine: Engine, report: PassReport, progress: Progress,
                 record: Recorder, storing: Storing) -> None:
        self.engine, self.report, self.progress, self.record = engine, report, progress, record
        self.store = Store(engine, storing, report, progress)

    @contextmanager
    def running(self, label: str) -> Iterator[ResumablePass]:
        """``with p.running(label): ...``: progress over ``total - skipped`` items, the time
        taken, and the end recorded: ``failed`` (with the error) when the body raises."""
        report = self.report
        started = time.monotonic()
        self.progress.start(report.total - report.skipped, label)
        try:
            yield self
        except BaseException as error:
            report.status = "failed"
            self.finish("failed", error)
            if fault_kind(error) in ("gone", "full"):
                raise UserError(self._stopped(error)) from None
            raise
        finally:
            self.progress.close()
            report.seconds = time.monotonic() - started
        report.status = self.finish(None, None)

    def _stopped(self, error: BaseException) -> str:
        """One true line for a pass the database stopped: how many of the run's outputs are
        stored (those of earlier passes and this one's committed batches) and what to do."""
        report, written = self.report, self.store.written
        stored = report.skipped + written
        what = ("the connection to the database was lost" if fault_kind(error) == "gone"
                else "the disk of the database is full")
        return (f"{what} ({brief(error)}): {stored} of the run's {report.total} "
                f"{report.outputs} are stored ({written} by this command); run the same "
                f"command again to ask the other {report.total - stored}")

    def ask(self, backend: Backend, items: Sequence[Item],
            conversation: Callable[[Item], Conversation],
            decoding: Callable[[Item], DecodingConfig],
            store: Callable[[Item, int, Completion], None]) -> None:
        """Ask ``backend`` every item's conversation; ``store(item, turn, completion)`` each
        answer as it arrives (after its tokens are counted in the report), which hands what
        it keeps to :attr:`store`.

        Items with the same decoding config (judging: the same sample seed) go in one
        ``generate`` call, so the backend can schedule them together; the calls follow the
        seeds' order, the items their given order.
        """
        calls: dict[DecodingConfig, list[Item]] = {}
        for item in items:
            calls.setdefault(decoding(item), []).append(item)
        for config in sorted(calls, key=lambda c: -1 if c.seed is None else c.seed):
            batch = calls[config]

            def on_result(index: int, turn: int, completion: Completion,
                          batch: list[Item] = batch) -> None:
                self.report.add_usage(completion)
                store(batch[index], turn, completion)

            backend.generate([conversation(item) for item in batch], config, on_result)

    def finish(self, status: str | None, error: BaseException | None) -> str:
        """Flush the store and record the end; a failure here never replaces ``error``.

        A store that fails on a pass that went well fails the pass: recorded ``failed`` with
        the writer's error, which is then raised.
        """
        flush_error: Exception | None = None
        try:
            self.store.close()  # every result received is stored before the pass ends
        except Exception as exc:
            if error is None:
                status, error, flush_error = "failed", exc, exc
            else:  # the first error is the one reported; this one only with --debug
                logger.debug("could not store the last results: %s", brief(exc),
                             exc_info=True)
        try:
            with writing(self.engine) as session:
                status = self.record(session, status, error)
        except Exception as exc:  # the database may be why the pass failed: keep the first
            # error; never the statement and its parameters (an answer's text) on the terminal
            log = logger.debug if error is not None else logger.error
            log("could not record the end of the pass: %s", brief(exc),
                exc_info=logger.isEnabledFor(logging.DEBUG))
        if flush_error is not None:
            self.report.status = "failed"
            raise flush_error
        return status or "failed"
