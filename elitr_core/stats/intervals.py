"""Confidence intervals of the human-corrected means (PPI, PPI++, the active estimator):
Student t quantiles with Welch-Satterthwaite degrees of freedom, or the normal quantile, their
limits cut to the scale, and the small-sample notes every export carries and the pages show
(see :mod:`elitr_core.stats.ppi`, ``bench/bench_ppi_coverage.py`` and
``bench/bench_estimators.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from elitr_core.errors import UserError
from elitr_core.stats.pairs import z_quantile
from elitr_core.vocab import SCORE_MAX, SCORE_MIN

#: Fewest human scores per model from which ``bench/bench_ppi_coverage.py`` (4,000 replicates
#: per cell, bench/results/ppi-coverage-2026-11-25.md) found the t intervals of human-only, PPI
#: and the active estimator covering at least 0.94 on every distribution it tried that is not
#: piled up at one end of the scale (at 10: down to 0.909).
COVERAGE_CHECKED_FROM = 30
#: The same for PPI++ (at 30: 0.935 and 0.938 on two bundled models), and for human-only, PPI
#: and the active estimator on samples piled up at one end (at 30: down to 0.921; PPI++ 0.912,
#: and at 100 still 0.927)
WIDER_CHECK_FROM = 100
#: |sample skewness| from which a sample of fewer than :data:`WIDER_CHECK_FROM` human scores
#: gets a note. ``bench/bench_estimators.py --part betting`` (bench/results/estimators-
#: 2026-11-27.md) drew samples from the bundled human scores and synthetic populations: on
#: those skewed by 1.27 or more (GPT-4's gold and silver human scores, a model humans mostly
#: like, a pile at 9) the t interval of the mean covered 0.81-0.91 with 10 scores and
#: 0.91-0.94 with 30, and the note fired on 50-83% and 74-99% of their samples; on the others
#: (|skewness| <= 0.32) t covered 0.94-0.96 and the note fired on at most 22% of the samples at
#: 10 and 7% at 30. At 100 the t interval covered 0.93-0.96 everywhere, so no note; the old
#: rule (half the scores at 1-2 or 9-10) missed silver-human GPT-4 (1% of samples at 30) and
#: fired on 91-100% of the samples at 100.
SKEW_LIMIT = 1.0
SKEW_MARK = "skewed"
#: The t intervals' worst coverage on the skewed populations (``bench/bench_estimators.py``)
SKEWED_COVERAGE = {10: 0.81, 30: 0.91}

INTERVALS: tuple[str, ...] = ("t", "normal")
"""Interval kinds: small-sample Student t (default) or ``ppi_py``'s normal (CLT) one."""


@dataclass(frozen=True)
class Estimate:
    """A point estimate, its standard error, confidence interval and degrees of freedom
    (``inf`` for a normal interval)."""

    mean: float
    se: float
    low: float
    high: float
    df: float = np.inf


def quantile(confidence: float, df: float | np.ndarray = np.inf) -> float | np.ndarray:
    """Two-sided quantile of a ``confidence`` interval: Student's t with ``df`` degrees of
    freedom (normal where ``df`` is infinite; NaN where it is not positive)."""
    z = z_quantile(confidence)  # also checks 0 < confidence < 1
    df = np.asarray(df, float)
    if df.size > 1 and bool((df == df.flat[0]).all()):  # one df for every replicate (a
        # human-only study of n scores): its quantile once, the same bits as element-wise
        return np.full(df.shape, quantile(confidence, float(df.flat[0])))
    # scipy.stats.t.ppf is stdtrit behind argument checks that cost ~0.2 ms a call: the same
    # bits without them (the budget planner and the simulations take thousands)
    with np.errstate(invalid="ignore"):
        q = np.where(np.isinf(df), z, special.stdtrit(np.where(df > 0, df, np.nan),
                                                      0.5 + confidence / 2))
    return float(q) if q.ndim == 0 else q


