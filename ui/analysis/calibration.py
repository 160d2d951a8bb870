"""The Calibration page's default view (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Iterator

from elitr_core.export import figures
from ui.data import cached_figure, export_table
from ui.defaults import Defaults, View

TITLE = "Calibration"


def default_views(d: Defaults) -> Iterator[View]:
    """The figure and table against the default human reference (when it has scores)."""
    if d.human in d.evaluators:
        yield TITLE, lambda: cached_figure(
            figures.calibration_plot, export_table("calibration", d.flt, reference=d.human))
