"""The store step of a pass: the one way an output of a generation run, a judge pass or a
pairwise pass reaches the database.

Each row a pass keeps goes through :meth:`Store.put`, which, in this order:

1. applies the storage policy of model text (``data/model_text.storable_row``) to every text
   of the row; an altered row given its ``original`` output notes in its ``note`` JSON
   column what changed and the original (a response's ``meta["altered"]``, from which a
   resumed conversation goes on), a judge's output keeps only the policy's form;
2. counts the output in ``report.altered`` once, by its key, however often it is stored
   (CREAM stores a judgment after each of its two steps);
3. queues the row for the :class:`~elitr_core.passes.writer.BatchWriter`, which writes
   whatever is waiting in one transaction; ``after_batch(session)`` runs in that same
   transaction (a judge's counters, so a reader never finds them apart from the rows), and
   ``report.stored`` counts the finished outputs written;
4. a finished output (``finished=True``; a step the pass revisits is not) is counted in
   ``report.asked`` and advances the progress.

The pass (:class:`~elitr_core.passes.lifecycle.ResumablePass`) builds its store from a
:class:`Storing` and flushes it before it records how it ended.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.engine import Engine
from sqlmodel import Session

from elitr_core.data.model_text import storable_row
from elitr_core.passes.records import Progress
from elitr_core.passes.writer import BatchWriter


class WriteRows(Protocol):
    """A named write of ``db/`` that stores a batch of rows (``db.responses.upsert_responses``)."""

    def __call__(self, *, session: Session, rows: Sequence[dict[str, Any]]) -> None: ...


class Counts(Protocol):
    """The counters of a pass's report the store step keeps (``lifecycle.PassReport``)."""

    asked: int
    altered: int
    stored: int


@dataclass(frozen=True)
class Storing:
    """What a pass stores and how: rows of ``table`` written by ``write(session=, rows=)``, an
    output named by the ``key`` fields of its row; ``note``: the JSON column where an altered
    row notes its original (None: not noted); ``after_batch(session)``: run in each batch's
    transaction after its rows; ``name``: the writer thread's."""

    table: type[Any]
    write: WriteRows
    key: tuple[str, ...]
    name: str = "writer"
    note: str | None = None
    after_batch: Callable[[Session], None] | None = None


class Store:
    """The store step of one pass (see the module's text)."""

    def __init__(self, engine: Engine, storing: Storing, report: Counts,
                 progress: Progress) -> None:
        self.storing, self.report, self.progress = storing, report, progress
        self._altered: set[tuple[Hashable, ...]] = set()
        self.writer = BatchWriter(engine, self._write, name=storing.name)

    def put(self, values: dict[str, Any], *, original: str | None = None,
            finished: bool = True) -> None:
        """Store one row of an output (see the module's text for the steps)."""
        storing = self.storing
        stored = storable_row(storing.table, values)
        if stored.altered:
            if original is not None and storing.note is not None:
                noted = stored.values[storing.note]
                stored.values[storing.note] = {**noted, "altered": stored.note(original)}
            self._altered.add(tuple(values[name] for name in storing.key))
            self.report.altered = len(self._altered)
        self.writer.put((stored.values, finished))
        if finished:
            self.report.asked += 1
            self.progress.advance(1)

    def close(self) -> None:
        """Write everything queued; raise the writer's error if a batch failed."""
        self.writer.close()

    @property
    def written(self) -> int:
        """Rows committed so far."""
        return self.writer.written

    def _write(self, session: Session, items: list[tuple[dict[str, Any], bool]]) -> None:
        self.storing.write(session=session, rows=[values for values, _ in items])
        # counted in the batch's transaction: rolled back with it in the database
        self.report.stored += sum(finished for _, finished in items)
        if self.storing.after_batch is not None:
            self.storing.after_batch(session)
