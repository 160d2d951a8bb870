"""Confidence intervals of the human-corrected means (PPI, PPI++, the active estimator):
Student t quantiles with Welch-Satterthwaite degrees of freedom, or the normal quantile, and
the small-sample warning the pages show (see :mod:`elitr_core.stats.ppi` and
``bench/bench_ppi_coverage.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import UserError
from elitr_core.stats.pairs import z_quantile

#: Fewest human scores per model from which ``bench/bench_ppi_coverage.py`` (4,000 replicates
#: per cell, bench/results/ppi-coverage-2026-11-25.md) found the t intervals of human-only, PPI
#: and the active estimator covering at least 0.94 on every distribution it tried that is not
#: piled up at one end of the scale (at 10: down to 0.909).
COVERAGE_CHECKED_FROM = 30
#: The same for PPI++ (at 30: 0.935 and 0.938 on two bundled models), and for human-only, PPI
#: and the active estimator on samples piled up at one end (at 30: down to 0.921; PPI++ 0.912,
#: and at 100 still 0.927)
WIDER_CHECK_FROM = 100
#: Share of a model's human scores at one end of the 1..10 scale (1-2 or 9-10) from which a
#: sample counts as piled up there (GPT-4's gold-human scores: 82 of 130 at 9-10): the few
#: scores at the other end are often missing from a small sample, its mean comes out too
#: close to the pile and its standard deviation too small.
PILED_SHARE = 0.5
PILED_MARK = "piled up at one end of the scale"

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
    with np.errstate(invalid="ignore"):
        q = np.where(np.isinf(df), z, stats.t.ppf(0.5 + confidence / 2, np.where(df > 0, df,
                                                                                  np.nan)))
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


def piled_note(y: np.ndarray) -> str:
    """A note when at least :data:`PILED_SHARE` of the human scores ``y`` lie at one end of
    the 1..10 scale (within 1.5 of 1 or of 10), else empty."""
    y = np.asarray(y, float)
    if y.size < 2:
        return ""
    for at_end, label in ((y <= 2.5, "1-2"), (y >= 8.5, "9-10")):
        if at_end.mean() >= PILED_SHARE:
            return (f"{int(at_end.sum())} of {y.size} human scores are {label}, a sample "
                    f"{PILED_MARK}: on such samples the t intervals covered as little as 0.81 "
                    "with 10 human scores and 0.91 with 30 (PPI++'s 0.93 with 100; "
                    "bench/bench_ppi_coverage.py); the betting interval of the human mean "
                    "(human_betting_ci_low/high) keeps 95%")
    return ""


def small_sample_warning(n_labelled: pd.Series | list[int],
                         notes: pd.Series | list[str] | None = None) -> str | None:
    """What the t intervals' coverage check (``bench/bench_ppi_coverage.py``) does not cover:
    models with 2 to :data:`COVERAGE_CHECKED_FROM` - 1 human scores, PPI++ below
    :data:`WIDER_CHECK_FROM`, and (``notes``: the table's note column) human scores piled up
    at one end of the scale; None when there is nothing to say."""
    counts = pd.Series(n_labelled, dtype=float)
    few = int(((counts >= 2) & (counts < COVERAGE_CHECKED_FROM)).sum())
    some = int(((counts >= COVERAGE_CHECKED_FROM) & (counts < WIDER_CHECK_FROM)).sum())
    piled = 0 if notes is None else int(pd.Series(notes, dtype="string").fillna("")
                                        .str.contains(PILED_MARK, regex=False).sum())
    parts = []
    if few:
        parts.append(f"{few} model(s) have fewer than {COVERAGE_CHECKED_FROM} human scores, "
                     "where the t intervals covered as little as 0.91")
    if some:
        parts.append(f"{some} model(s) have fewer than {WIDER_CHECK_FROM}, where PPI++'s t "
                     "interval covered as little as 0.935")
    if piled:
        parts.append(f"{piled} model(s) have human scores {PILED_MARK} (see the note), where "
                     "the t intervals covered as little as 0.81 with 10 scores and 0.91 with "
                     f"30, PPI++'s 0.93 with {WIDER_CHECK_FROM}")
    if not parts:
        return None
    return ("; ".join(parts) + " (bench/bench_ppi_coverage.py): do not trust those t "
            "intervals. The betting interval of the human mean (human_betting_ci_low/high, "
            "built for scores bounded by 1..10) covered at least 0.967 everywhere, at the price "
            "of width: with 10 scores it spans 6 to 8 points of the scale, which is all 10 "
            "such scores can tell.")


def check_interval(interval: str) -> None:
    """Refuse an interval kind other than those of :data:`INTERVALS`."""
    if interval not in INTERVALS:
        raise UserError(f"unknown interval {interval!r}: choose {' or '.join(INTERVALS)}")
