"""Pairwise rankings: CREAM-style Elo and Bradley-Terry strengths from per-question matches.

A *match* opposes two models on one question, for one evaluator, within one run cell (same
meeting, question, split, setting, mode and seed): the model with the higher score wins
(S = 1), equal scores draw (S = 0.5). Matches are built with numpy (no Python loop over
responses); the Elo update is sequential by nature and runs as a tight Python loop over lists
(about 0.2 microseconds per match on one core, faster than a numpy step per match), so
``elo`` costs ``O((1 + n_bootstrap) * n_matches)``: pass ``n_bootstrap=0`` or use
:func:`bradley_terry` (order-free, ``O(n_matches)``) on very large tables.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.elo_mle import bt_counts, bt_fit  # noqa: F401 (re-exported)
from elitr_core.stats.leaderboard import response_scores
from elitr_core.stats.ratings import (  # noqa: F401 (re-exported: tests and callers)
    Matches,
    check_elo_options,
    elo_pass,
    elo_ratings,
    strengths,
)
from elitr_core.vocab import EXPORT_COLUMNS

#: A match is played between the models of one cell of this key (evaluator handled apart).
MATCH_KEY: tuple[str, ...] = ("meeting", "question_id", "split", "setting", "mode", "seed")


def _select(df: pd.DataFrame, evaluator: str | None) -> pd.DataFrame:
    """Rows of ``evaluator`` (all rows when None), raising when it has no score."""
    if evaluator is None:
        return df
    if "evaluator" not in df.columns or not (df["evaluator"] == evaluator).any():
        known = sorted(df["evaluator"].dropna().unique()) if "evaluator" in df.columns else []
        raise UserError(f"evaluator {evaluator!r} has no score here; choose one of {known}")
    return df[df["evaluator"] == evaluator]


def _pairs(group: np.ndarray, model: np.ndarray, score: np.ndarray) -> tuple[np.ndarray, ...]:
    """All within-group model pairs, in group order then model order (inputs sorted so)."""
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, len(group)])
    parts = []
    for k in np.unique(sizes[sizes >= 2]):
        first = starts[sizes == k][:, None] + np.arange(k)  # (groups of size k, k)
        i, j = np.triu_indices(k, 1)
        left, right = first[:, i].ravel(), first[:, j].ravel()
        parts.append((group[left], model[left], model[right], score[left] - score[right]))
    if not parts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty, np.empty(0)
    g, a, b, diff = (np.concatenate(p) for p in zip(*parts, strict=True))
    order = np.argsort(g, kind="stable")  # back to question order, pair order kept
    outcome = np.where(diff > 0, 1.0, np.where(diff < 0, 0.0, 0.5))
    return g[order], a[order], b[order], outcome[order]


class _Matches(NamedTuple):
    """One evaluator's matches as model codes into ``models`` (all the table's models), and
    the question cell of each match."""

    evaluator: str
    a: np.ndarray
    b: np.ndarray
    s: np.ndarray
    cell: np.ndarray


def _match_arrays(df: pd.DataFrame, evaluator: str | None) -> tuple[np.ndarray, list[_Matches]]:
    """Model names (first appearance) and every evaluator's matches, empty ones included."""
    chosen = _select(df, evaluator)
    responses = response_scores(chosen)
    key = list(MATCH_KEY)
    # question cells numbered in order of first appearance in df (per_response may reorder)
    seed_free = chosen[key].assign(seed=chosen["seed"].astype("Float64").fillna(-np.inf))
    cells = seed_free.drop_duplicates().reset_index(drop=True)
    cells["_cell"] = np.arange(len(cells))
    responses = responses.assign(seed=responses["seed"].astype("Float64").fillna(-np.inf))
    responses = responses.merge(cells, on=key, how="left")
    models = np.asarray(pd.unique(chosen["model"]))
    responses["_model"] = pd.Categorical(responses["model"], categories=models).codes
    found = []
    for name, rows in responses.groupby("evaluator", sort=False):
        rows = rows.sort_values(["_cell", "_model"])
        g, a, b, s = _pairs(rows["_cell"].to_numpy(), rows["_model"].to_numpy(np.int64),
                            rows["score"].to_numpy(dtype=float))
        found.append(_Matches(str(name), a, b, s, g))
    return models, found


