"""The Judge audit page's sections and default views (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import plotly.graph_objects as go

from elitr_core.export import audit_figures, views
from elitr_core.export.judge_audit import NEEDS_SPANS, AuditOptions
from elitr_core.stats.recalibration import recalibrated_scores
from ui.data import cached_figure, computed, export_table, scores_frame
from ui.defaults import DEFAULT_BUDGET, DEFAULT_HALF_WIDTH, Defaults, View

# the sections, one tab each (the labels are short enough to fit one line)
PPI, BUDGET, DESIGNS, RECALIBRATION, EFFECTS, LENGTH, CONSISTENCY, CONVERSATION = (
    "PPI leaderboard", "Budget planner", "Sampling designs", "Recalibration", "Judge effects",
    "Length control", "Self-consistency", "Conversation")
Builder = Callable[..., go.Figure]
#: per tab, its export tables and their figure builders (None: a table only)
SECTIONS: dict[str, tuple[tuple[str, Builder | None], ...]] = {
    PPI: (("ppi", audit_figures.ppi_estimates),),
    BUDGET: (("ppi-budget", None),),
    DESIGNS: (("ppi-designs", audit_figures.design_widths),),
    RECALIBRATION: (("recalibration", None),),
    EFFECTS: (("judge-effects", audit_figures.effects_forest),),
    LENGTH: (("length-controlled", audit_figures.length_controlled_plot),
             ("length-controlled-tau", None)),
    CONSISTENCY: (("self-consistency", None),),
    CONVERSATION: (("turn-effect", audit_figures.turn_plot), ("st-vs-mt", None),
                   ("interleaving", None), ("interleaving-span", None))}


def default_views(d: Defaults) -> Iterator[View]:
    """Every tab's tables and figures for the default judge and human (when both scored)."""
    if not d.pair:
        return
    options = AuditOptions(judge=d.judge, human=d.human, half_width=DEFAULT_HALF_WIDTH,
                           budget=DEFAULT_BUDGET)

    def views_of(tab: str) -> None:
        for table, build in SECTIONS[tab]:
            if table in NEEDS_SPANS and not views.has_interleaved(scores_frame(d.flt)):
                continue  # no interleaved run: the section says so, nothing to warm
            frame = export_table(table, d.flt, audit=options)
            if build is not None:
                cached_figure(build, frame)
        if tab == RECALIBRATION:
            cached_figure(audit_figures.recalibration_plot,
                          computed(recalibrated_scores, d.flt, judge=d.judge, human=d.human))

    for tab in SECTIONS:
        yield tab, partial(views_of, tab)
