"""The Agreement page's tabs, its default pair and its default views (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Iterator

from elitr_core.export import figures, views
from elitr_core.stats import agreement
from ui.data import cached_figure, computed, export_table
from ui.defaults import DEFAULT_HUMAN, DEFAULT_JUDGE, Defaults, View

CORRELATION, ABSOLUTE, ICC, PAIR, RANKING = (
    "Correlation between evaluators", "MAE and kappa", "Intraclass correlation",
    "Two evaluators", "Ranking agreement")


def _default(options: list[str], preferred: str, fallback: int = 0) -> str:
    return options[options.index(preferred) if preferred in options
                   else min(fallback, len(options) - 1)]


def default_pair(evaluators: list[str]) -> tuple[str, str]:
    """The two evaluators compared first: the default judge and human when they have scores."""
    return _default(evaluators, DEFAULT_JUDGE), _default(evaluators, DEFAULT_HUMAN, 1)


def default_views(d: Defaults) -> Iterator[View]:
    """Every tab's tables and figures under the default choices (none with one evaluator)."""
    if len(d.evaluators) < 2:
        return
    yield CORRELATION, lambda: cached_figure(
        figures.correlation_heatmap,
        computed(agreement.evaluator_correlation, d.flt, methods=("pearson",)), "pearson")
    yield ABSOLUTE, lambda: computed(agreement.agreement_table, d.flt)
    yield ICC, lambda: export_table("icc", d.flt)
    a, b = default_pair(d.evaluators)

    def pair() -> None:
        cached_figure(figures.pair_scatter, computed(views.pair_scores, d.flt, a=a, b=b), a, b)
        computed(agreement.agreement_metrics, d.flt, a=a, b=b)
        cached_figure(figures.bias_plot, computed(agreement.judge_bias, d.flt, judge=a, human=b))

    yield PAIR, pair
    yield RANKING, lambda: computed(agreement.ranking_table, d.flt,
                                    evaluators=tuple(d.evaluators))
