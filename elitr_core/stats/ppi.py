"""Human-corrected leaderboard: prediction-powered inference (PPI, PPI++); the budget planner
is :mod:`elitr_core.stats.budget`.

An LLM judge scores every response; humans score a subset. Per model, the human mean over the
subset is unbiased but noisy; the judge mean over everything is precise but biased. PPI adds
the judge mean over the responses humans did not score to the mean human-minus-judge
difference over those they did (the *rectifier*): unbiased, and narrower than human-only when
the judge tracks the human. PPI++ multiplies the judge by a power-tuning ``lambda`` in [0, 1]
chosen from the data to minimise the variance (``lambda = 0`` is human-only, ``1`` is PPI).

Point estimates and ``lambda`` follow the reference implementation ``ppi_py``
(``ppi_mean_pointestimate``, ``_calc_lam_glm``). Its intervals are normal (CLT) ones with
``ddof=0`` standard deviations, which cover only 0.88-0.93 instead of 0.95 with about 10 human
scores per model; the intervals here default to small-sample ones (``interval="t"``):

- human-only: ``ddof=1`` and Student's t with ``n - 1`` degrees of freedom;
- PPI: ``ddof=1`` variances of the unlabelled judge scores and of the rectifier, Student's t
  with Welch-Satterthwaite degrees of freedom (PPI is a sum of two independent means);
- PPI++: as PPI, but the rectifier's variance with ``ddof=2`` and ``n - 2`` degrees of freedom
  (``lambda`` is a slope fitted on the same ``n`` scores) plus the variance that the estimated
  ``lambda`` adds, ``s_e^2 (mean(yhat_unlabelled) - mean(yhat))^2 / sum((yhat - mean(yhat))^2)``,
  the small-sample term of the regression estimator in double sampling (Cochran 1977, 12.6).

``interval="normal"`` gives ``ppi_py``'s intervals exactly. The code is written on plain
arrays because ``ppi_py`` pulls numba, scikit-learn and gdown into the runtime; the tests check
every point estimate and the normal intervals against ``ppi_py``, the t intervals against
scipy's Welch and one-sample t intervals, and the coverage by simulation
(``bench/bench_ppi_coverage.py``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.betting import betting_interval
from elitr_core.stats.intervals import (
    Estimate,
    check_interval,
    clip_to_scale,
    constant_human_note,
    interval_note,
    satterthwaite,
    too_few_human_note,
    with_interval,
)
from elitr_core.stats.pairs import GROUP_KEY, judge_human_table, nullable
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_MAX, SCORE_MIN

PPI_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["ppi"]
"""Columns of ``export ppi`` (the export contract, ``elitr_core.vocab.EXPORT_COLUMNS``)."""



def classical_mean(y: np.ndarray, confidence: float = 0.95, interval: str = "t") -> Estimate:
    """Mean of the human scores: Student's t interval (``ddof=1``, ``n - 1`` degrees of
    freedom), or with ``interval="normal"`` the CLT one of ``ppi_py.classical_mean_ci``."""
    check_interval(interval)
    y = np.asarray(y, float)
    if interval == "normal":
        return with_interval(y.mean(), y.std() / np.sqrt(y.size), confidence)
    return with_interval(y.mean(), y.std(ddof=1) / np.sqrt(y.size), confidence, y.size - 1)


def power_tuning(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lambda`` for a mean, clipped to [0, 1].

    ``lambda = cov(y, yhat) / ((1 + n / N) var(yhat_all))`` with the covariance over the ``n``
    labelled responses (``ddof=0``) and the variance over all ``n + N`` judged ones
    (``ddof=1``), exactly as ``ppi_py._calc_lam_glm`` for the mean. A constant judge gives 0.
    """
    y, yhat, rest = (np.asarray(a, float) for a in (y, yhat, yhat_unlabelled))
    both = np.concatenate([yhat, rest])
    variance = both.var(ddof=1) if both.size > 1 else 0.0
    if variance == 0 or rest.size == 0:
        return 0.0
    covariance = np.mean((y - y.mean()) * (yhat - yhat.mean()))
    return float(np.clip(covariance / ((1 + y.size / rest.size) * variance), 0.0, 1.0))


