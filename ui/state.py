"""Session state: its shared keys, tabs that draw only the open one, widget values that
survive the runs in which their widget is not drawn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import streamlit as st

if TYPE_CHECKING:
    from streamlit.elements.lib.mutable_tab_container import TabContainer

# Session-state keys (named constants, initialised once).
FILTERS_KEY = "filters"
ROLE_KEY = "auth.role"
ENTRY_KEY = "auth.entry"  # elitr_core.annotation.studies.Entry of the annotator of this session
KEPT_SUFFIX = ".kept"


def _keep(key: str) -> None:  # a widget callback: Streamlit reruns the page after it
    st.session_state[key + KEPT_SUFFIX] = st.session_state[key]


def kept(key: str, default: Any, options: Sequence[Any] | None = None) -> dict[str, Any]:
    """Keyword arguments for a widget inside a tab (``key=...``, ``on_change=...``) whose value
    survives the runs in which its tab is closed: Streamlit forgets the state of a widget that a
    run does not draw, so the value is also kept under ``key + ".kept"`` and seeds the widget
    when it is drawn again (``default`` the first time, or when the value is no longer among
    ``options``; a multiselect keeps the values still offered). Pass no ``value``/``index``
    or ``default`` to the widget itself."""
    value = st.session_state.get(key, st.session_state.get(key + KEPT_SUFFIX, default))
    if options is not None and isinstance(value, list):  # a multiselect: drop what is gone
        value = [v for v in value if v in options]
    elif options is not None and value not in options:
        value = default
    # the widget's state at the start of a run already holds the user's latest change
    st.session_state[key] = st.session_state[key + KEPT_SUFFIX] = value
    return {"key": key, "on_change": _keep, "args": (key,)}


def open_tab(labels: Sequence[str], *, key: str) -> tuple[str, TabContainer]:
    """Tabs of which only the open one is drawn: returns its label and container.

    Clicking another tab reruns the page (``on_change="rerun"``), which then draws that tab's
    content instead: a page with many figures and grids shows its first tab quickly, and the
    browser draws only what the user looks at. The choice is kept in session state under
    ``key`` (a test selects a tab by setting it), and across pages like :func:`kept` values.
    """
    tabs = st.tabs(list(labels), **kept(key, labels[0], list(labels)))
    for label, tab in zip(labels, tabs, strict=True):
        if tab.open:
            return label, tab
    return labels[0], tabs[0]
