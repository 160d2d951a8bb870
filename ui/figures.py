"""A figure on a page: built once per builder and arguments (``ui.data.cached_figure``),
drawn with its downloads."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import streamlit as st

from ui.data import cached_figure
from ui.downloads import download_figure
from ui.messages import shown

if TYPE_CHECKING:
    import plotly.graph_objects as go


def show_figure(build: Callable[..., go.Figure], *args: Any, name: str,
                **kwargs: Any) -> go.Figure | None:
    """``build(*args, **kwargs)`` drawn with its PNG/SVG downloads; the figure is cached by
    the builder and the argument values. A builder's user error is shown as a message."""
    with shown():
        fig = cached_figure(build, *args, **kwargs)
        st.plotly_chart(fig, width="stretch")
        download_figure(fig, name)
        return fig
    return None
