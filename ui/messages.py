"""A core error as a message on the page instead of a traceback.

A page calls into the core inside a guarded block, so the calls keep their own types::

    with guarded():
        job = start_job(argv)
        st.success(...)

A :class:`~elitr_core.errors.UserError` raised in the block is shown as a message and skips
the rest of the block; ``stop=True`` stops the page run there (``st.stop``), and the block's
:class:`Outcome` says whether it failed, for a page that goes on either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

import streamlit as st

from elitr_core.errors import DegenerateDataError, UserError
from ui.text import message


@dataclass
class Outcome:
    """How a guarded block ended: ``failed`` when a user error cut it short (and was shown)."""

    failed: bool = False


@contextmanager
def _showing(*, degenerate_warns: bool, stop: bool) -> Iterator[Outcome]:
    outcome = Outcome()
    try:
        yield outcome
    except UserError as exc:
        outcome.failed = True
        if degenerate_warns and isinstance(exc, DegenerateDataError):
            st.warning(message(exc))
        else:
            st.error(message(exc))
        if stop:
            st.stop()


def guarded(*, stop: bool = False) -> AbstractContextManager[Outcome]:
    """Show a user error raised in the block as an error message instead of a traceback; the
    rest of the block is skipped, and with ``stop`` the rest of the page run too."""
    return _showing(degenerate_warns=False, stop=stop)


def shown(*, stop: bool = False) -> AbstractContextManager[Outcome]:
    """Like :func:`guarded`, but data a statistic cannot use (an empty filter result, one
    model, a constant evaluator) is a warning, not an error."""
    return _showing(degenerate_warns=True, stop=stop)