def satterthwaite(a: np.ndarray | float, b: np.ndarray | float, df_a: np.ndarray | float,
                  df_b: np.ndarray | float) -> np.ndarray:
    """Welch-Satterthwaite degrees of freedom of a sum of two variance estimates ``a + b``
    with ``df_a`` and ``df_b`` degrees of freedom (``df_b`` when both are 0).

    References
    ----------
    Satterthwaite, F. E. (1946). An approximate distribution of estimates of variance
    components. Biometrics Bulletin 2(6), 110-114.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = (a + b) ** 2 / (a**2 / df_a + b**2 / df_b)
    return np.where(a + b > 0, df, np.broadcast_to(df_b, df.shape))


def with_interval(mean: float, se: float, confidence: float,
                  df: float | np.ndarray = np.inf) -> Estimate:
    """``mean +- quantile(confidence, df) * se`` as an :class:`Estimate`."""
    q = quantile(confidence, df)
    return Estimate(float(mean), float(se), float(mean - q * se), float(mean + q * se),
                    float(df))


def skewness(y: np.ndarray) -> float:
    """Adjusted Fisher-Pearson sample skewness ``G1`` (``scipy.stats.skew(bias=False)``);
    NaN with fewer than 3 scores or no spread."""
    y = np.asarray(y, float)
    if y.size < 3:
        return float("nan")
    d = y - y.mean()
    m2, m3 = float((d**2).mean()), float((d**3).mean())
    if m2 <= 1e-12 * max(1.0, float(np.abs(y).max()) ** 2):
        return float("nan")
    return m3 / m2**1.5 * np.sqrt(y.size * (y.size - 1)) / (y.size - 2)


def interval_note(y: np.ndarray, betting: bool = True) -> str:
    """What a table's ``note`` says about the t intervals of a mean of the human scores ``y``
    (empty when nothing): fewer than :data:`COVERAGE_CHECKED_FROM` scores (fewer than
    :data:`WIDER_CHECK_FROM`, for PPI++), and a sample
    skewed by :data:`SKEW_LIMIT` or more with fewer than :data:`WIDER_CHECK_FROM` scores,
    where the t interval under-covers (``bench/bench_estimators.py``); ``betting``: the
    table has the betting interval of the human mean, and the note points to it."""
    y = np.asarray(y, float)
    if y.size < 2:
        return ""
    parts = []
    if y.size < COVERAGE_CHECKED_FROM:
        parts.append(f"{y.size} human scores, fewer than {COVERAGE_CHECKED_FROM}: the t "
                     "intervals covered as little as 0.91 with 10 (bench/bench_ppi_coverage.py)")
    elif y.size < WIDER_CHECK_FROM:
        parts.append(f"{y.size} human scores, fewer than {WIDER_CHECK_FROM}: PPI++'s t interval "
                     "covered as little as 0.935 with 30 (bench/bench_ppi_coverage.py)")
    g = skewness(y)
    if y.size < WIDER_CHECK_FROM and abs(g) >= SKEW_LIMIT:
        side = "low" if g < 0 else "high"
        parts.append(f"human scores {SKEW_MARK} (skewness {g:+.2f}, a long tail of {side} "
                     f"scores): on populations this skewed the t intervals covered as little "
                     f"as {SKEWED_COVERAGE[10]} with 10 scores and {SKEWED_COVERAGE[30]} with 30 "
                     "(bench/bench_estimators.py)")
    if not parts or not betting:
        return "; ".join(parts)
    return "; ".join(parts) + ("; the betting interval of the human mean "
                               "(human_betting_ci_low/high) keeps 95%")


def clip_to_scale(low: float, high: float) -> tuple[float, float]:
    """An interval of a mean score cut to the 1..10 scale: no mean lies outside it, so a t
    limit past it (5 scores of 9 and 10 give an upper limit of 10.8) says nothing more."""
    return (float(np.clip(low, SCORE_MIN, SCORE_MAX)) if np.isfinite(low) else low,
            float(np.clip(high, SCORE_MIN, SCORE_MAX)) if np.isfinite(high) else high)


def small_sample_warning(n_labelled: pd.Series | list[int],
                         notes: pd.Series | list[str] | None = None) -> str | None:
    """What the t intervals' coverage check (``bench/bench_ppi_coverage.py``) does not cover:
    models with 2 to :data:`COVERAGE_CHECKED_FROM` - 1 human scores, PPI++ below
    :data:`WIDER_CHECK_FROM`, and (``notes``: the table's note column) skewed human scores
    (:func:`interval_note`); None when there is nothing to say. Each model's own row says the
    same in its ``note``, which every export carries."""
    counts = pd.Series(n_labelled, dtype=float)
    few = int(((counts >= 2) & (counts < COVERAGE_CHECKED_FROM)).sum())
    some = int(((counts >= COVERAGE_CHECKED_FROM) & (counts < WIDER_CHECK_FROM)).sum())
    skewed = 0 if notes is None else int(pd.Series(notes, dtype="string").fillna("")
                                         .str.contains(SKEW_MARK, regex=False).sum())
    parts = []
    if few:
        parts.append(f"{few} model(s) have fewer than {COVERAGE_CHECKED_FROM} human scores, "
                     "where the t intervals covered as little as 0.91")
    if some:
        parts.append(f"{some} model(s) have fewer than {WIDER_CHECK_FROM}, where PPI++'s t "
                     "interval covered as little as 0.935")
    if skewed:
        parts.append(f"{skewed} model(s) have human scores {SKEW_MARK} (see the note), where "
                     f"the t intervals covered as little as {SKEWED_COVERAGE[10]} with 10 "
                     f"scores and {SKEWED_COVERAGE[30]} with 30")
    if not parts:
        return None
    return ("; ".join(parts) + " (bench/bench_ppi_coverage.py): do not trust those t "
            "intervals. The betting interval of the human mean (human_betting_ci_low/high, "
            "built for scores bounded by 1..10) covered at least 0.967 everywhere, at the price "
            "of width: with 10 scores it spans 6 to 8 points of the scale, which is all 10 "
            "such scores can tell.")


def too_few_human_note(n_labelled: int) -> str:
    """Why a model's human-based cells are empty: no or one human score."""
    if n_labelled == 0:
        return "no human score for this model under the filters"
    return "1 human score: an interval needs 2 or more"


def constant_human_note(y: np.ndarray, what: str) -> str:
    """The note of a model whose human scores are all the same (empty when they differ)."""
    if y.size < 2 or np.ptp(y) > 0:
        return ""
    return (f"every human score of this model is {y[0]:g}: no variation seen is not "
            f"certainty, so {what}; collect more human scores")


def check_interval(interval: str) -> None:
    """Refuse an interval kind other than those of :data:`INTERVALS`."""
    if interval not in INTERVALS:
        raise UserError(f"unknown interval {interval!r}: choose {' or '.join(INTERVALS)}")
