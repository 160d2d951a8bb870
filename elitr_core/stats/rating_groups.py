"""The states a tournament passes through, named: groups of models that never met, models
whose strength is infinite, sparse models and intervals that resampling cannot widen.

Ratings from pairwise matches (:mod:`elitr_core.stats.elo`, :mod:`elitr_core.stats.
pairwise_rank`) are only comparable between models joined by a chain of matches. Models in two
groups that never met have no common scale: each group is rated on its own
(:func:`rate_by_group`), and every row says so. A zero-width interval (every match a tie, a
judge that always prefers the answer shown first, a single question) claims a certainty the
data do not give: it is left empty with its cause (:func:`zero_width_cause`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from elitr_core.stats.frame import ZERO_WIDTH

#: Bounds closer than this (log-strength or Elo points) are a zero-width interval.
ZERO = 1e-8


def _listed(names: Sequence[object]) -> str:
    return ", ".join(str(n) for n in names)


def comparison_groups(a: np.ndarray, b: np.ndarray, n_models: int) -> list[np.ndarray]:
    """Model codes of each group joined by matches (connected components of the "played
    against" graph), in order of their first model; models that never played are left out."""
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n_models, n_models))
    _, labels = connected_components(graph, directed=False)
    played = np.zeros(n_models, bool)
    played[a], played[b] = True, True
    order = pd.unique(labels[played])
    return [np.flatnonzero((labels == g) & played) for g in order]


def never_met_note(names: np.ndarray, groups: list[np.ndarray], which: int) -> str:
    """The note of every row of group ``which`` when the models form several groups."""
    listed = "; ".join(f"{{{_listed(names[g])}}}" for g in groups)
    return (f"the comparison graph is disconnected: the groups {listed} never met (no "
            f"question compared a model of one with a model of another), so each is rated on "
            f"its own scale; this is group {which + 1} of {len(groups)} "
            f"({_listed(names[groups[which]])}), not comparable with the others")


def infinite_cause(wins: np.ndarray, played: np.ndarray,
                   names: Sequence[object] | np.ndarray | None = None) -> str:
    """Why Bradley-Terry strengths are infinite: the groups that never met, or the models
    that never won nor drew (or never lost nor drew) against the rest."""
    n = len(wins)
    label = (lambda i: str(names[i])) if names is not None else (lambda i: f"model {i}")
    parts, groups = connected_components(played > 0, directed=False)
    if parts > 1:
        listed = "; ".join("{" + ", ".join(label(i) for i in np.flatnonzero(groups == g)) + "}"
                           for g in range(parts))
        return f"the groups {listed} never met"
    _, scc = connected_components(wins > 0, directed=True, connection="strong")
    causes = []
    for g in np.unique(scc):
        inside = scc == g
        who = ", ".join(label(i) for i in np.flatnonzero(inside))
        if not (wins[np.ix_(inside, ~inside)] > 0).any():
            causes.append(f"{who} never won nor drew against the other models")
        elif not (wins[np.ix_(~inside, inside)] > 0).any():
            causes.append(f"{who} never lost nor drew against the other models")
    return "; ".join(causes) or f"the win graph of {n} models is not strongly connected"


def first_shown_won(s: np.ndarray, order: np.ndarray) -> np.ndarray:
    """1 where the answer shown first won, 0 where the second won, NaN for a tie."""
    first = np.where(order == "ab", s, 1.0 - s)
    return np.where(s == 0.5, np.nan, first)


#: The cause of a zero-width interval when none of the tournament's own is found.
SAME_VALUE = "every question resample gives the same value"


def zero_width_cause(s: np.ndarray, clusters: np.ndarray,
                     first_won: np.ndarray | None = None) -> str:
    """Why every question resample gives the same value, most specific cause first."""
    if (s == 0.5).all():
        return f"every one of the {len(s)} matches is a tie"
    if len(np.unique(clusters)) == 1:
        return "all matches come from 1 question, which every resample draws"
    if first_won is not None:
        decided = first_won[np.isfinite(first_won)]
        if len(decided) and np.ptp(decided) == 0:
            side = "first ([[A]])" if decided[0] == 1 else "second ([[B]])"
            return (f"the judge preferred the answer shown {side} in all {len(decided)} "
                    "decided judgments (position consistency 0): each question's two orders "
                    "cancel")
    return SAME_VALUE


def interval_notes(names: np.ndarray, low: np.ndarray, high: np.ndarray, rated: np.ndarray,
                   n_bootstrap: int, questions: np.ndarray,
                   zero_cause: Callable[[], str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Empty the intervals a reader must not trust and say why, model by model.

    ``rated``: the share of resamples that rate each model; ``questions``: how many
    questions each model played on. A model rated in too few resamples (a sparse model, or
    one that almost never wins or loses) loses its own interval only; a zero-width interval
    is emptied with ``zero_cause()``.
    """
    low, high = np.array(low, float), np.array(high, float)
    notes = [""] * len(names)
    zero = np.isfinite(low) & (np.abs(high - low) < ZERO)
    cause = zero_cause() if zero.any() else ""
    for i, name in enumerate(names):
        if n_bootstrap and not np.isfinite(low[i]):
            notes[i] = (f"no interval: {name} played on {questions[i]} question(s) and has a "
                        f"finite rating in only {rated[i]:.0%} of the {n_bootstrap} question "
                        "resamples (it is absent from, or never won or never lost in, the "
                        "others); the other models keep theirs")
        elif zero[i]:
            low[i] = high[i] = np.nan
            notes[i] = f"no interval: {cause}; {ZERO_WIDTH}"
    return low, high, notes


def join_notes(*notes: str) -> str:
    """Non-empty notes joined by "; "."""
    return "; ".join(n for n in notes if n)


def rate_by_group(a: np.ndarray, b: np.ndarray, names: np.ndarray,
                  rate: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                                 pd.DataFrame]) -> pd.DataFrame:
    """``rate(keep, codes, a, b)`` on each group of models joined by matches, rows concatenated.

    ``keep``: the boolean mask of the group's matches; ``codes``: the group's model codes
    (into ``names``); ``a``, ``b``: its matches' models as positions in ``codes``. With
    several groups every row's ``note`` starts with :func:`never_met_note`. Column
    ``group`` numbers the groups (0, 1, ...), to sort the rows within their group.
    """
    groups = comparison_groups(a, b, len(names))
    parts = []
    for which, codes in enumerate(groups):
        keep = np.isin(a, codes)
        position = np.full(len(names), -1)
        position[codes] = np.arange(len(codes))
        part = rate(keep, codes, position[a[keep]], position[b[keep]])
        if len(groups) > 1:
            first = never_met_note(names, groups, which)
            part["note"] = [join_notes(first, n) for n in part["note"]]
        parts.append(part.assign(group=which))
    return pd.concat(parts, ignore_index=True)


def questions_played(a: np.ndarray, b: np.ndarray, clusters: np.ndarray,
                     n_models: int) -> np.ndarray:
    """How many distinct questions (``clusters``) each model played on."""
    pairs = np.unique(np.column_stack([np.r_[a, b], np.r_[clusters, clusters]]), axis=0)
    return np.bincount(pairs[:, 0], minlength=n_models)
