"""The annotator's page when the database fails under it: one sentence, nothing lost.

A submit is one transaction: when it fails, its answer is not stored and every earlier answer
is. A dropped connection (the database restarted) is tried once more on a fresh connection
(the pool checks connections before use), which is what the annotator would do; a full disk
or a database still away is said in words the annotator can act on, never as a crash page.
Every other database call of the page goes through the same handling with its own words
(:func:`said`): entering a link (which claims a task: a write), and the reads of the queue,
the item, the tour and the worked examples.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sqlalchemy.exc import DBAPIError

from db.faults import fault_kind
from elitr_core.errors import UserError

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

FULL = ("Your answer was not saved: the server's disk is full. Your earlier answers are "
        "kept; tell the researcher, then press Submit again.")
GONE = ("Your answer was not saved: the database cannot be reached right now. Your earlier "
        "answers are kept; press Submit again in a minute.")
ENTER_FULL = ("Your task cannot be opened right now: the server's disk is full. Your earlier "
              "answers are kept; tell the researcher, then open your link again.")
ENTER_GONE = ("Your task cannot be opened right now: the database cannot be reached. Your "
              "earlier answers are kept; open your link again in a minute.")
READ_FULL = ("The server's disk is full, so this page cannot be brought up to date. Your "
             "earlier answers are kept; tell the researcher.")
READ_GONE = ("The database cannot be reached right now, so this page may not be up to date. "
             "Your earlier answers are kept; press Submit again in a minute.")


def with_database_faults(write: Callable[[], T], full: str = FULL, gone: str = GONE) -> T:
    """``write()``, tried once more after a dropped connection; a full disk or a database
    that stays away raises :class:`UserError` with ``full`` or ``gone``."""
    for attempt in range(2):
        try:
            return write()
        except DBAPIError as exc:
            kind = fault_kind(exc)
            if kind == "full":
                raise UserError(full) from None
            if kind != "gone":
                raise
            if attempt:
                raise UserError(gone) from None
    raise AssertionError("unreachable")  # the loop returns or raises


def said(full: str, gone: str) -> Callable[[F], F]:
    """Decorate a function of the annotator's page that opens its own transactions: it runs
    through :func:`with_database_faults` with these words (each try is a whole new
    transaction, so a retry repeats nothing half-done)."""
    def decorate(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return with_database_faults(lambda: func(*args, **kwargs), full, gone)
        return cast(F, wrapper)
    return decorate
