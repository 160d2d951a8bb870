"""One evaluator's ratings from its matches, in every state a tournament passes through.

Shared by the score-based rankings (:mod:`elitr_core.stats.elo`) and the pairwise ones
(:mod:`elitr_core.stats.pairwise_rank`): the matches are model codes ``a``, ``b``, the
outcome ``s`` for ``a`` and the question (``clusters``) of each match. Every function returns
one row per model with a ``note``: groups of models that never met are rated apart
(:func:`elitr_core.stats.rating_groups.rate_by_group`), a sparse model loses its own interval
only, and a zero-width interval is emptied with its cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.elo_mle import bt_counts, bt_fit, strength_interval, to_elo
from elitr_core.stats.rating_groups import (
    SAME_VALUE,
    interval_notes,
    questions_played,
    rate_by_group,
    zero_width_cause,
)


def elo_pass(a: list[int], b: list[int], s: list[float], n_models: int, *,
             k: float = 32.0, initial: float = 1000.0) -> list[float]:
    """Ratings after one pass of Elo updates over matches ``(a[t], b[t], s[t])``.

    ``E_a = 1 / (1 + 10 ** ((R_b - R_a) / 400))``, ``R_a += K (S - E_a)`` and
    ``R_b -= K (S - E_a)`` (both updated from the pre-match ratings).

    References
    ----------
    Elo, A. (1978). The Rating of Chessplayers, Past and Present. Arco.
    """
    ratings = [float(initial)] * n_models
    scale = math.log(10.0) / 400.0
    for x, y, outcome in zip(a, b, s, strict=True):
        rx, ry = ratings[x], ratings[y]
        delta = k * (outcome - 1.0 / (1.0 + math.exp((ry - rx) * scale)))
        ratings[x] = rx + delta
        ratings[y] = ry - delta
    return ratings


def check_elo_options(point: str, n_bootstrap: int, confidence: float) -> None:
    """Refuse bad options of the Elo ratings with a clear message."""
    if n_bootstrap < 0 or not 0 < confidence < 1:
        raise UserError("n_bootstrap must be >= 0 and confidence strictly between 0 and 1")
    if point not in ("mle", "median", "order") or (point == "median" and n_bootstrap == 0):
        raise UserError(f"the Elo rating must be mle, median or order, not {point!r} (median "
                        "needs n_bootstrap > 0)")


#: The note of a one-pass (``--elo order``) rating: no interval of its own.
ORDER_NOTE = ("one pass in question order: no interval (the percentile interval over random "
              "orders belongs to their median, --elo median, not to this order's rating)")


def question_notes(g: Matches, n_bootstrap: int, confidence: float,
                   rng: np.random.Generator) -> list[str]:
    """Per model, why its rating has no trustworthy interval over the questions (empty where
    it has one), from the maximum-likelihood rating's question resamples: a model played on
    too few questions, one that never won or never lost, every match from one question, a
    judge that always preferred one side. The median over match orders has an interval in
    each of these states (it measures the order, not the questions), so it borrows these."""
    cause = zero_width_cause(g.s, g.clusters, g.first_won)
    if cause != SAME_VALUE:  # all ties, one question, one side always preferred
        return [f"no interval: {cause}"] * len(g.names)
    try:
        full = bt_fit(*bt_counts(g.a, g.b, g.s, len(g.names)), names=g.names)
    except DegenerateDataError:  # a model that never won or never lost: rated in few resamples
        full = np.zeros(len(g.names))
    low, high, rated = strength_interval(g.a, g.b, g.s, g.clusters, full, n_bootstrap, rng,
                                         confidence)
    return g.notes(low, high, rated, n_bootstrap)[2]


def order_interval(
    a: np.ndarray, b: np.ndarray, s: np.ndarray, n_models: int, rng: np.random.Generator,
    n_bootstrap: int, confidence: float, *, k: float, initial: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval (and median) of the final ratings over random permutations of the
    match order (NaN without permutations)."""
    if n_bootstrap == 0:
        empty = np.full(n_models, np.nan)
        return empty, empty, empty
    boot = np.empty((n_bootstrap, n_models))
    for r in range(n_bootstrap):
        p = rng.permutation(len(s))
        boot[r] = elo_pass(a[p].tolist(), b[p].tolist(), s[p].tolist(), n_models,
                           k=k, initial=initial)
    tail = 50 * (1 - confidence)
    low, median, high = np.percentile(boot, [tail, 50, 100 - tail], axis=0)
    return low, high, median


