"""The one chart theme: a Plotly template every figure of the project is built with.

Registered once, on import, as ``plotly.io.templates[THEME]``; ``figures._layout`` (which every
figure builder ends with) names it, so a figure looks the same on a page, in its PNG/SVG
download and from the command line. Plotly's own ``plotly_white`` is its base: what this adds
is the palette (the dashboard's blue first, then Okabe and Ito's colour-blind-safe colours),
the dashboard's font, a left-aligned title and margins that leave the plot the room.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

THEME = "elitr"

#: the dashboard's primary blue (.streamlit/config.toml), then Okabe & Ito (2008) without
#: yellow, which is unreadable on white
PALETTE: tuple[str, ...] = ("#1f5fa8", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9",
                            "#8c6d31", "#666666")
FONT = '"Source Sans", "Source Sans Pro", "Helvetica Neue", Arial, sans-serif'
TEXT_COLOUR = "#31333f"  # Streamlit's body text
MARGIN = {"l": 60, "r": 20, "t": 56, "b": 64}


def _template() -> go.layout.Template:
    base = pio.templates["plotly_white"]
    template = go.layout.Template(base)
    template.layout.update(
        colorway=list(PALETTE),
        font={"family": FONT, "size": 13, "color": TEXT_COLOUR},
        title={"x": 0, "xanchor": "left", "xref": "paper", "font": {"size": 16}},
        margin=MARGIN,
        legend={"font": {"size": 12}, "title": {"font": {"size": 12}}},
        hoverlabel={"font": {"family": FONT, "size": 12}},
    )
    return template


def register() -> str:
    """Register the theme under :data:`THEME` (again, harmlessly) and return its name."""
    pio.templates[THEME] = _template()
    return THEME


register()
