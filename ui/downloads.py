"""Download buttons under tables and figures, rendered only when clicked."""

from __future__ import annotations

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

    Table: TypeAlias = pd.DataFrame | Callable[[], pd.DataFrame]
    """A table, or a function computing it (on the click)."""

_MIME = {"csv": "text/csv", "json": "application/json", "latex": "application/x-tex",
         "png": "image/png", "svg": "image/svg+xml"}
_SUFFIX = {"csv": "csv", "json": "json", "latex": "tex", "png": "png", "svg": "svg"}


def _render(frame: Table, fmt: str, table: str | None) -> str:
    from elitr_core.export.formats import render

    return render(frame() if callable(frame) else frame, fmt, table)


def download_table(frame: Table, name: str, *, table: str | None = None,
                   key: str | None = None) -> None:
    """CSV, JSON and LaTeX download buttons under a table, rendered by
    ``elitr_core.export.formats.render`` (so an export-contract table is byte-identical to
    the CLI's; pass ``table`` to check its columns), only when clicked. ``frame`` may be a
    function returning the table: it is then computed on the click too."""

    key = key or f"download.{name}"
    name = file_label(name)  # the sidebar's filters, as a figure's PNG names them
    cols = st.columns([1, 1, 1, 6])
    # rendered when clicked, like JSON and LaTeX: a rerun of the page does not pay for it
    cols[0].download_button("CSV", partial(_render, frame, "csv", table), file_name=f"{name}.csv",
                            mime=_MIME["csv"], key=f"{key}.csv", icon=":material/download:",
                            on_click="ignore")
    for col, fmt in zip(cols[1:3], ("json", "latex"), strict=True):
        col.download_button(plain(fmt.upper()) if fmt == "json" else "LaTeX",
                            partial(_render, frame, fmt, table),
                            file_name=f"{name}.{_SUFFIX[fmt]}", mime=_MIME[fmt],
                            key=f"{key}.{fmt}", on_click="ignore")


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
