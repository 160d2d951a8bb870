"""The Battles page's cached pairwise tables and default views (see :mod:`ui.analysis`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pandas as pd

from elitr_core.data.browse import ScoreFilter
from elitr_core.data.database import reading
from elitr_core.export import pairwise, pairwise_figures
from elitr_core.stats.pairwise import defined_criteria
from ui.data import cached_figure, database_url, engine, score_cache
from ui.defaults import Defaults, View

TITLE = "Battles"
RATINGS = (("elo", "rating", "Elo (maximum likelihood)"),
           ("bradley-terry", "strength", "Bradley-Terry"))


@score_cache(show_spinner="Computing...")
def table(url: str | None, name: str, flt: ScoreFilter, criterion: str | None = None,
          baseline: str | None = None, reference: str = "gold-human") -> pd.DataFrame:
    """``python -m elitr_core export NAME`` for these filters (``url`` keys the cache)."""
    with reading(engine()) as session:
        return pairwise.build_pairwise_table(name, session, flt, criterion=criterion,
                                             baseline=baseline, reference=reference)


@score_cache(show_spinner=False)
def choices(url: str | None, flt: ScoreFilter, judge: str) -> pd.DataFrame:
    """A judge's judgments to pick one from in the key-fact view (``url`` keys the cache)."""
    with reading(engine()) as session:
        return pairwise.judgment_choices(session, flt, judge)


def battle_models(mine: pd.DataFrame) -> list[str]:
    """The models a judge's battles compare (the baselines offered)."""
    return sorted(set(mine["model_a"]) | set(mine["model_b"]))


def default_views(d: Defaults) -> Iterator[View]:
    """The first judge's and criterion's tables and figures (when pairwise judgments exist)."""
    flt, url = replace(d.flt, evaluators=None), database_url()
    judgments = table(url, "pairwise-judgments", flt)
    if judgments.empty:
        return
    judge = sorted(judgments["evaluator"].unique())[0]
    mine = judgments[judgments["evaluator"] == judge]
    criterion = defined_criteria(mine)[0]

    def views() -> None:
        pairs = table(url, "pairwise", flt, criterion)
        cached_figure(pairwise_figures.win_matrix_heatmap,
                      pairwise.win_matrix(pairs, judge, criterion),
                      f"Win share, {criterion} ({judge})")
        for name, value, label in RATINGS:
            ratings = table(url, name, flt, criterion)
            cached_figure(pairwise_figures.rating_plot, ratings[ratings["evaluator"] == judge],
                          value, f"{label}, {criterion} ({judge})")
        baseline = battle_models(mine)[0]
        rates = table(url, "winrate", flt, criterion, baseline)
        cached_figure(pairwise_figures.win_rate_bars, rates[rates["evaluator"] == judge],
                      f"Win rate against {baseline} ({judge}, {criterion})")
        table(url, "pairwise-agreement", flt, criterion, None, "gold-human")
        choices(url, flt, judge)

    yield TITLE, views
