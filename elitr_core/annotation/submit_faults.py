"""An annotator's submit when the database fails under it: one sentence, nothing lost.

A submit is one transaction: when it fails, its answer is not stored and every earlier answer
is. A dropped connection (the database restarted) is tried once more on a fresh connection
(the pool checks connections before use), which is what the annotator would do; a full disk
or a database still away is said in words the annotator can act on, never as a crash page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

from db.faults import fault_kind
from elitr_core.errors import UserError

T = TypeVar("T")

FULL = ("Your answer was not saved: the server's disk is full. Your earlier answers are "
        "kept; tell the researcher, then press Submit again.")
GONE = ("Your answer was not saved: the database cannot be reached right now. Your earlier "
        "answers are kept; press Submit again in a minute.")


def with_database_faults(write: Callable[[], T]) -> T:
    """``write()``, tried once more after a dropped connection; a full disk or a database
    that stays away raises :class:`UserError` with :data:`FULL` or :data:`GONE`."""
    for attempt in range(2):
        try:
            return write()
        except DBAPIError as exc:
            kind = fault_kind(exc)
            if kind == "full":
                raise UserError(FULL) from None
            if kind != "gone":
                raise
            if attempt:
                raise UserError(GONE) from None
    raise AssertionError("unreachable")  # the loop returns or raises