def ppi_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, lam: float = 1.0,
             confidence: float = 0.95, interval: str = "t") -> Estimate:
    """Prediction-powered mean with a fixed ``lam``: ``lam * mean(yhat_unlabelled) +
    mean(y - lam * yhat)``.

    Parameters
    ----------
    y, yhat : numpy.ndarray
        Human and judge scores of the ``n`` labelled responses (same order).
    yhat_unlabelled : numpy.ndarray
        Judge scores of the ``N`` responses without a human score (may be empty: then the
        estimate is the human mean with its classical interval).
    lam : float
        1 for PPI, 0 for human-only; a ``lam`` tuned on these data is :func:`ppipp_mean`.
    confidence : float
        Coverage of the interval.
    interval : {"t", "normal"}
        ``t``: standard error ``sqrt(var(lam * yhat_unlabelled) / N + var(y - lam * yhat) /
        n)`` with ``ddof=1`` variances and Student's t with Welch-Satterthwaite degrees of
        freedom (``N - 1`` and ``n - 1``); ``normal``: ``ddof=0`` and the normal quantile,
        as ``ppi_py.ppi_mean_ci``.

    References
    ----------
    Angelopoulos, A. N., Bates, S., Fannjiang, C., Jordan, M. I., & Zrnic, T. (2023).
    Prediction-powered inference. Science, 382(6671), 669-674.
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. Biometrika 34, 28-35.

    Examples
    --------
    >>> round(ppi_mean([5.0, 7.0, 6.0], [6.0, 8.0, 8.0], [4.0, 9.0, 6.0, 7.0]).mean, 4)
    5.1667
    """
    check_interval(interval)
    y, yhat, rest = (np.asarray(a, float) for a in (y, yhat, yhat_unlabelled))
    if rest.size == 0:
        return classical_mean(y, confidence, interval)
    rectifier = y - lam * yhat
    mean = lam * rest.mean() + rectifier.mean()
    if interval == "normal":
        se = np.sqrt((lam * rest).var() / rest.size + rectifier.var() / y.size)
        return with_interval(mean, se, confidence)
    a, b = _variance(lam * rest, 1) / rest.size, _variance(rectifier, 1) / y.size
    return with_interval(mean, np.sqrt(a + b), confidence,
                     satterthwaite(a, b, max(rest.size - 1, 1), y.size - 1))


def _variance(values: np.ndarray, ddof: int) -> float:
    """Variance with ``ddof``, 0 where fewer than ``ddof + 1`` values (nothing to estimate)."""
    return float(values.var(ddof=ddof)) if values.size > ddof else 0.0


def ppipp_mean(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray,
               confidence: float = 0.95, interval: str = "t") -> tuple[Estimate, float]:
    """PPI++: the prediction-powered mean with ``lambda = power_tuning(...)``; returns the
    estimate and ``lambda``.

    With ``interval="normal"`` this is ``ppi_py.ppi_mean_ci`` (``lam=None``). With ``"t"``
    the interval accounts for ``lambda`` being fitted on the same ``n`` scores: the
    rectifier ``e = y - lambda * yhat`` has variance ``s_e^2 = var(e, ddof=2)`` and the
    standard error is ``sqrt(lambda^2 var(yhat_unlabelled) / N + s_e^2 / n + s_e^2 (mean(
    yhat_unlabelled) - mean(yhat))^2 / sum((yhat - mean(yhat))^2))``, Student's t with
    Welch-Satterthwaite degrees of freedom (``N - 1`` and ``n - 2``). Needs ``n >= 3``
    (NaN interval otherwise).

    References
    ----------
    Angelopoulos, A. N., Duchi, J. C., & Zrnic, T. (2023). PPI++: Efficient prediction-powered
    inference. arXiv:2311.01453. Cochran, W. G. (1977). Sampling Techniques, 3rd ed., Wiley,
    section 12.6 (variance of the regression estimator in double sampling).
    """
    check_interval(interval)
    y, yhat, rest = (np.asarray(a, float) for a in (y, yhat, yhat_unlabelled))
    lam = power_tuning(y, yhat, rest)
    if interval == "normal" or rest.size == 0:
        return ppi_mean(y, yhat, rest, lam, confidence, interval), lam
    residual = y - lam * yhat
    mean = lam * rest.mean() + residual.mean()
    s2 = residual.var(ddof=2) if y.size > 2 else np.nan
    spread = float(((yhat - yhat.mean()) ** 2).sum())
    slope = s2 * (rest.mean() - yhat.mean()) ** 2 / spread if spread > 0 else 0.0
    a, b = _variance(lam * rest, 1) / rest.size, s2 / y.size + slope
    df = satterthwaite(a, b, max(rest.size - 1, 1), y.size - 2) if y.size > 2 else np.nan
    return with_interval(mean, np.sqrt(a + b), confidence, df), lam


