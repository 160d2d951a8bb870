"""Download buttons under tables and figures, rendered only when clicked.

A table's "as shown" downloads render the table the page draws (``ui.tables.show_table``
passes its :class:`~elitr_core.export.shown_table.ShownTable` here); the "Full table"
downloads render an export table with the contract's names through
``elitr_core.export.formats.render``, byte-identical to the CLI's ``export``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import streamlit as st

from elitr_core.errors import UserError
from ui.data import CACHE_TTL_S
from ui.filters import file_label
from ui.text import md, plain

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    import pandas as pd
    import plotly.graph_objects as go

    from elitr_core.export.shown_table import ShownTable

    Table: TypeAlias = pd.DataFrame | Callable[[], pd.DataFrame]
    """A table, or a function computing it (on the click)."""

_MIME = {"csv": "text/csv", "json": "application/json", "latex": "application/x-tex",
         "png": "image/png", "svg": "image/svg+xml"}
_SUFFIX = {"csv": "csv", "json": "json", "latex": "tex", "png": "png", "svg": "svg"}
_LABEL = {"csv": "CSV", "json": "JSON", "latex": "LaTeX"}
TABLE_FORMATS = ("csv", "json", "latex")


@dataclass(frozen=True)
class Export:
    """The export table behind a table shown: ``frame`` (or a function computing it on the
    click) and, for a table of the export contract, its name ``table`` (its columns are then
    checked, and the download is what ``python -m elitr_core export TABLE`` writes)."""

    frame: Table
    table: str | None = None


def _render(frame: Table, fmt: str, table: str | None) -> str:
    from elitr_core.export.formats import render

    return render(frame() if callable(frame) else frame, fmt, table)


def download_shown(shown: ShownTable, name: str, *, key: str | None = None,
                   export: Export | None = None) -> None:
    """CSV, JSON and LaTeX of the table as ``shown`` (keys ``{key}.shown.{fmt}``), and with
    ``export`` the "Full table" CSV, JSON and LaTeX beside them (keys ``{key}.{fmt}``), each
    rendered only when clicked."""
    key = key or f"download.{name}"
    file_name = file_label(name)  # the sidebar's filters, as a figure's PNG names them
    cols = st.columns([1, 1, 1, 1.6, 1.6, 1.6, 1] if export else [1, 1, 1, 6])
    for col, fmt in zip(cols[:3], TABLE_FORMATS, strict=True):
        # rendered when clicked: a rerun of the page does not pay for it
        col.download_button(plain(_LABEL[fmt]), partial(shown.render, fmt),
                            file_name=f"{file_name}.{_SUFFIX[fmt]}", mime=_MIME[fmt],
                            key=f"{key}.shown.{fmt}", on_click="ignore",
                            help=plain("The table as shown: its columns, rows and order, "
                                       "under the headings shown"),
                            icon=":material/download:" if fmt == "csv" else None)
    if export:
        _full_buttons(cols[3:6], export, file_name, key)


def _full_buttons(cols: list[st.delta_generator.DeltaGenerator], export: Export,
                  file_name: str, key: str) -> None:
    what = f"export {export.table}" if export.table else "the export"
    for col, fmt in zip(cols, TABLE_FORMATS, strict=True):
        col.download_button(plain(f"Full table {_LABEL[fmt]}"),
                            partial(_render, export.frame, fmt, export.table),
                            file_name=f"{file_name}-full.{_SUFFIX[fmt]}", mime=_MIME[fmt],
                            key=f"{key}.{fmt}", on_click="ignore",
                            help=md("Every column and row of {}, under the export's column "
                                    "names (what the command line writes)", what))


def download_table(frame: Table, name: str, *, table: str | None = None,
                   key: str | None = None) -> None:
    """The "Full table" CSV, JSON and LaTeX of an export table the page does not show as a
    table (rendered by ``elitr_core.export.formats.render``, byte-identical to the CLI's;
    ``table`` checks its columns), only when clicked. A table the page shows gets its
    downloads from ``ui.tables.show_table(download=...)``."""
    key = key or f"download.{name}"
    _full_buttons(st.columns([2, 2, 2, 3])[:3], Export(frame, table), file_label(name), key)


@st.cache_resource(ttl=CACHE_TTL_S, show_spinner=False)
def _chromium_missing() -> str:
    """Why figures cannot be downloaded ("" when a Chromium is there); looked up once."""
    from elitr_core.export.figures import find_chromium

    try:
        find_chromium()
    except UserError as exc:
        return str(exc)
    return ""


def download_figure(fig: go.Figure, name: str, *, key: str | None = None) -> None:
    """PNG and SVG download buttons under a figure, rendered in Chromium only when clicked;
    a message instead when no Chromium is installed."""
    from elitr_core.export.figures import figure_bytes

    missing = _chromium_missing()
    if missing:
        st.caption(md("Figure download unavailable: {}", missing))
        return
    key = key or f"download.{name}"
    name = file_label(name)
    cols = st.columns([1, 1, 7])
    for col, fmt in zip(cols[:2], ("png", "svg"), strict=True):
        # keep_warm: one Chromium for every download of this server, not one per figure
        col.download_button(plain(fmt.upper()), partial(figure_bytes, fig, fmt, keep_warm=True),
                            file_name=f"{name}.{_SUFFIX[fmt]}", mime=_MIME[fmt],
                            key=f"{key}.{fmt}", icon=":material/image:", on_click="ignore")


def _dataset_zip() -> bytes:
    from elitr_core.data.database import reading
    from elitr_core.export.dataset import dataset_zip
    from ui.data import engine

    with reading(engine()) as session:
        return dataset_zip(session)


def download_dataset(key: str = "download.dataset") -> None:
    """The "Dataset (Hugging Face, zip)" button: ``export dataset DIR``'s files (Parquet and
    dataset card, annotators pseudonymised) of the whole database in one ZIP, built by the core
    only when clicked."""
    st.download_button(plain("Dataset (Hugging Face, zip)"), _dataset_zip,
                       file_name="elitr-scores-dataset.zip", mime="application/zip", key=key,
                       on_click="ignore", icon=":material/download:",
                       help=plain("Every score, response, question and study as Parquet with a "
                                  "dataset card, annotators pseudonymised: what "
                                  "python -m elitr_core export dataset DIR writes"))
