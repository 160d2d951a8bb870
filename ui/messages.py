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

from elitr_core.annotation.auth import StudyEnded
from elitr_core.errors import DegenerateDataError, UserError
from ui.state import ENTRY_KEY
from ui.text import code_span, message

PROLIFIC_COMPLETE = "https://app.prolific.com/submissions/complete?cc={}"
PROLIFIC_HOME = "https://app.prolific.com/"  # where a participant returns a study


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
        if isinstance(exc, StudyEnded):
            ended(exc)
        elif degenerate_warns and isinstance(exc, DegenerateDataError):
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


def from_prolific() -> bool:
    """Whether this session's participant came from Prolific (their link's ``PROLIFIC_PID``,
    or the entry made from it once Streamlit has dropped the query parameters)."""
    entry = st.session_state.get(ENTRY_KEY)
    return bool(st.query_params.get("PROLIFIC_PID")) or bool(getattr(entry, "prolific", False))


def ended(exc: StudyEnded) -> None:
    """A participant's end state (study closed or full, task excluded or lapsed) as a neutral
    message, with the way back to Prolific for a participant who came from there: the
    completion link when they finished their task, else Prolific, to return the study."""
    st.info(message(exc), icon=":material/info:")
    if not from_prolific():
        return
    if exc.completion_code:
        st.markdown("Your completion code: **" + code_span(exc.completion_code) + "**")
        st.link_button("Back to Prolific to complete", type="primary",
                       url=PROLIFIC_COMPLETE.format(exc.completion_code))
    else:
        st.link_button("Back to Prolific", type="primary", url=PROLIFIC_HOME)
        st.caption("There, return this study (Return in your submissions list), so that it "
                   "does not count against you.")
