"""Bradley-Terry strengths, and Elo ratings as their maximum-likelihood fit on the Elo scale.

One pass of Elo updates depends on the order of the matches, and the median over random
orders still moves by several points from one seed to the next (enough to swap close models).
The maximum-likelihood ratings do not depend on any order or seed: they are the Bradley-Terry
strengths ``theta`` (``P(i beats j) = 1 / (1 + exp(theta_j - theta_i))``, ties half a win to
each side, mean zero) put on the Elo scale, ``rating = 1000 + 400 / ln(10) * theta``, so that
``P(i beats j) = 1 / (1 + 10 ** ((R_j - R_i) / 400))`` as in Elo's update rule. Intervals are
percentile intervals over a cluster bootstrap of questions (every match of a question moves
together); a replicate rates the models it can (:func:`replicate_strengths`: a model absent
from it, or that never wins or never loses in it, is left out of that replicate only), and a
model rated in too few replicates has no interval while the others keep theirs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.sparse.csgraph import connected_components

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.agreement import MIN_VALID_REPLICATES, cluster_weights
from elitr_core.stats.rating_groups import infinite_cause

#: Elo points per unit of natural-log Bradley-Terry strength (FastChat's SCALE / ln(BASE)).
ELO_PER_STRENGTH = 400.0 / math.log(10.0)

POINTS: tuple[str, ...] = ("mle", "median", "order")
"""Elo ratings offered: maximum likelihood (default), median over random match orders, one pass
in table order."""


def bt_counts(a: np.ndarray, b: np.ndarray, s: np.ndarray,
              n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Win matrix ``W[i, j]`` (draws count half to each side) and match counts ``N[i, j]``."""
    flat = n_models * n_models
    wins = np.bincount(a * n_models + b, weights=s, minlength=flat)
    wins += np.bincount(b * n_models + a, weights=1.0 - s, minlength=flat)
    played = np.bincount(a * n_models + b, minlength=flat).astype(float)
    wins, played = wins.reshape(n_models, n_models), played.reshape(n_models, n_models)
    return wins, played + played.T


def bt_fit(wins: np.ndarray, played: np.ndarray, *, max_iter: int = 10_000,
           tol: float = 1e-10,
           names: Sequence[object] | np.ndarray | None = None) -> np.ndarray:
    """Bradley-Terry log-strengths (mean zero) by Hunter's MM algorithm.

    Iterates ``p_i <- W_i / sum_j N_ij / (p_i + p_j)`` until the largest change of
    ``log p`` is below ``tol``. The maximum-likelihood estimate exists only when, for every
    split of the models in two, someone in each part beat (or drew with) someone in the other:
    the "won or drew against" graph must be strongly connected (Hunter 2004, Assumption 1).

    Raises
    ------
    DegenerateDataError
        When that graph is not strongly connected (the message names the models that
        never won nor drew, or the groups that never met; ``names`` label them), or the
        iteration does not converge.

    References
    ----------
    Hunter, D. R. (2004). MM algorithms for generalized Bradley-Terry models.
    Annals of Statistics 32(1), 384-406.
    """
    n_parts, _ = connected_components(wins > 0, directed=True, connection="strong")
    if n_parts > 1:
        raise DegenerateDataError(
            "Bradley-Terry strengths (and so the maximum-likelihood Elo) are infinite here: "
            f"{infinite_cause(wins, played, names)} (the win graph is not strongly "
            "connected); the order-based Elo (export elo --elo median) rates every model"
        )
    total_wins = wins.sum(axis=1)
    log_p = np.zeros(len(wins))
    for _ in range(max_iter):
        p = np.exp(log_p)
        denom = (played / (p[:, None] + p[None, :])).sum(axis=1)
        new = np.log(total_wins / denom)
        new -= new.mean()
        if np.max(np.abs(new - log_p)) < tol:
            return new
        log_p = new
    raise DegenerateDataError(f"Bradley-Terry did not converge in {max_iter} iterations")


def to_elo(strength: np.ndarray, initial: float = 1000.0) -> np.ndarray:
    """Bradley-Terry log-strengths (mean zero) on the Elo scale (mean ``initial``): the
    maximum-likelihood Elo ratings.

    References
    ----------
    Chiang, W.-L. et al. (2024). Chatbot Arena: An open platform for evaluating LLMs by human
    preference. ICML 2024 (``compute_mle_elo`` in FastChat: logistic regression, base 10,
    scale 400, initial 1000).
    """
    return initial + ELO_PER_STRENGTH * np.asarray(strength, float)


