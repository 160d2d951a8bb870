"""Confidence sequences: intervals that stay valid however often a researcher looks.

A fixed-n interval (t, PPI, the betting interval of :mod:`elitr_core.stats.betting`) covers
the truth 95% of the time if the sample size was chosen in advance and the data looked at
once. A study's page refreshes as scores arrive; stopping when the interval first looks
narrow enough makes a fixed-n interval miss far more often (``bench/bench_confseq.py``). A
confidence sequence is a sequence of intervals ``C_1, C_2, ...`` with
``P(truth in C_t for every t) >= 1 - alpha``: it may be watched after every score and the
study stopped at any time, by any rule, and the interval printed at the stop is valid.

Betting (Waudby-Smith & Ramdas 2023, section 4): scores rescaled to [0, 1]; for each candidate
mean ``m`` a bettor stakes a fraction ``lambda_t`` of their capital on each score being above
``m`` (``K+``) and another on it being below (``K-``)::

    K+_t(m) = prod_{i <= t} (1 + lambda_i (x_i - m))
    K-_t(m) = prod_{i <= t} (1 - lambda_i (x_i - m))

Under the truth both are nonnegative martingales, so by Ville's inequality the hedged capital
``max(K+/2, K-/2)`` reaches ``1/alpha`` with probability at most ``alpha`` ever. The sequence is
the set of ``m`` not yet rejected (the running intersection). The bets are the predictable
plug-in empirical-Bernstein ones (PrPl-EB, their eq. 26-27): from the mean and variance of
the scores before, shrinking as ``1/sqrt(t log(1+t))``; the capital is split between a bettor
whose bets are capped at ``CAP`` and one whose bets are capped at ``SCALED_CAP / m`` (and
``/ (1 - m)`` for ``K-``: :func:`diversified`). ``log K+_t`` is decreasing in ``m`` and
``log K-_t`` increasing: the sequence is an interval at every ``t`` whose bounds are roots,
found here by bisection (:func:`betting_cs`). The time at which
a candidate mean is first rejected is monotone in the candidate too, which gives the first
time the interval is narrower than a target without computing it at every step
(:func:`stopping_time`).

Under a study's own item selection (uniform or active, each response drawn with a stored
probability ``pi``) the scores are inverse-probability weighted (:func:`ipw_increments`): a
response drawn with probability ``q_i = pi_i / sum(pi)`` contributes ``y_i / (N q_i)``, whose
expectation is the population mean (Hansen & Hurwitz 1943), bounded by the extreme weights.
The prediction-powered mean is the judge's mean over every response (known exactly: the judge
scored them all) plus a sequence for the rectifier ``human - judge`` on [-9, 9] (Kilian,
Cortinovis & Caron 2025, anytime-valid PPI with a known unlabelled mean), so it narrows as
fast as the judge's errors are small. The asymptotic sequence of Waudby-Smith et al. (2021)
(:func:`asymptotic_cs`) is the alternative their paper builds on: valid only as ``t`` grows,
narrower early, no bounds needed.

References
----------
Waudby-Smith, I., & Ramdas, A. (2023). Estimating means of bounded random variables by betting.
Journal of the Royal Statistical Society Series B, 86(1), 1-27 (hedged capital, PrPl-EB bets).
Waudby-Smith, I., Arnold, D., Wu, J. J., Howard, S. R., & Ramdas, A. (2021). Time-uniform
central limit theory and asymptotic confidence sequences. arXiv:2103.06476 (Theorem 2.2).
Kilian, V., Cortinovis, S., & Caron, F. (2025). Anytime-valid, Bayes-assisted,
prediction-powered inference. arXiv:2505.18000.
Hansen, M. H., & Hurwitz, W. N. (1943). On the theory of sampling from finite populations.
Annals of Mathematical Statistics 14(4), 333-362.
"""

from __future__ import annotations

import numpy as np

from elitr_core.errors import UserError

#: the bets' truncations (Waudby-Smith & Ramdas suggest 1/2 or 3/4): one bettor's bets are
#: capped at CAP, the other's against a mean m at SCALED_CAP / m (:func:`diversified`)
CAP = 0.5
SCALED_CAP = 0.75
#: bisection stops when every bound is known to this (in the [0, 1] scale)
TOLERANCE = 1e-10
_CELLS = 4_000_000


