"""The Leaderboard page's tabs, its main table and its default views (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from elitr_core.data.browse import ScoreFilter
from elitr_core.export import figures, views
from elitr_core.export.groups import parse_groups
from elitr_core.stats.leaderboard import board_wide
from ui.data import cached_figure, export_table, score_cache
from ui.defaults import DEFAULT_JUDGE, Defaults, View

FIGURE, LONG, FAMILIES, DIFFERENTIATING, TWO_MODELS = (
    "Figure", "Long table", "Model families", "Differentiating questions", "Two models")


@score_cache(show_spinner=False)
def main_table(flt: ScoreFilter, evaluator: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Means and seed standard deviations, models x setting/split (cached per filters)."""
    board = export_table("leaderboard", flt)
    return board_wide(board, evaluator, "mean"), board_wide(board, evaluator, "std")


def default_evaluator(evaluators: list[str]) -> str:
    """The evaluator shown first: the default judge when it has scores."""
    return DEFAULT_JUDGE if DEFAULT_JUDGE in evaluators else evaluators[0]


def figure_splits(board: pd.DataFrame) -> list[str]:
    """The splits the figure offers, in order (the last one shown first)."""
    return [s for s in views.SPLIT_ORDER if s in set(board["split"])]


def default_views(d: Defaults) -> Iterator[View]:
    """The main table with the figure tab, then the other tabs, under the default choices."""
    board = export_table("leaderboard", d.flt)
    evaluator = default_evaluator(views.evaluators_in(board))
    split = figure_splits(board)[-1]
    yield FIGURE, lambda: (main_table(d.flt, evaluator),
                           cached_figure(figures.leaderboard_bars, board, evaluator, split))
    yield LONG, lambda: board
    yield FAMILIES, lambda: export_table(
        "breakdown", d.flt, groups=parse_groups(list(views.DEFAULT_FAMILIES)))
    yield DIFFERENTIATING, lambda: export_table("differentiating", d.flt)
    yield TWO_MODELS, lambda: None  # needs two models picked in the sidebar
