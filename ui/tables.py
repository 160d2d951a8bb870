"""How every page shows a table: one precision per kind of number, p-values in the APA style
(``.056``, ``< .001``), missing cells as an en dash, an interval as one ``[low, high]`` column,
key columns first and the rest behind a column picker.

A table's downloads come from the table shown (``download=``): one
:class:`~elitr_core.export.shown_table.ShownTable` is what the grid draws and what the "as
shown" CSV/JSON/LaTeX render, so a page cannot show one table and download another; where the
export holds more, ``export=`` adds the "Full table" downloads, byte-identical to the CLI
(``ui.downloads``). Headings are the columns' display names
(:mod:`elitr_core.export.column_labels`). The formatting rules themselves live in
:mod:`elitr_core.export.display` (pure, tested without Streamlit).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st
from pandas.io.formats.style import Styler

from elitr_core.export.column_labels import column_label
from elitr_core.export.display import (
    MISSING,
    STYLE_CELL_LIMIT,
    column_widths,
    empty_notes,
    ordered_columns,
    printf_formats,
    styled,
    with_interval_texts,
)
from elitr_core.export.shown_table import ShownTable
from ui.downloads import Export, download_shown
from ui.text import md

if TYPE_CHECKING:
    from streamlit.delta_generator import DeltaGenerator
    from streamlit.elements.arrow import DataframeState

TEXT_COLUMNS = ("question", "reference", "response")
LONG_TEXT = 40
"""Characters from which a text column (a question, a reference answer) is drawn wide; shorter
ones (``reference``: the reference evaluator's name) keep the width of their content."""


def show_table(frame: pd.DataFrame, *, key: str, keys: Sequence[str] = (),
               index: bool = False, select: bool = False,
               column_config: dict[str, Any] | None = None, download: str | None = None,
               export: Export | None = None, download_key: str | None = None,
               ) -> DeltaGenerator | DataframeState:
    """Show ``frame`` formatted; ``keys`` (those present) come first, and when given, the other
    columns hide behind a "Columns" picker. With ``select``, one row can be picked; the
    selection event is returned (``event.selection.rows``). ``column_config`` adds Streamlit
    column settings (a progress bar, say) to the number formats. Each column is headed by its
    display name (``column_labels``).

    ``download`` (a file name): CSV, JSON and LaTeX of the table as shown under it (its
    columns, rows, order, headings and, in LaTeX, its rounding), keys
    ``{download_key}.shown.{csv,json,latex}`` (``download_key``: ``download.{download}``);
    ``export``: the "Full table" downloads beside them, keys ``{download_key}.{fmt}``.

    So that a table fits a 1366 px screen, an interval shows as one text column, ``[low, high]``
    (``display.with_interval_texts``; the grid's own CSV download writes it whole, and a
    missing cell empty, where the grid shows an en dash),
    a ``note`` column without a note is not drawn, and a short
    ``reference`` (an evaluator's name, not an answer) is not drawn wide. Every other column is
    as wide as its longest shown text and its header (``display.column_widths``; the grid
    would measure its first rows only and cut "completeness" further down), a free text at
    most 400 px. The frame keeps every column (tests and downloads read them)."""
    shown, intervals = with_interval_texts(frame) if frame.size <= STYLE_CELL_LIMIT \
        else (frame, {})
    data = styled(shown)
    label_of = {bound: label for label, bounds in intervals.items() for bound in bounds}
    keys = list(dict.fromkeys(label_of.get(k, k) for k in keys))
    hidden = set(empty_notes(frame))
    # each interval's text column takes its low bound's place; both bounds stay in the frame
    columns = [label_of.get(c, c) for c in map(str, frame.columns) if c not in hidden]
    first, rest = ordered_columns(pd.DataFrame(columns=list(dict.fromkeys(columns))), keys)
    shown_columns = first + rest
    if keys and rest:
        with st.popover("Columns", icon=":material/view_column:"):
            extra = st.multiselect("More columns", rest, key=f"{key}.columns",
                                   format_func=column_label, placeholder="key columns only")
        shown_columns = first + [c for c in rest if c in extra]
    given = {c: v["label"] for c, v in (column_config or {}).items()
             if isinstance(v, dict) and v.get("label")}
    table = ShownTable(shown, tuple(shown_columns), index=index, given_labels=given)
    labels = table.labels
    wide = [c for c in TEXT_COLUMNS if c in frame.columns
            and frame[c].astype(str).str.len().max() > LONG_TEXT]
    config: dict[str, Any] = {c: st.column_config.TextColumn(width="large") for c in wide}
    # no Styler: the browser formats the numbers (a frame whose negative zeros were set to 0.0
    # is a copy: it was shown unformatted, 2.2571631347968975 for 2.26)
    if not isinstance(data, Styler):
        config.update({c: st.column_config.NumberColumn(format=f)
                       for c, f in printf_formats(frame).items()})
    widths = column_widths(shown, [c for c in shown_columns if c not in wide], intervals=False,
                           headers=labels)
    for label, (low, high) in intervals.items():
        config[label] = st.column_config.TextColumn(
            help=md("{} to {} (both columns in the download)", low, high))
    config.update(column_config or {})
    for column, width in widths.items():  # unless the caller's settings give a width
        given = config.get(column, {})
        if isinstance(given, dict) and not given.get("width"):
            config[column] = {**given, "width": width}
    for column in table.shown_columns:  # the heading: its display name
        name = "_index" if index and column == table.index_name else column
        config[name] = {**config.get(name, {}), "label": labels[column]}
    options: dict[str, Any] = {"on_select": "rerun", "selection_mode": "single-row"} \
        if select else {}
    event = st.dataframe(data, hide_index=not index, width="stretch", key=key,
                         column_order=shown_columns, column_config=config,
                         placeholder=MISSING, **options)
    if download:
        download_shown(table, download, key=download_key, export=export)
    return event


def selected_row(event: object, frame: pd.DataFrame) -> pd.Series | None:
    """The row the user picked in a :func:`show_table` with ``select=True``, or None."""
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    if not rows or rows[0] >= len(frame):
        return None
    return frame.iloc[rows[0]]


def show_table_and_notes(frame: pd.DataFrame, *, key: str, label: Sequence[str],
                         keys: Sequence[str] | None = None,
                         **downloads: Any) -> DeltaGenerator | DataframeState:
    """:func:`show_table` with the ``note`` column behind the "Columns" picker and each
    distinct note written under the table as plain text, after the ``label`` columns of its
    first row (``raters``, ``group``): a long note would push the figures out of a 1366 px
    window, and a note read under the table is read whole. ``keys``: the columns shown first
    (default: every column but the note); ``downloads``: :func:`show_table`'s ``download``,
    ``export`` and ``download_key`` (the notes are in the downloads' ``note`` column only when
    it is picked)."""
    notes = frame.get("note", pd.Series(dtype="string")).fillna("").astype(str)
    shown_keys = [c for c in (frame.columns if keys is None else keys) if c != "note"]
    event = show_table(frame, key=key, keys=shown_keys, **downloads)
    shown: set[str] = set()
    for index, note in notes.items():
        if note and note not in shown:
            shown.add(note)
            where = " ".join(str(frame.at[index, c]) for c in label if c in frame.columns)
            st.text(f"{where}: {note}" if where else note)
    return event
