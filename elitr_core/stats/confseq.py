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


def _check(x: np.ndarray, low: float | np.ndarray, high: float | np.ndarray,
           confidence: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Scores, and the bounds each respects, as 2-D arrays (one sample a row), after the
    checks."""
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    values = np.atleast_2d(np.asarray(x, float))
    lo = np.broadcast_to(np.atleast_2d(np.asarray(low, float)), values.shape)
    hi = np.broadcast_to(np.atleast_2d(np.asarray(high, float)), values.shape)
    if not np.all(hi > lo):
        raise UserError(f"the score range must have high > low, not {_span(low, high)}")
    if values.size and (np.isnan(values).any() or (values < lo).any() or (values > hi).any()):
        raise UserError(f"a score is missing or lies outside {_span(low, high)}: a confidence "
                        "sequence by betting needs bounds every score respects")
    return values, lo, hi


def _span(low: float | np.ndarray, high: float | np.ndarray) -> str:
    if np.ndim(low) == 0 and np.ndim(high) == 0:
        return f"{low:g}..{high:g}"
    return "its bounds"


def _prior(lo: np.ndarray, hi: np.ndarray,
           prior: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the range known to hold the mean before any score: within every score's
    bounds (the mean lies within each) and within ``prior`` if given."""
    low, high = lo.max(axis=1), hi.min(axis=1)
    if prior is not None:
        low, high = np.maximum(low, prior[0]), np.minimum(high, prior[1])
    if not np.all(high > low):
        raise UserError("the range known to hold the mean is empty: the scores' bounds "
                        "and the mean's range must overlap")
    return low, high


def prpl_bets(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, alpha: float) -> np.ndarray:
    """PrPl-EB bets (in the [0, 1] scale of each score's bounds; rows are samples), each from
    earlier scores only.

    ``lambda_t = sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(1+t)))`` with
    ``mu_t = (1/2 + sum z_i) / (t+1)`` and ``sigma2_t = (1/4 + sum (z_i - mu_i)^2) / (t+1)``,
    ``sigma2_0 = 1/4`` (Waudby-Smith & Ramdas 2023, eq. 26-27), before the truncation
    the caps of :func:`diversified` apply for each candidate mean. With bounds that change
    over time (known before each score: :mod:`elitr_core.stats.ppi_cs`), the sums are kept in
    the scores' own units and read in the scale of the bounds at ``t`` (the prior mean is the
    first bounds' midpoint); with fixed bounds this is the paper's formula exactly.
    """
    t = np.arange(1, x.shape[1] + 1)
    span = hi - lo
    mean = ((lo[:, :1] + hi[:, :1]) / 2 + np.cumsum(x, axis=1)) / (t + 1)
    squares = np.cumsum((x - mean) ** 2, axis=1)
    before = np.concatenate([np.zeros((len(x), 1)), squares[:, :-1]], axis=1)
    variance = (0.25 + before / span ** 2) / t
    return np.sqrt(2 * np.log(2 / alpha) / (variance * t * np.log1p(t)))


def _log_growth(bets: np.ndarray, z: np.ndarray, m: np.ndarray) -> tuple[np.ndarray,
                                                                         np.ndarray]:
    """Per score, ``log(1 + lambda (z - m))`` of the two bettors of :func:`diversified`
    (``z`` and ``m`` in the [0, 1] scale of the score's bounds)."""
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


def _scaled(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: np.ndarray,
            side: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores and candidate means in the [0, 1] scale of each score's bounds, turned round
    for ``side=-1`` (``K-`` of ``x`` is ``K+`` of ``1 - z`` at ``1 - m``)."""
    span = hi - lo
    z, mz = (x - lo) / span, (m - lo) / span
    return (z, mz) if side > 0 else (1 - z, 1 - mz)


def _log_capital(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bets: np.ndarray,
                 m: np.ndarray, side: int) -> np.ndarray:
    """``log K+_t(m)`` (``side=+1``) or ``log K-_t(m)`` for every sample (rows) and time t,
    one candidate ``m`` per (row, t)."""
    n = x.shape[1]
    mask = np.tril(np.ones((n, n), bool))  # [t, i]: score i counts at time t
    z, mz = _scaled(x[:, None, :], lo[:, None, :], hi[:, None, :], m[:, :, None], side)
    fixed, scaled = _log_growth(bets[:, None, :], z, mz)
    return diversified(np.where(mask, fixed, 0.0).sum(axis=2),
                       np.where(mask, scaled, 0.0).sum(axis=2))


def _roots(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bets: np.ndarray,
           known: tuple[np.ndarray, np.ndarray], level: float, side: int) -> np.ndarray:
    """Per sample and time t: the lower (``side=+1``) or upper bound: where the rejected
    means ``log K+_t(m) >= level`` end (``log K+_t`` is decreasing in ``m``, each factor is,
    truncated bets included; ``log K-_t`` increasing). Bisection within the range ``known``
    to hold the mean keeps ``near`` rejected and ``far`` kept; the bound returned is
    ``near``, at most ``TOLERANCE`` (of that range) outside the exact one."""
    start, end = (known[0], known[1]) if side > 0 else (known[1], known[0])
    near = np.broadcast_to(start[:, None], x.shape).copy()
    far = np.broadcast_to(end[:, None], x.shape).copy()
    kept_at_start = _log_capital(x, lo, hi, bets, near, side) < level
    scale = (known[1] - known[0]).max()
    while np.abs(far - near).max() > TOLERANCE * scale:
        mid = (near + far) / 2
        rejected = _log_capital(x, lo, hi, bets, mid, side) >= level
        near, far = np.where(rejected, mid, near), np.where(rejected, far, mid)
    return np.where(kept_at_start, start[:, None], near)


def betting_cs(x: np.ndarray, low: float | np.ndarray, high: float | np.ndarray,
               confidence: float = 0.95, prior: tuple[float, float] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Betting confidence sequence for the mean of scores bounded by ``low`` and ``high``.

    Parameters
    ----------
    x : numpy.ndarray
        Scores in the order they arrived: one sequence (1-D) or one per row (2-D).
    low, high : float or numpy.ndarray
        Bounds every score respects (1 and 10 for a 1..10 score; -9 and 9 for human - judge),
        or one pair per score (broadcast like ``x``), each known before that score arrived
        (the power-tuned rectifier of :mod:`elitr_core.stats.ppi_cs`).
    confidence : float
        ``1 - alpha``: the probability that the truth lies in every interval of the sequence.
    prior : tuple of float, optional
        A range known to hold the mean before any score (default: the bounds); the
        sequence never leaves it.

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
    values, lo_all, hi_all = _check(x, low, high, confidence)
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    lower, upper = np.zeros_like(values), np.zeros_like(values)
    rows = max(1, _CELLS // max(1, values.shape[1] ** 2))
    for start in range(0, len(values), rows):
        part = slice(start, start + rows)
        v, lo, hi = values[part], lo_all[part], hi_all[part]
        known = _prior(lo, hi, prior)
        bets = prpl_bets(v, lo, hi, alpha)
        lower[part] = _roots(v, lo, hi, bets, known, level, +1)
        upper[part] = _roots(v, lo, hi, bets, known, level, -1)
    lower = np.maximum.accumulate(lower, axis=1)
    upper = np.minimum.accumulate(upper, axis=1)
    if np.asarray(x).ndim == 1:
        return lower[0], upper[0]
    return lower, upper


def _first_reached(log_capital: np.ndarray, level: float) -> np.ndarray:
    """Per row: the number of scores after which the capital first reached the level (inf
    when it never did)."""
    reached = log_capital >= level
    return np.where(reached.any(axis=1), reached.argmax(axis=1) + 1.0, np.inf)


def rejection_times(x: np.ndarray, lo: np.ndarray, hi: np.ndarray, bets: np.ndarray,
                    m: np.ndarray, known: tuple[np.ndarray, np.ndarray], level: float,
                    side: int) -> np.ndarray:
    """When each sample's sequence first excludes ``m`` (one candidate per row): from below
    (``side=+1``, the lower bound passes ``m``) or above (``side=-1``); inf if never.
    A bound never passes the end of the ``known`` range it starts from (times inf) and
    starts past the other end (time 0)."""
    m = np.asarray(m, float)
    inside = np.clip(m, *known)[:, None]
    z, mz = _scaled(x, lo, hi, inside, side)
    fixed, scaled = _log_growth(bets, z, mz)
    with np.errstate(invalid="ignore"):
        capital = diversified(np.cumsum(fixed, axis=1), np.cumsum(scaled, axis=1))
    times = _first_reached(capital, level)
    if side > 0:
        return np.where(m <= known[0], 0.0, np.where(m >= known[1], np.inf, times))
    return np.where(m >= known[1], 0.0, np.where(m <= known[0], np.inf, times))


def stopping_time(x: np.ndarray, low: float | np.ndarray, high: float | np.ndarray,
                  half_width: float, confidence: float = 0.95,
                  prior: tuple[float, float] | None = None) -> np.ndarray:
    """Per sample: the number of scores after which :func:`betting_cs` is first no wider than
    ``2 * half_width`` (inf if never within ``x``).

    The lower bound after ``t`` scores is at least ``a`` exactly when ``a`` was excluded from
    below by then, at time ``tau+(a)``, nondecreasing in ``a``; the upper bound is at most
    ``b`` when ``tau-(b) <= t``, nonincreasing in ``b``. The first ``t`` with
    ``upper - lower <= 2w`` is ``min_a max(tau+(a), tau-(a + 2w))``, found by bisection on
    the crossing of the two: ``O(T log(1/tol))`` per sample instead of :func:`betting_cs`'s
    ``O(T^2)``. ``prior``: :func:`betting_cs`.
    """
    values, lo, hi = _check(x, low, high, confidence)
    if not half_width > 0:
        raise UserError(f"the target half-width must be positive, not {half_width}")
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    width = 2 * half_width
    known = _prior(lo, hi, prior)
    bets = prpl_bets(values, lo, hi, alpha)

    def tau(m: np.ndarray, side: int) -> np.ndarray:
        return rejection_times(values, lo, hi, bets, m, known, level, side)

    a_lo, a_hi = known[0] - width, known[1].copy()
    # invariant: tau+(a_lo) < tau-(a_lo + w) and tau+(a_hi) >= tau-(a_hi + w)
    for _ in range(42):
        mid = (a_lo + a_hi) / 2
        crossed = tau(mid, +1) >= tau(mid + width, -1)
        a_hi, a_lo = np.where(crossed, mid, a_hi), np.where(crossed, a_lo, mid)
    out = np.minimum(np.maximum(tau(a_lo, +1), tau(a_lo + width, -1)),
                     np.maximum(tau(a_hi, +1), tau(a_hi + width, -1)))
    return out if np.asarray(x).ndim > 1 else out[:1]


def covers(x: np.ndarray, low: float | np.ndarray, high: float | np.ndarray, truth: float,
           confidence: float = 0.95, prior: tuple[float, float] | None = None) -> np.ndarray:
    """Per sample: whether :func:`betting_cs` holds ``truth`` after every score (the
    time-uniform coverage event), from the capital at the truth alone: ``O(T)``.
    ``prior``: :func:`betting_cs`."""
    values, lo, hi = _check(x, low, high, confidence)
    alpha = 1 - confidence
    level = np.log(2 / alpha)
    known = _prior(lo, hi, prior)
    bets = prpl_bets(values, lo, hi, alpha)
    m = np.full(len(values), float(truth))
    return ~(np.isfinite(rejection_times(values, lo, hi, bets, m, known, level, +1))
             | np.isfinite(rejection_times(values, lo, hi, bets, m, known, level, -1)))


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
