"""The prediction-powered confidence sequence with a power-tuned rectifier.

A study knows the judge's score on every response of a model, so the judge's mean ``mu_J``
over them is known exactly. Each human score ``h_t`` (on a response drawn with weight
``w_t``, 1 under a uniform draw: :func:`elitr_core.stats.confseq.ipw_increments`) gives the
increment::

    x_t = lambda_t mu_J + w_t (h_t - lambda_t j_t)

whose expectation given the past is the human mean for any ``lambda_t`` chosen before
``h_t`` arrives, so the betting confidence sequence on the ``x_t``
(:func:`elitr_core.stats.confseq.betting_cs`, each increment with its own bounds) is valid
at every look (Kilian, Cortinovis & Caron 2025, anytime-valid PPI with a predictable
tuning). ``lambda = 0`` is the human mean's own sequence, ``lambda = 1`` the plain rectifier
``human - judge``. In between the variance is ``var(w h) - 2 lambda cov(w h, w j) +
lambda^2 var(w j)``, smallest at PPI++'s ``lambda = cov / var`` (Angelopoulos, Duchi & Zrnic
2023), but the increment's range widens with ``lambda`` (a human 1 on a judge 10 is
possible) and a betting sequence pays for its range: its bets are capped in proportion to
``1 / range``, so with a good judge the plain rectifier's sequence narrows no faster than its
caps allow, and with a weaker one (``human - judge`` hardly less spread than ``human``) it
stopped later than the human mean's own (``bench/bench_confseq.py``, 2026-11-27).

:func:`tuned_lambdas` picks, before each score and from the pairs before it only, the
``lambda`` of :data:`LAMBDAS` whose bettor would give the narrowest interval: the PrPl-EB
bet after :data:`HORIZON` scores at the variance estimated for that ``lambda``, capped as the
sequence caps it, and the half-width such a bet reaches. The variance estimate starts from
:data:`PRIOR_PAIRS` pseudo-pairs whose best ``lambda`` is :data:`PRIOR_LAMBDA`: a betting
sequence's first bets are its largest, so the first scores' rectifier matters most and is
chosen before any pair is seen.

References
----------
Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient prediction-powered
inference. arXiv:2311.01453 (power tuning).
Kilian, V., Cortinovis, S., & Caron, F. (2025). Anytime-valid, Bayes-assisted,
prediction-powered inference. arXiv:2505.18000.
Waudby-Smith, I., & Ramdas, A. (2023). Estimating means of bounded random variables by
betting. JRSS-B 86(1), 1-27 (PrPl-EB bets, eq. 26-27).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from elitr_core.stats.confseq import CAP, SCALED_CAP, betting_cs, covers, stopping_time

#: the rectifier weights tried before each score (0: human only; 1: human - judge)
LAMBDAS = np.linspace(0.0, 1.0, 21)
#: the number of scores at which a candidate lambda's bet and half-width are judged: the
#: order of the scores at which a study reaches a half-width of 0.5 to 0.75
HORIZON = 100
#: pseudo-pairs behind the variance estimate: this many, each with var(w h) = var(w j) =
#: PRIOR_VARIANCE (a standard deviation of 2 on the 1..10 scale) and the best lambda
#: PRIOR_LAMBDA (halfway between the human mean's sequence and the plain rectifier)
PRIOR_PAIRS, PRIOR_VARIANCE, PRIOR_LAMBDA = 10, 4.0, 0.5


@dataclass(frozen=True)
class Ranges:
    """What bounds a study's increments: the judge's known mean, the human and judge score
    scale, and the extreme inverse-probability weights (1 and 1 under a uniform draw)."""

    judge_mean: float
    score_low: float = 1.0
    score_high: float = 10.0
    weight_min: float = 1.0
    weight_max: float = 1.0


def rectifier_bounds(lam: np.ndarray, r: Ranges) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of ``lambda mu_J + w (h - lambda j)`` for ``lambda >= 0``: every human and judge
    score in the scale, every weight between the extremes."""
    lam = np.asarray(lam, float)
    least = r.score_low - lam * r.score_high
    most = r.score_high - lam * r.score_low
    low = np.minimum(r.weight_min * least, r.weight_max * least)
    high = np.maximum(r.weight_min * most, r.weight_max * most)
    return low + lam * r.judge_mean, high + lam * r.judge_mean


def _moments(human: np.ndarray, judge: np.ndarray, weight: np.ndarray
             ) -> tuple[np.ndarray, ...]:
    """Before each score: the number of earlier pairs, the means of ``a = w h`` and
    ``b = w j`` over them and their central sums of squares and products."""
    a, b = weight * human, weight * judge
    n = np.arange(a.shape[1], dtype=float)

    def before(v: np.ndarray) -> np.ndarray:
        return np.concatenate([np.zeros((len(v), 1)), np.cumsum(v, axis=1)[:, :-1]], axis=1)

    some = np.maximum(n, 1)
    mean_a, mean_b = before(a) / some, before(b) / some
    return (n, mean_a, mean_b, before(a * a) - n * mean_a ** 2,
            before(a * b) - n * mean_a * mean_b, before(b * b) - n * mean_b ** 2)