class Matches:
    """One evaluator's matches: codes into ``names``, outcomes, questions and (pairwise
    judgments only) whether the answer shown first won (:func:`rating_groups.first_shown_won`)."""

    def __init__(self, a: np.ndarray, b: np.ndarray, s: np.ndarray, clusters: np.ndarray,
                 names: np.ndarray, first_won: np.ndarray | None = None) -> None:
        self.a, self.b, self.s, self.names = a, b, s, names
        self.clusters = np.unique(clusters, return_inverse=True)[1]
        self.first_won = first_won

    def part(self, keep: np.ndarray, codes: np.ndarray, a: np.ndarray,
             b: np.ndarray) -> Matches:
        """The matches ``keep`` of the models ``codes`` (``a``, ``b`` recoded to them)."""
        first = None if self.first_won is None else self.first_won[keep]
        return Matches(a, b, self.s[keep], self.clusters[keep], self.names[codes], first)

    def notes(self, low: np.ndarray, high: np.ndarray, rated: np.ndarray,
              n_bootstrap: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """:func:`rating_groups.interval_notes` for these matches."""
        played = questions_played(self.a, self.b, self.clusters, len(self.names))
        return interval_notes(self.names, low, high, rated, n_bootstrap, played,
                              lambda: zero_width_cause(self.s, self.clusters, self.first_won))

    def by_group(self, rate: Callable[[Matches], pd.DataFrame]) -> pd.DataFrame:
        """``rate(matches)`` on each group of models joined by matches (see
        :func:`rating_groups.rate_by_group`)."""
        return rate_by_group(self.a, self.b, self.names,
                             lambda keep, codes, a, b: rate(self.part(keep, codes, a, b)))


def strengths(m: Matches, n_bootstrap: int, rng: np.random.Generator,
              confidence: float) -> pd.DataFrame:
    """Bradley-Terry strengths (mean zero per group) with their cluster-bootstrap interval
    and note: columns ``model, strength, ci_low, ci_high, note``."""

    def rate(g: Matches) -> pd.DataFrame:
        strength = bt_fit(*bt_counts(g.a, g.b, g.s, len(g.names)), names=g.names)
        low, high, rated = strength_interval(g.a, g.b, g.s, g.clusters, strength, n_bootstrap,
                                             rng, confidence)
        low, high, notes = g.notes(low, high, rated, n_bootstrap)
        return pd.DataFrame({"model": g.names, "strength": strength, "ci_low": low,
                             "ci_high": high, "note": notes})

    return m.by_group(rate)


def elo_ratings(m: Matches, point: str, rng: np.random.Generator, n_bootstrap: int,
                confidence: float, *, k: float, initial: float) -> pd.DataFrame:
    """Elo ratings by ``point`` (see :func:`elitr_core.stats.elo.elo`), per group of models
    that met: columns ``model, rating, ci_low, ci_high, note``."""
    if point == "mle":
        table = strengths(m, n_bootstrap, rng, confidence)
        return table.assign(**{c: to_elo(table[c].to_numpy(float), initial)
                               for c in ("strength", "ci_low", "ci_high")}).rename(
            columns={"strength": "rating"})

    def rate(g: Matches) -> pd.DataFrame:
        if point == "order":
            empty = np.full(len(g.names), np.nan)
            return pd.DataFrame({"model": g.names, "rating": elo_pass(
                g.a.tolist(), g.b.tolist(), g.s.tolist(), len(g.names), k=k, initial=initial),
                "ci_low": empty, "ci_high": empty, "note": ORDER_NOTE})
        low, high, median = order_interval(g.a, g.b, g.s, len(g.names), rng, n_bootstrap,
                                           confidence, k=k, initial=initial)
        low, high, notes = g.notes(low, high, np.ones(len(g.names)), n_bootstrap)
        untrusted = question_notes(g, n_bootstrap, confidence, rng.spawn(1)[0])
        for i, note in enumerate(untrusted):
            if note and not notes[i]:
                low[i] = high[i] = np.nan
                notes[i] = f"{note}; the spread over match orders would not show it"
        return pd.DataFrame({"model": g.names, "rating": median, "ci_low": low,
                             "ci_high": high, "note": notes})

    return m.by_group(rate)
