"""A figure on a page: built once per builder and arguments (``ui.data.cached_figure``),
drawn in the one chart theme with a trimmed toolbar, and offered with its downloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st

from ui.data import cached_figure
from ui.downloads import download_figure
from ui.messages import shown

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: Plotly's toolbar without its logo and the buttons a researcher has no use for here: the
#: camera (the PNG and SVG downloads below each figure are the figure as exported), box and
#: lasso selection, zoom steps, autoscale and the hover and spike toggles. Zoom, pan and reset
#: stay; it shows on hover only.
CHART_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "displayModeBar": "hover",
    "modeBarButtonsToRemove": ["toImage", "select2d", "lasso2d", "zoomIn2d", "zoomOut2d",
                               "autoScale2d", "toggleSpikelines", "hoverClosestCartesian",
                               "hoverCompareCartesian"],
}


def plot(fig: go.Figure) -> None:
    """Draw ``fig`` as it was built (``theme=None``: its own template,
    ``elitr_core.export.theme``, not Streamlit's, so the page shows what the PNG and SVG
    downloads hold) with :data:`CHART_CONFIG`'s toolbar."""
    st.plotly_chart(fig, width="stretch", theme=None, config=CHART_CONFIG)


def show_figure(build: Callable[..., go.Figure], *args: Any, name: str,
                **kwargs: Any) -> go.Figure | None:
    """``build(*args, **kwargs)`` drawn with its PNG/SVG downloads; the figure is cached by
    the builder and the argument values. A builder's user error is shown as a message."""
    with shown():
        fig = cached_figure(build, *args, **kwargs)
        plot(fig)
        download_figure(fig, name)
        return fig
    return None