def matches(df: pd.DataFrame, evaluator: str | None = None) -> pd.DataFrame:
    """Pairwise matches between models, in the order the questions appear in ``df``.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table; annotators and samples are first collapsed per response.
    evaluator : str, optional
        Keep one evaluator; by default every evaluator, each with its own matches.

    Returns
    -------
    pandas.DataFrame
        Columns ``evaluator, model_a, model_b, s`` (``s`` = 1 if ``model_a`` scored higher,
        0.5 for a tie, 0 otherwise). Within a question the pairs follow the models' order of
        first appearance in ``df``.
    """
    models, found = _match_arrays(df, evaluator)
    return pd.concat(
        [pd.DataFrame({"evaluator": m.evaluator, "model_a": models[m.a], "model_b": models[m.b],
                       "s": m.s}) for m in found],
        ignore_index=True,
    )


def _played(models: np.ndarray, m: _Matches) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Models that played in ``m`` (first-appearance order), and ``a``, ``b`` recoded to them."""
    used = np.unique(np.concatenate([m.a, m.b]))
    recode = np.full(len(models), -1)
    recode[used] = np.arange(len(used))
    return models[used], recode[m.a], recode[m.b]


def _check_matches(found: list[_Matches], evaluator: str | None) -> None:
    if not any(len(m.s) for m in found):
        which = "" if evaluator is None else f" for {evaluator}"
        raise DegenerateDataError(
            f"no question was answered by two models{which}: rankings need at least two models "
            "scored on the same questions"
        )


def elo(
    df: pd.DataFrame,
    evaluator: str | None = None,
    *,
    k: float = 32.0,
    initial: float = 1000.0,
    n_bootstrap: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    point: str = "mle",
) -> pd.DataFrame:
    """Elo ratings of the models from per-question pairwise matches (CREAM).

    ``point="mle"`` (default): the maximum-likelihood ratings, Bradley-Terry on the Elo scale
    (:mod:`elitr_core.stats.elo_mle`, as Chatbot Arena): they depend on no match order and no
    seed. The interval is the percentile interval over ``n_bootstrap`` resamples of the
    question cells (:data:`MATCH_KEY`), drawn from ``numpy.random.default_rng(seed)``.

    ``point="median"``: CREAM's sequential update, the median of the final ratings over
    ``n_bootstrap`` random permutations of the match order; ``point="order"``: one pass in
    question order (see :func:`matches`), which depends strongly on that order. For both the
    interval is the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles of the
    final ratings over the permutations (drawn from ``default_rng(seed)``): it shows how much
    the rating owes to the order (an order rating may fall outside it). The median still
    moves by several points from one seed to another; the maximum-likelihood rating does not.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).
    evaluator : str, optional
        Rate from this evaluator's scores only; by default each evaluator separately.
    k, initial : float
        Update factor K (order-based ratings) and starting rating, the mean of the
        maximum-likelihood ratings.
    n_bootstrap : int, default 200
        Number of resamples or permutations; ``0`` skips them and leaves ``ci_low``/
        ``ci_high`` empty.
    seed : int, default 0
        Seed of the resamples or permutations (evaluators are drawn in turn from one
        generator).
    confidence : float, default 0.95
        Coverage of the percentile interval.
    point : {"mle", "median", "order"}
        Which rating (above).

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["elo"]``, per evaluator sorted by rating (best first). An
        evaluator with no match (fewer than two models per question) is left out and named in
        ``result.attrs["skipped"]``. ``note`` says why an interval is empty: a sparse model
        (one with a finite rating in fewer than 90% of the resamples, e.g. one response)
        loses its own interval only; a zero-width interval (every match a draw, one
        question) is emptied with its cause. Models in groups that never met (no question
        scored a model of each) are rated per group, each group on its own scale (mean
        ``initial``), listed group after group, and every row's note says so.

    Raises
    ------
    DegenerateDataError
        When no evaluator has a match (empty table, a single model ...), or the
        maximum-likelihood ratings are infinite (the message names the models that never
        won nor drew).
    UserError
        When ``evaluator`` has no score, ``n_bootstrap < 0``, ``confidence`` not in (0, 1) or
        ``point`` unknown.

    References
    ----------
    Elo, A. (1978). The Rating of Chessplayers, Past and Present. Arco.
    Gong, Z., Ai, L., Deshpande, H., et al. (2024). CREAM: Comparison-Based Reference-Free
    ELO-Ranked Automatic Evaluation for Meeting Summarization. arXiv:2409.10883.
    Chiang, W.-L. et al. (2024). Chatbot Arena. ICML 2024 (maximum-likelihood Elo).
    """
    check_elo_options(point, n_bootstrap, confidence)
    all_models, found = _match_arrays(df, evaluator)
    _check_matches(found, evaluator)
    rng = np.random.default_rng(seed)
    rows = []
    for m in found:
        if not len(m.s):
            continue
        models, a, b = _played(all_models, m)
        table = elo_ratings(Matches(a, b, m.s, m.cell, models), point, rng, n_bootstrap,
                            confidence, k=k, initial=initial)
        rows.append(table.assign(evaluator=m.evaluator))
    out = pd.concat(rows, ignore_index=True).astype({"ci_low": "Float64", "ci_high": "Float64"})
    out = out.sort_values(["evaluator", "group", "rating"], ascending=[True, True, False],
                          kind="stable")
    out = out.reset_index(drop=True)[list(EXPORT_COLUMNS["elo"])]
    out.attrs["skipped"] = [m.evaluator for m in found if not len(m.s)]
    return out


def bradley_terry(df: pd.DataFrame, evaluator: str | None = None) -> pd.DataFrame:
    """Bradley-Terry strengths of the models from the same matches as :func:`elo`.

    ``P(i beats j) = p_i / (p_i + p_j)``; draws count as half a win to each side. The
    strength is ``log p_i`` (natural log), centred to mean zero per evaluator; unlike Elo it
    does not depend on the match order.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).
    evaluator : str, optional
        Fit this evaluator only; by default each evaluator separately.

    Returns
    -------
    pandas.DataFrame
        Columns ``model, evaluator, strength``, per evaluator best first. An evaluator with
        no match is left out and named in ``result.attrs["skipped"]``.

    Raises
    ------
    DegenerateDataError
        No match, or strengths that would be infinite (see :func:`bt_fit`).

    References
    ----------
    Bradley, R. A., Terry, M. E. (1952). Rank analysis of incomplete block designs.
    Biometrika 39, 324-345. Hunter (2004), see :func:`bt_fit`.
    """
    all_models, found = _match_arrays(df, evaluator)
    _check_matches(found, evaluator)
    parts = []
    for m in found:
        if not len(m.s):
            continue  # no question answered by two models for this evaluator
        models, a, b = _played(all_models, m)
        table = strengths(Matches(a, b, m.s, m.cell, models), 0, np.random.default_rng(0), 0.95)
        parts.append(table.assign(evaluator=m.evaluator))
    out = pd.concat(parts, ignore_index=True)
    out = out.sort_values(["evaluator", "group", "strength"], ascending=[True, True, False],
                          kind="stable")
    out = out.reset_index(drop=True)[["model", "evaluator", "strength", "note"]]
    out.attrs["skipped"] = [m.evaluator for m in found if not len(m.s)]
    return out