def _check(x: np.ndarray, low: float, high: float, confidence: float) -> np.ndarray:
    """Scores rescaled to [0, 1] as a 2-D array (one sample a row), after the checks."""
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    if not high > low:
        raise UserError(f"the score range must have high > low, not {low}..{high}")
    values = np.atleast_2d(np.asarray(x, float))
    if values.size and (np.isnan(values).any() or values.min() < low or values.max() > high):
        raise UserError(f"a score is missing or lies outside {low}..{high}: a confidence "
                        "sequence by betting needs bounds every score respects")
    return (values - low) / (high - low)


def prpl_bets(z: np.ndarray, alpha: float) -> np.ndarray:
    """PrPl-EB bets for scores ``z`` in [0, 1] (rows are samples), each from earlier scores only.

    ``lambda_t = sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1+t)))`` with
    ``mu_t = (1/2 + sum x_i) / (t+1)`` and ``sigma2_t = (1/4 + sum (x_i - mu_i)^2) / (t+1)``,
    ``sigma2_0 = 1/4`` (Waudby-Smith & Ramdas 2023, eq. 26-27), before the truncation
    the caps of :func:`diversified` apply for each candidate mean.
    """
    t = np.arange(1, z.shape[1] + 1)
    mean = (0.5 + np.cumsum(z, axis=1)) / (t + 1)
    variance = (0.25 + np.cumsum((z - mean) ** 2, axis=1)) / (t + 1)
    before = np.concatenate([np.full((len(z), 1), 0.25), variance[:, :-1]], axis=1)
    return np.sqrt(2 * np.log(2 / alpha) / (before * t * np.log1p(t)))