def _model_row(group: pd.DataFrame, confidence: float, interval: str) -> list[object]:
    labelled = group["human"].notna().to_numpy()
    y = group.loc[labelled, "human"].to_numpy(float)
    yhat = group.loc[labelled, "judge"].to_numpy(float)
    rest = group.loc[~labelled, "judge"].to_numpy(float)
    counts = [float(y.size), float(rest.size), float(group["judge"].mean())]
    if y.size < 2:  # no interval from fewer than two human scores
        return [*counts, *[np.nan] * 12, too_few_human_note(y.size)]
    estimates = [classical_mean(y, confidence, interval),
                 ppi_mean(y, yhat, rest, 1.0, confidence, interval)]
    tuned, lam = ppipp_mean(y, yhat, rest, confidence, interval)
    cells: list[float] = []
    for estimate in (*estimates, tuned):
        # a zero-width interval (no variation in the sample) is left empty, the note says why
        wide = estimate.high > estimate.low
        cells += [estimate.mean, *(clip_to_scale(estimate.low, estimate.high) if wide
                                   else (np.nan,) * 2)]
    # bounded scores: this interval keeps its coverage where the t ones do not (intervals.py)
    bounded = betting_interval(y, SCORE_MIN, SCORE_MAX, confidence)
    note = constant_human_note(y, "zero-width intervals are left empty") or interval_note(y)
    return [*counts, *cells, *map(float, bounded), lam if rest.size else np.nan, note]


def ppi_table(df: pd.DataFrame, judge: str, human: str, confidence: float = 0.95,
              interval: str = "t") -> pd.DataFrame:
    """Judge-only, human-only, PPI and PPI++ means per model (the ``ppi`` export).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``) holding both evaluators.
    judge, human : str
        The judge evaluator (scored on all responses) and the human one (on a subset).
    confidence : float
        Coverage of every interval.
    interval : {"t", "normal"}
        Small-sample t intervals (default) or ``ppi_py``'s normal ones (see the module).

    Returns
    -------
    pandas.DataFrame
        ``PPI_COLUMNS``, one row per split, setting, mode and model (sorted) with a judge
        score. ``n_labelled`` counts the responses with both scores, ``n_unlabelled`` those with
        the judge's only; ``judge_mean`` is over all judged responses. With fewer than two
        labelled responses the human, PPI and PPI++ cells are empty (``pd.NA``; PPI++'s t
        interval needs three) and ``note`` says so; an interval of zero width (every human
        score the same) is left empty with a note; every interval is cut to the 1..10 scale
        (:func:`~elitr_core.stats.intervals.clip_to_scale`); with no
        unlabelled response PPI and PPI++ equal the human mean and ``lambda`` is empty.
        ``human_betting_ci_low/high`` is the betting interval of the human mean for scores
        bounded by 1..10 (:func:`~elitr_core.stats.betting.betting_interval`, always
        ``confidence``-level, wider, bet in a seeded random order); the note says when there
        are fewer than 30 human scores or they are skewed, where the t intervals are not to be
        trusted (:func:`~elitr_core.stats.intervals.interval_note`).

    References
    ----------
    Angelopoulos et al. (2023), Science 382(6671); Angelopoulos, Duchi & Zrnic (2023),
    arXiv:2311.01453 (see :func:`ppi_mean`).
    """
    table = judge_human_table(df, judge, human)
    rows = []
    for key, group in table.groupby(list(GROUP_KEY), sort=True):
        rows.append([*key, *_model_row(group, confidence, interval)])
    out = pd.DataFrame(rows, columns=list(PPI_COLUMNS))
    if not out["n_labelled"].gt(0).any():
        raise DegenerateDataError(f"{human} scored none of the responses {judge} scored: "
                                  "widen the filters or collect human scores")
    for column in PPI_COLUMNS[4:6]:
        out[column] = out[column].astype("int64")
    for column in PPI_COLUMNS[6:-1]:
        out[column] = nullable(out[column])
    return out


# the planner lives in stats/budget.py; its names stay importable from here
from elitr_core.stats.budget import BUDGET_COLUMNS, budget_plan  # noqa: E402,F401
