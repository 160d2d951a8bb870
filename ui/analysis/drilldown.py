"""The Model drilldown page's tabs and default views (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Iterator

from elitr_core.export import figures
from ui.data import cached_figure, export_table, question_table_frame, scores_frame
from ui.defaults import Defaults, View

BREAKDOWN, LOST_IN_MIDDLE, QUESTIONS, DISAGREEMENTS = (
    "Breakdown", "Lost in the middle", "Questions", "Largest disagreements")


def default_views(d: Defaults) -> Iterator[View]:
    """The default model's tabs: its breakdown figure, lost-in-the-middle test, questions."""
    yield BREAKDOWN, lambda: cached_figure(
        figures.breakdown_bars, export_table("breakdown", d.model_flt), "question_type")
    yield LOST_IN_MIDDLE, lambda: export_table("lost-in-middle", d.model_flt)
    yield QUESTIONS, lambda: (question_table_frame(d.model_flt), scores_frame(d.model_flt))
    yield DISAGREEMENTS, lambda: None  # the questions' table, already computed
