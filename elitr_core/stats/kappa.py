"""Quadratic weighted kappa on the 1..10 scale (Cohen 1968), and the rounding it needs."""

from __future__ import annotations

import numpy as np

from elitr_core.errors import DegenerateDataError, UserError


def round_scores(values: np.ndarray) -> np.ndarray:
    """Scores rounded half up to integers (6.5 -> 7), as the 1..10 kappa categories."""
    return np.floor(np.asarray(values, float) + 0.5).astype(int)


def quadratic_weighted_kappa(a: np.ndarray, b: np.ndarray, min_rating: int = 1,
                             max_rating: int = 10) -> float:
    """Cohen's kappa with quadratic disagreement weights on integer ratings.

    ``kappa = 1 - sum(w * O) / sum(w * E)`` with ``w_ij = (i - j)^2 / (K - 1)^2``, ``O`` the
    observed K x K table and ``E`` the outer product of the two marginals divided by n.

    References
    ----------
    Cohen, J. (1968). Weighted kappa: nominal scale agreement with provision for scaled
    disagreement or partial credit. Psychological Bulletin, 70(4), 213-220.

    Examples
    --------
    >>> round(quadratic_weighted_kappa([1, 4, 5, 5, 2, 1], [2, 2, 4, 5, 3, 3], 1, 5), 2)
    0.56
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.size == 0:
        raise DegenerateDataError("kappa needs two non-empty rating vectors of the same length")
    for values in (a, b):
        if np.any(values != np.round(values)) or values.min() < min_rating \
                or values.max() > max_rating:
            raise UserError(f"kappa ratings must be integers in {min_rating}..{max_rating}")
    k = max_rating - min_rating + 1
    observed = np.zeros((k, k))
    np.add.at(observed, (a.astype(int) - min_rating, b.astype(int) - min_rating), 1)
    expected = np.outer(observed.sum(1), observed.sum(0)) / a.size
    levels = np.arange(k)
    weights = (levels[:, None] - levels[None, :]) ** 2 / max(k - 1, 1) ** 2
    chance = float((weights * expected).sum())
    if chance == 0:
        raise DegenerateDataError("kappa is undefined: both raters give one and the same score")
    return 1.0 - float((weights * observed).sum()) / chance
