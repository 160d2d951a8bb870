"""Confidence intervals for the mean of bounded scores by betting (Waudby-Smith & Ramdas).

A t interval assumes the sample mean is close to normal. Ten scores of a model whose humans
give 9 to most answers and 1 to a few are not: the few low scores are often missing from the
sample, the mean comes out high and the standard deviation small, and the t interval covers
the truth 84% of the time instead of 95% (``bench/bench_ppi_coverage.py``). Scores on 1..10 are
bounded, and for bounded data an interval exists whose coverage holds at every n: bet against
each candidate mean ``m`` with the scores in turn; where the bettor's capital grows past
``1/alpha`` the mean ``m`` is rejected. The interval is the set of means not rejected.

This is the hedged capital process with predictable plug-in empirical-Bernstein bets of
Waudby-Smith & Ramdas (2024), as the ``confseq`` package's ``betting_ci`` computes it (bets
from the running mean and variance of the earlier scores, sized for ``n``, capped at 1; the
positive and negative processes weighted 1/2; a mean is rejected when the larger of the two
exceeds ``1/alpha`` at some step, the running intersection). Hand-written because ``confseq``
compiles C++ against Boost at install, and because the benchmark needs it on thousands of
samples at once: this version is vectorised over samples and candidate means.

References
----------
Waudby-Smith, I., & Ramdas, A. (2024). Estimating means of bounded random variables by betting.
Journal of the Royal Statistical Society Series B, 86(1), 1-27.
"""

from __future__ import annotations

import numpy as np

from elitr_core.errors import UserError

#: Candidate means per unit of the score range (the interval is widened by one step each side)
BREAKS = 400
_CHUNK_CELLS = 4_000_000


def _bets(z: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in empirical-Bernstein bets for scores ``z`` in [0, 1] (rows are
    samples): from the regularised mean and variance of the scores before each one."""
    n = z.shape[1]
    t = np.arange(1, n + 1)
    mean = (0.5 + np.cumsum(z, axis=1)) / (t + 1)
    variance = (0.25 + np.cumsum((z - mean) ** 2, axis=1)) / (t + 1)
    before = np.concatenate([np.full((len(z), 1), 0.25), variance[:, :-1]], axis=1)
    return np.minimum(np.sqrt(2 * np.log(1 / alpha) / (n * before)), 1.0)


def _accepted(z: np.ndarray, grid: np.ndarray, alpha: float) -> np.ndarray:
    """Samples x candidate means: True where the hedged capital never reaches 1/alpha."""
    bets = _bets(z, alpha / 2)[:, None, :]
    step = z[:, None, :] - grid[None, :, None]
    with np.errstate(divide="ignore"):
        up = np.cumsum(np.log1p(bets * step), axis=2)
        down = np.cumsum(np.log1p(-bets * step), axis=2)
    capital = np.maximum(up, down) + np.log(0.5)
    return (capital < np.log(1 / alpha)).all(axis=2)


def betting_interval(x: np.ndarray, low: float, high: float, confidence: float = 0.95,
                     breaks: int = BREAKS) -> tuple[np.ndarray, np.ndarray]:
    """Betting confidence interval for the mean of scores bounded by ``low`` and ``high``.

    Parameters
    ----------
    x : numpy.ndarray
        One sample (1-D) or one sample per row (2-D, every row the same length), in the order
        the scores were drawn (the bets use only earlier scores; do not sort them).
    low, high : float
        The bounds every score lies within (1 and 10 for a 1..10 score).
    confidence : float
        Coverage, guaranteed at every sample size for independent draws.
    breaks : int
        Candidate means over the range; the bounds are rounded outwards to this grid.

    Returns
    -------
    tuple of numpy.ndarray
        Lower and upper bounds (scalars as 0-d arrays for a 1-D ``x``).

    Examples
    --------
    >>> lo, hi = betting_interval(np.array([9, 9, 1, 9, 8, 9, 9, 10, 9, 7]), 1, 10)
    >>> bool(lo < 8.0 < hi)
    True
    """
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    if not high > low:
        raise UserError(f"the score range must have high > low, not {low}..{high}")
    values = np.atleast_2d(np.asarray(x, float))
    if values.size and (values.min() < low or values.max() > high):
        raise UserError(f"a score lies outside {low}..{high}: the betting interval needs "
                        "the bounds every score respects")
    z = (values - low) / (high - low)
    grid = (np.arange(breaks - 1) + 1.0) / breaks
    rows = max(1, _CHUNK_CELLS // max(1, grid.size * z.shape[1]))
    lower, upper = np.full(len(z), np.nan), np.full(len(z), np.nan)
    for start in range(0, len(z), rows):
        ok = _accepted(z[start:start + rows], grid, 1 - confidence)
        any_ok = ok.any(axis=1)
        first = np.where(any_ok, ok.argmax(axis=1), 0)
        last = np.where(any_ok, grid.size - 1 - ok[:, ::-1].argmax(axis=1), 0)
        # one grid step outwards: the true bound lies between the last rejected and first kept
        lo = np.maximum(grid[first] - 1 / breaks, 0.0)
        hi = np.minimum(grid[last] + 1 / breaks, 1.0)
        lower[start:start + rows] = np.where(any_ok, lo, np.nan)
        upper[start:start + rows] = np.where(any_ok, hi, np.nan)
    lower, upper = low + lower * (high - low), low + upper * (high - low)
    if np.asarray(x).ndim == 1:
        return lower[0], upper[0]
    return lower, upper