def tuned_lambdas(human: np.ndarray, judge: np.ndarray, weight: np.ndarray, r: Ranges,
                  confidence: float = 0.95) -> np.ndarray:
    """Per row and score, the ``lambda`` of :data:`LAMBDAS` chosen from the earlier pairs only.

    For each ``lambda``: ``v``, the variance of ``w (h - lambda j)`` over the earlier pairs and
    the pseudo-pairs; the PrPl-EB bet ``b = sqrt(2 log(2/alpha) / (v T log(1+T)))`` at
    ``T = max(t, HORIZON)``, capped in the scores' units as the sequence's better bettor is
    (:func:`~elitr_core.stats.confseq.diversified`: ``CAP / range`` or ``SCALED_CAP`` over the
    room between the running estimate and the bound it bets towards); and the half-width
    ``log(2/alpha) / (T b) + b v / 2`` at which such a bettor reaches ``2/alpha`` (the
    second-order expansion of ``log(1 + b (x - m))``), averaged over the two sides. The
    smallest half-width wins.
    """
    level = np.log(2 / (1 - confidence))
    n, mean_a, mean_b, s_aa, s_ab, s_bb = (m[..., None] for m in _moments(human, judge, weight))
    squares = np.maximum(s_aa - 2 * LAMBDAS * s_ab + LAMBDAS ** 2 * s_bb, 0.0)
    prior = PRIOR_PAIRS * PRIOR_VARIANCE * (1 - 2 * LAMBDAS * PRIOR_LAMBDA + LAMBDAS ** 2)
    variance = (squares + prior) / (n + PRIOR_PAIRS)
    low, high = rectifier_bounds(LAMBDAS, r)
    t = np.maximum(n + 1, HORIZON)
    bet = np.sqrt(2 * level / (variance * t * np.log1p(t)))
    estimate = np.where(n > 0, np.clip(mean_a - LAMBDAS * mean_b + LAMBDAS * r.judge_mean,
                                       r.score_low, r.score_high), (low + high) / 2)
    half = np.zeros_like(variance)
    for room in (estimate - low, high - estimate):
        b = np.minimum(bet, np.maximum(CAP / (high - low), SCALED_CAP / np.maximum(room, 1e-9)))
        half += level / (t * b) + b * variance / 2
    return LAMBDAS[np.argmin(half, axis=-1)]


def ppi_increments(human: np.ndarray, judge: np.ndarray, weight: np.ndarray, r: Ranges,
                   confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The increments ``x_t`` and each one's bounds (module doc), rows as samples."""
    human, judge, weight = (np.atleast_2d(np.asarray(v, float)) for v in (human, judge, weight))
    lam = tuned_lambdas(human, judge, weight, r, confidence)
    low, high = rectifier_bounds(lam, r)
    return lam * r.judge_mean + weight * (human - lam * judge), low, high


def ppi_cs(human: np.ndarray, judge: np.ndarray, weight: np.ndarray, r: Ranges,
           confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Confidence sequence for the human mean from human scores, the judge's scores on the
    same responses, their weights and the judge's known mean: the bounds after each score
    (one sequence per row; 1-D in, 1-D out), within the score scale.

    Examples
    --------
    >>> h = np.array([8, 9, 7, 9, 3, 8, 9, 10, 9, 7] * 3)
    >>> lo, hi = ppi_cs(h, np.clip(h + 1, 1, 10), np.ones(30), Ranges(judge_mean=8.9))
    >>> bool(lo[-1] < 7.9 < hi[-1])
    True
    """
    x, low, high = ppi_increments(human, judge, weight, r, confidence)
    lo, hi = betting_cs(x, low, high, confidence, (r.score_low, r.score_high))
    return (lo[0], hi[0]) if np.ndim(human) == 1 else (lo, hi)


def ppi_stopping_time(human: np.ndarray, judge: np.ndarray, weight: np.ndarray, r: Ranges,
                      half_width: float, confidence: float = 0.95) -> np.ndarray:
    """:func:`elitr_core.stats.confseq.stopping_time` of :func:`ppi_cs` (rows are samples)."""
    x, low, high = ppi_increments(human, judge, weight, r, confidence)
    return stopping_time(x, low, high, half_width, confidence, (r.score_low, r.score_high))


def ppi_covers(human: np.ndarray, judge: np.ndarray, weight: np.ndarray, r: Ranges,
               truth: float, confidence: float = 0.95) -> np.ndarray:
    """:func:`elitr_core.stats.confseq.covers` of :func:`ppi_cs` (rows are samples)."""
    x, low, high = ppi_increments(human, judge, weight, r, confidence)
    return covers(x, low, high, truth, confidence, (r.score_low, r.score_high))
