"""A core error as a message on the page instead of a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from elitr_core.errors import UserError
from ui.text import message

T = TypeVar("T")


def guarded(func: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Call into the core; show a user error as a message instead of a traceback."""
    try:
        return func(*args, **kwargs)
    except UserError as exc:
        st.error(message(exc))
        return None


def shown(func: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Like :func:`guarded`, but data a statistic cannot use (an empty filter result, one
    model, a constant evaluator) is a warning, not an error."""
    from elitr_core.errors import DegenerateDataError

    try:
        return func(*args, **kwargs)
    except DegenerateDataError as exc:
        st.warning(message(exc))
        return None
    except UserError as exc:
        st.error(message(exc))
        return None