def cluster_counts(a: np.ndarray, b: np.ndarray, s: np.ndarray, clusters: np.ndarray,
                   n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cluster win and match counts, flattened: ``(G, M*M)`` each (see ``bt_counts``)."""
    n, g = n_models, int(clusters.max()) + 1
    cell = clusters * n * n
    wins = np.bincount(cell + a * n + b, weights=s, minlength=g * n * n)
    wins += np.bincount(cell + b * n + a, weights=1.0 - s, minlength=g * n * n)
    played = np.bincount(cell + a * n + b, minlength=g * n * n).astype(float)
    played += np.bincount(cell + b * n + a, minlength=g * n * n)
    return wins.reshape(g, n * n), played.reshape(g, n * n)


def fit_or_nan(wins: np.ndarray, played: np.ndarray) -> np.ndarray:
    """:func:`bt_fit`, or NaN strengths where they would be infinite."""
    try:
        return bt_fit(wins, played)
    except DegenerateDataError:
        return np.full(len(wins), np.nan)


def replicate_strengths(wins: np.ndarray, played: np.ndarray) -> np.ndarray:
    """Bradley-Terry strengths of the models one resample can rate, NaN for the others.

    The rated models are the largest strongly connected part of the "won or drew against"
    graph among the models that played in the resample: a model absent from it (a sparse
    model whose few questions were not drawn) or that only lost (or only won) in it has no
    finite strength there, and leaving it out keeps the others' strengths finite instead of
    spoiling the whole replicate.
    """
    out = np.full(len(wins), np.nan)
    idx = np.flatnonzero(played.sum(axis=1) > 0)
    if len(idx) < 2:
        return out
    n_parts, labels = connected_components(wins[np.ix_(idx, idx)] > 0, directed=True,
                                           connection="strong")
    if n_parts > 1:
        idx = idx[labels == np.argmax(np.bincount(labels))]
        if len(idx) < 2:
            return out
    out[idx] = fit_or_nan(wins[np.ix_(idx, idx)], played[np.ix_(idx, idx)])
    return out


def bootstrap_strengths(a: np.ndarray, b: np.ndarray, s: np.ndarray, clusters: np.ndarray,
                        n_models: int, weights: np.ndarray,
                        full: np.ndarray | None = None) -> np.ndarray:
    """Bradley-Terry strengths of each cluster-bootstrap replicate (rows of ``weights``:
    how often each cluster is drawn), NaN for the models a replicate cannot rate
    (:func:`replicate_strengths`). With ``full`` (the strengths on all the data), each
    replicate is shifted so that its rated models have the same mean as in ``full``: the
    strengths are centred on the models rated, and a replicate missing one model would
    otherwise move every other model's value."""
    wins, played = cluster_counts(a, b, s, clusters, n_models)
    n = n_models
    boot = np.array([replicate_strengths((w @ wins).reshape(n, n), (w @ played).reshape(n, n))
                     for w in weights])
    if full is not None:
        rated = np.isfinite(boot)
        counts = rated.sum(axis=1)
        shift = (np.where(rated, full, 0).sum(axis=1) - np.nansum(boot, axis=1))
        boot += (shift / np.maximum(counts, 1))[:, None]
    return boot


def model_intervals(boot: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Per model (columns of ``boot``): the percentile interval over the replicates that
    rate it, NaN where fewer than ``MIN_VALID_REPLICATES`` of them do, and that share."""
    rated = np.isfinite(boot).mean(axis=0)
    tail = (1 - confidence) / 2
    low, high = np.full(boot.shape[1], np.nan), np.full(boot.shape[1], np.nan)
    for i in np.flatnonzero(rated >= MIN_VALID_REPLICATES):
        finite = boot[np.isfinite(boot[:, i]), i]
        low[i], high[i] = np.quantile(finite, [tail, 1 - tail])
    return low, high, rated


def strength_interval(a: np.ndarray, b: np.ndarray, s: np.ndarray, clusters: np.ndarray,
                      full: np.ndarray, n_bootstrap: int, rng: np.random.Generator,
                      confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile interval of each model's Bradley-Terry strength over ``n_bootstrap``
    question resamples (``clusters``: codes 0..G-1), and the share of resamples rating each
    model (:func:`model_intervals`); NaN and share 1 without replicates."""
    if n_bootstrap == 0:
        empty = np.full(len(full), np.nan)
        return empty, empty, np.ones(len(full))
    weights = cluster_weights(int(clusters.max()) + 1, n_bootstrap, rng)
    boot = bootstrap_strengths(a, b, s, clusters, len(full), weights, full)
    return model_intervals(boot, confidence)
