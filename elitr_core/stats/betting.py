"""Confidence intervals for the mean of bounded scores by betting (Waudby-Smith & Ramdas).

A t interval assumes the sample mean is close to normal. Ten scores of a model whose humans
give 9 to most answers and 1 to a few are not: the few low scores are often missing from the
sample, the mean comes out high and the standard deviation small, and the t interval covers
the truth 84% of the time instead of 95% (``bench/bench_ppi_coverage.py``). Scores on 1..10 are
bounded, and for bounded data an interval exists whose coverage holds at every n: bet against
each candidate mean ``m`` with the scores in turn; where the bettor's capital grows past
``1/alpha`` the mean ``m`` is rejected. The interval is the set of means not rejected.

This is the hedged capital process with predictable plug-in empirical-Bernstein bets of
Waudby-Smith & Ramdas (2024, section 4.1 and remark 3): bets from the running mean and variance
of the earlier scores, sized for ``n``; the bet against a candidate mean ``m`` truncated at
``c / m`` in the process that gains when scores exceed ``m`` and at ``c / (1 - m)`` in the one
that gains when they fall short (``c`` = :data:`TRUNCATION`), so that no step can lose more
than ``1 - c`` of the capital whatever the score; the two processes weighted 1/2; a mean is
rejected when the larger of the two exceeds ``1/alpha`` at some step (the running
intersection). A cap of 1 on every bet, as this module had before, is as valid but bets less
where ``m`` is far from the scores, so its intervals are wider: 19-40% at n = 10
(``bench/bench_estimators.py``).

The guarantee holds for scores in an order that does not depend on their values. Scores read
from the database come sorted by meeting and question, which may well track the score (a
model failing the long meetings), so :func:`betting_interval` bets on them in a random order
drawn from a fixed ``seed`` (the same scores always give the same interval); ``seed=None``
keeps the given order, for scores that arrive in time (a confidence sequence).

Hand-written because ``confseq`` compiles C++ against Boost at install, and because the
benchmark needs it on thousands of samples at once: this version is vectorised over samples
and candidate means.

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
#: ``c`` of the truncation ``c / m`` and ``c / (1 - m)`` (Waudby-Smith & Ramdas suggest 1/2 or
#: 3/4; ``confseq``'s ``trunc_scale`` default is 1/2)
TRUNCATION = 0.5
#: Seed of the random order the scores are bet in (see the module)
ORDER_SEED = 0
_CHUNK_CELLS = 4_000_000


def _bets(z: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in empirical-Bernstein bets for scores ``z`` in [0, 1] (rows are
    samples): from the regularised mean and variance of the scores before each one, not yet
    truncated (that depends on the candidate mean, :func:`_accepted`)."""
    n = z.shape[1]
    t = np.arange(1, n + 1)
    mean = (0.5 + np.cumsum(z, axis=1)) / (t + 1)
    variance = (0.25 + np.cumsum((z - mean) ** 2, axis=1)) / (t + 1)
    before = np.concatenate([np.full((len(z), 1), 0.25), variance[:, :-1]], axis=1)
    return np.sqrt(2 * np.log(1 / alpha) / (n * before))


def _accepted(z: np.ndarray, grid: np.ndarray, alpha: float, c: float | None) -> np.ndarray:
    """Samples x candidate means: True where the hedged capital never reaches 1/alpha."""
    bets = _bets(z, alpha / 2)[:, None, :]
    m = grid[None, :, None]
    step = z[:, None, :] - m
    up_cap, down_cap = (1.0, 1.0) if c is None else (c / m, c / (1 - m))
    with np.errstate(divide="ignore"):  # a cap of 1 can bet the whole capital
        up = np.cumsum(np.log1p(np.minimum(bets, up_cap) * step), axis=2)
        down = np.cumsum(np.log1p(-np.minimum(bets, down_cap) * step), axis=2)
    capital = np.maximum(up, down) + np.log(0.5)
    return (capital < np.log(1 / alpha)).all(axis=2)


def betting_interval(x: np.ndarray, low: float, high: float, confidence: float = 0.95,
                     breaks: int = BREAKS, *, seed: int | None = ORDER_SEED,
                     truncation: float | None = TRUNCATION) -> tuple[np.ndarray, np.ndarray]:
    """Betting confidence interval for the mean of scores bounded by ``low`` and ``high``.

    Parameters
    ----------
    x : numpy.ndarray
        One sample (1-D) or one sample per row (2-D, every row the same length).
    low, high : float
        The bounds every score lies within (1 and 10 for a 1..10 score).
    confidence : float
        Coverage, guaranteed at every sample size for independent draws.
    breaks : int
        Candidate means over the range; the bounds are rounded outwards to this grid.
    seed : int or None
        Each row is bet in a random order drawn from this seed (its own permutation per row),
        independent of the values as the guarantee needs; None bets in the given order (scores
        that arrive in time; the bets use only earlier scores).
    truncation : float or None
        ``c`` in (0, 1): the bets against ``m`` are truncated at ``c / m`` and ``c / (1 - m)``;
        None caps every bet at 1 instead (the rule before, kept for the benchmark's
        before/after).

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
    if truncation is not None and not 0 < truncation < 1:
        raise UserError(f"the truncation c must lie strictly between 0 and 1, not {truncation}")
    if not high > low:
        raise UserError(f"the score range must have high > low, not {low}..{high}")
    values = np.atleast_2d(np.asarray(x, float))
    if values.size and (values.min() < low or values.max() > high):
        raise UserError(f"a score lies outside {low}..{high}: the betting interval needs "
                        "the bounds every score respects")
    z = (values - low) / (high - low)
    if seed is not None and z.shape[1] > 1:
        order = np.random.default_rng(seed).random(z.shape).argsort(axis=1)
        z = np.take_along_axis(z, order, axis=1)
    grid = (np.arange(breaks - 1) + 1.0) / breaks
    rows = max(1, _CHUNK_CELLS // max(1, grid.size * z.shape[1]))
    lower, upper = np.full(len(z), np.nan), np.full(len(z), np.nan)
    for start in range(0, len(z), rows):
        ok = _accepted(z[start:start + rows], grid, 1 - confidence, truncation)
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