def _log_growth(bets: np.ndarray, z: np.ndarray, m: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """Per score, ``log(1 + lambda (z - m))`` of the two bettors of :func:`diversified`."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fixed = np.log1p(np.minimum(bets, CAP) * (z - m))
        scaled = np.log1p(np.minimum(bets, SCALED_CAP / m) * (z - m))
    return fixed, scaled


def diversified(fixed: np.ndarray, scaled: np.ndarray) -> np.ndarray:
    """``log K+`` of the capital split evenly between two bettors on the same scores: one whose
    bets are capped at ``CAP``, one whose bets against ``m`` are capped at ``SCALED_CAP / m``
    (the largest that keeps ``1 + lambda (x - m)`` positive with room to spare; Waudby-Smith
    & Ramdas 2023, section 4.2). The average of two nonnegative martingales is one (their
    diversified Kelly betting, dKelly, averages bettors likewise). The fixed cap is the better
    bettor for scores spread over their range (a human mean of 1s and 10s); the scaled one for
    scores that use a small part of it (human - judge on -9..9 with a good judge), whose sequence
    otherwise narrows no faster than the cap allows. Arguments: cumulative log growths."""
    return np.logaddexp(fixed, scaled) - np.log(2)


def _log_capital(z: np.ndarray, bets: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``log K+_t(m)`` for every sample (rows) and time t, one candidate ``m`` per (row, t)."""
    n = z.shape[1]
    mask = np.tril(np.ones((n, n), bool))  # [t, i]: score i counts at time t
    fixed, scaled = _log_growth(bets[:, None, :], z[:, None, :], m[:, :, None])
    return diversified(np.where(mask, fixed, 0.0).sum(axis=2),
                       np.where(mask, scaled, 0.0).sum(axis=2))


def _lower_roots(z: np.ndarray, bets: np.ndarray, level: float) -> np.ndarray:
    """Per sample and time t: where ``log K+_t(m) >= level`` ends (0 if m = 0 is kept).

    ``log K+_t`` is decreasing in ``m`` (each factor is, truncated bets included), so the
    rejected means form ``[0, root]``: bisection keeps ``lo`` rejected and ``hi`` kept, and the
    bound returned is ``lo``, at most ``TOLERANCE`` outside the exact one.
    """
    lo, hi = np.zeros(z.shape), np.ones(z.shape)
    kept_at_zero = _log_capital(z, bets, lo) < level
    while (hi - lo).max() > TOLERANCE:
        mid = (lo + hi) / 2
        rejected = _log_capital(z, bets, mid) >= level
        lo, hi = np.where(rejected, mid, lo), np.where(rejected, hi, mid)
    return np.where(kept_at_zero, 0.0, lo)


def betting_cs(x: np.ndarray, low: float, high: float,
               confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Betting confidence sequence for the mean of scores bounded by ``low`` and ``high``.

    Parameters
    ----------
    x : numpy.ndarray
        Scores in the order they arrived: one sequence (1-D) or one per row (2-D).
    low, high : float
        Bounds every score respects (1 and 10 for a 1..10 score; -9 and 9 for human - judge).
    confidence : float
        ``1 - alpha``: the probability that the truth lies in every interval of the sequence.

    Returns
    -------
    tuple of numpy.ndarray
        Lower and upper bounds after each score (the running intersection), same shape as
        ``x``; cost grows with the square of its length (use :func:`stopping_time` and
        :func:`covers` for long simulations).

    References
    ----------
    Waudby-Smith & Ramdas (2023), Theorem 3 and eq. 26-27.

    Examples
    --------
    >>> lo, hi = betting_cs(np.array([9, 9, 1, 9, 8, 9, 9, 10, 9, 7]), 1, 10)
    >>> bool(lo[-1] < 8.0 < hi[-1]) and bool((np.diff(hi - lo) <= 0).all())
    True
    """
    z = _check(x, low, high, confidence)
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    lower, upper = np.zeros_like(z), np.ones_like(z)
    rows = max(1, _CELLS // max(1, z.shape[1] ** 2))
    for start in range(0, len(z), rows):
        part = z[start:start + rows]
        bets = prpl_bets(part, alpha)
        lower[start:start + rows] = _lower_roots(part, bets, level)
        upper[start:start + rows] = 1 - _lower_roots(1 - part, bets, level)
    lower = low + np.maximum.accumulate(lower, axis=1) * (high - low)
    upper = low + np.minimum.accumulate(upper, axis=1) * (high - low)
    if np.asarray(x).ndim == 1:
        return lower[0], upper[0]
    return lower, upper


def _first_reached(log_capital: np.ndarray, level: float) -> np.ndarray:
    """Per row: the number of scores after which the capital first reached the level (inf
    when it never did)."""
    reached = log_capital >= level
    return np.where(reached.any(axis=1), reached.argmax(axis=1) + 1.0, np.inf)


def rejection_times(z: np.ndarray, bets: np.ndarray, m: np.ndarray, level: float,
                    side: int) -> np.ndarray:
    """When each sample's sequence first excludes ``m`` (one candidate per row): from below
    (``side=+1``, the lower bound passes ``m``) or above (``side=-1``); inf if never.
    A bound never passes the end of [0, 1] it starts from (times inf) and starts past the
    other end (time 0)."""
    m = np.asarray(m, float)[:, None]
    # K- of x is K+ of 1 - x at 1 - m
    fixed, scaled = _log_growth(bets, z, m) if side > 0 else _log_growth(bets, 1 - z, 1 - m)
    with np.errstate(invalid="ignore"):  # m outside (0, 1): NaN, replaced below
        capital = diversified(np.cumsum(fixed, axis=1), np.cumsum(scaled, axis=1))
    m = m[:, 0]
    times = _first_reached(capital, level)
    if side > 0:
        return np.where(m <= 0, 0.0, np.where(m >= 1, np.inf, times))
    return np.where(m >= 1, 0.0, np.where(m <= 0, np.inf, times))


def stopping_time(x: np.ndarray, low: float, high: float, half_width: float,
                  confidence: float = 0.95) -> np.ndarray:
    """Per sample: the number of scores after which :func:`betting_cs` is first no wider than
    ``2 * half_width`` (inf if never within ``x``).

    The lower bound after ``t`` scores is at least ``a`` exactly when ``a`` was excluded from
    below by then, at time ``tau+(a)``, nondecreasing in ``a``; the upper bound is at most
    ``b`` when ``tau-(b) <= t``, nonincreasing in ``b``. The first ``t`` with
    ``upper - lower <= 2w`` is ``min_a max(tau+(a), tau-(a + 2w))``, found by bisection on
    the crossing of the two: ``O(T log(1/tol))`` per sample instead of :func:`betting_cs`'s
    ``O(T^2)``.
    """
    z = _check(x, low, high, confidence)
    if not half_width > 0:
        raise UserError(f"the target half-width must be positive, not {half_width}")
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    width = 2 * half_width / (high - low)
    bets = prpl_bets(z, alpha)
    a_lo, a_hi = np.full(len(z), -width), np.full(len(z), 1.0)
    # invariant: tau+(a_lo) < tau-(a_lo + w) and tau+(a_hi) >= tau-(a_hi + w)
    for _ in range(42):
        mid = (a_lo + a_hi) / 2
        up = rejection_times(z, bets, mid, level, +1)
        down = rejection_times(z, bets, mid + width, level, -1)
        crossed = up >= down
        a_hi, a_lo = np.where(crossed, mid, a_hi), np.where(crossed, a_lo, mid)
    left = rejection_times(z, bets, a_lo + width, level, -1)
    right = rejection_times(z, bets, a_hi, level, +1)
    out = np.minimum(np.maximum(rejection_times(z, bets, a_lo, level, +1), left),
                     np.maximum(right, rejection_times(z, bets, a_hi + width, level, -1)))
    return out if np.asarray(x).ndim > 1 else out[:1]


def covers(x: np.ndarray, low: float, high: float, truth: float,
           confidence: float = 0.95) -> np.ndarray:
    """Per sample: whether :func:`betting_cs` holds ``truth`` after every score (the
    time-uniform coverage event), from the capital at the truth alone: ``O(T)``."""
    z = _check(x, low, high, confidence)
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    bets = prpl_bets(z, alpha)
    m = np.full(len(z), (truth - low) / (high - low))
    return ~(np.isfinite(rejection_times(z, bets, m, level, +1))
             | np.isfinite(rejection_times(z, bets, m, level, -1)))


def asymptotic_cs(x: np.ndarray, confidence: float = 0.95,
                  optimal_at: float = 100.0) -> tuple[np.ndarray, np.ndarray]:
    """Asymptotic confidence sequence (Waudby-Smith et al. 2021, Theorem 2.2, two-sided):
    ``mean_t +- sd_t sqrt(2 (t rho^2 + 1) / (t^2 rho^2) log(sqrt(t rho^2 + 1) / alpha))``.

    ``rho`` makes it narrowest near ``optimal_at`` scores (their eq. for ``rho``); ``sd_t`` the
    standard deviation of the scores so far (``ddof=0``). Valid as ``t`` grows, for any
    distribution with a finite variance, bounds not needed; NaN before two scores. No
    running intersection (their definition).
    """
    alpha = 1 - confidence
    values = np.atleast_2d(np.asarray(x, float))
    t = np.arange(1, values.shape[1] + 1)
    mean = np.cumsum(values, axis=1) / t
    sd = np.sqrt(np.maximum(np.cumsum(values ** 2, axis=1) / t - mean ** 2, 0.0))
    rho2 = (-2 * np.log(alpha) + np.log(-2 * np.log(alpha) + 1)) / optimal_at
    half = sd * np.sqrt(2 * (t * rho2 + 1) / (t ** 2 * rho2)
                        * np.log(np.sqrt(t * rho2 + 1) / alpha))
    half = np.where(t >= 2, half, np.nan)
    lower, upper = mean - half, mean + half
    if np.asarray(x).ndim == 1:
        return lower[0], upper[0]
    return lower, upper


def ipw_increments(values: np.ndarray, probability: np.ndarray, probability_sum: float,
                   population: int) -> np.ndarray:
    """Inverse-probability-weighted increments ``y_i * sum(pi) / (N pi_i)`` of responses drawn
    with probability proportional to ``pi`` (Hansen & Hurwitz 1943): their expectation is the
    mean of ``y`` over the ``N`` responses; 1 weight everywhere for a uniform draw."""
    pi = np.asarray(probability, float)
    if np.any(~(pi > 0)) or np.any(pi > 1):
        raise UserError("a selection probability lies outside (0, 1]: check the study's "
                        "stored probabilities")
    return np.asarray(values, float) * probability_sum / (population * pi)


def ipw_bounds(low: float, high: float, probability_min: float, probability_max: float,
               probability_sum: float, population: int) -> tuple[float, float]:
    """Bounds of :func:`ipw_increments` when every score lies in ``low..high`` and every
    probability in ``probability_min..probability_max``."""
    weights = (probability_sum / (population * probability_max),
               probability_sum / (population * probability_min))
    ends = [low * w for w in weights] + [high * w for w in weights]
    return min(ends), max(ends)
