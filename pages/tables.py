"""How every page shows a table: one precision per kind of number, p-values in the APA style
(``.056``, ``< .001``), missing cells as an en dash, an interval as one ``[low, high]`` column,
key columns first and the rest behind a column picker.

Display only: the CSV/JSON/LaTeX downloads are rendered from the unformatted frame
(``pages.downloads.download_table``) and stay byte-identical to the CLI. The formatting rules
themselves live in :mod:`elitr_core.export.display` (pure, tested without Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from elitr_core.export.display import (
    column_widths,
    empty_notes,
    interval_columns,
    interval_label,
    ordered_columns,
    printf_formats,
    styled,
)
from pages.text import md

TEXT_COLUMNS = ("question", "reference", "response")
LONG_TEXT = 40
"""Characters from which a text column (a question, a reference answer) is drawn wide; shorter
ones (``reference``: the reference evaluator's name) keep the width of their content."""


def show_table(frame: pd.DataFrame, *, key: str, keys: Sequence[str] = (),
               index: bool = False, select: bool = False,
               column_config: dict[str, Any] | None = None) -> Any:
    """Show ``frame`` formatted; ``keys`` (those present) come first, and when given, the other
    columns hide behind a "Columns" picker. With ``select``, one row can be picked; the
    selection event is returned (``event.selection.rows``). ``column_config`` adds Streamlit
    column settings (a progress bar, say) to the number formats.

    So that a table fits a 1366 px screen, an interval shows as one column, ``[low, high]``
    (the low column carries the text and sorts by the low bound; the high one is not drawn),
    a ``note`` column without a note is not drawn, and a short
    ``reference`` (an evaluator's name, not an answer) is not drawn wide. Every other column is
    as wide as its longest shown text and its header (``display.column_widths``; the grid
    would measure its first rows only and cut "completeness" further down), a free text at
    most 400 px. The frame keeps every column (tests and downloads read them)."""
    data = styled(frame)
    intervals = interval_columns(frame) if data is not frame else {}
    low_of = {high: low for low, high in intervals.items()}
    keys = list(dict.fromkeys(low_of.get(k, k) for k in keys))
    hidden = set(low_of) | set(empty_notes(frame))
    first, rest = ([c for c in part if c not in hidden]
                   for part in ordered_columns(frame, keys))
    shown_columns = first + rest
    if keys and rest:
        with st.popover("Columns", icon=":material/view_column:"):
            extra = st.multiselect("More columns", rest, key=f"{key}.columns",
                                   placeholder="key columns only")
        shown_columns = first + [c for c in rest if c in extra]
    wide = [c for c in TEXT_COLUMNS if c in frame.columns
            and frame[c].astype(str).str.len().max() > LONG_TEXT]
    config: dict[str, Any] = {c: st.column_config.TextColumn(width="large") for c in wide}
    if data is frame:  # no Styler: the browser formats the numbers
        config.update({c: st.column_config.NumberColumn(format=f)
                       for c, f in printf_formats(frame).items()})
    widths = column_widths(frame, [c for c in shown_columns if c not in wide],
                           intervals=bool(intervals))
    for low, high in intervals.items():
        config[low] = st.column_config.Column(
            label=interval_label(low),
            help=md("{} to {} (both columns in the download)", low, high))
    config.update(column_config or {})
    for column, width in widths.items():  # unless the caller's settings give a width
        given = config.get(column, {})
        if isinstance(given, dict) and not given.get("width"):
            config[column] = {**given, "width": width}
    options: dict[str, Any] = {"on_select": "rerun", "selection_mode": "single-row"} \
        if select else {}
    return st.dataframe(data, hide_index=not index, width="stretch", key=key,
                        column_order=shown_columns, column_config=config, **options)


def selected_row(event: Any, frame: pd.DataFrame) -> pd.Series | None:
    """The row the user picked in a :func:`show_table` with ``select=True``, or None."""
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    if not rows or rows[0] >= len(frame):
        return None
    return frame.iloc[rows[0]]
