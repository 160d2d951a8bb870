"""What a human budget buys: replaying sampling designs on responses that humans scored in full.

Where a human evaluator scored every response (the bundled gold-human on test2 QA-st), its
full mean per model is the truth a smaller study would estimate. :func:`design_simulation`
draws many smaller studies of ``budget`` human scores from those responses and reports, per
design and model, how far each estimate falls from that truth, how wide its interval is and
how often the interval covers it: the judge alone, human scores alone, PPI and PPI++ on a
uniform sample, and the inverse-probability-weighted PPI on an active sample.

The replicates are vectorised (a replicates x responses mask per model) because a Python loop
over thousands of replicates would dominate the page; the tests check the vectorised
estimates against :func:`~elitr_core.stats.ppi.ppi_mean` one replicate at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from elitr_core.errors import UserError
from elitr_core.stats.active import DEFAULT_MIX, draw, selection_probabilities, uncertainty
from elitr_core.stats.frame import RESPONSE_KEY
from elitr_core.stats.intervals import quantile, satterthwaite
from elitr_core.stats.pairs import judge_human_table, labelled_only
from elitr_core.vocab import EXPORT_COLUMNS

DESIGNS: tuple[str, ...] = ("judge-only", "human-only", "ppi", "ppi++", "active")

DESIGN_COLUMNS: tuple[str, ...] = EXPORT_COLUMNS["ppi-designs"]
"""Columns of :func:`design_simulation`."""


def _masked_sums(labelled: np.ndarray, rest: np.ndarray, y: np.ndarray,
                 f: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per-row sums (replicates x items) of ``y``, ``y * y``, ``y * f``, ``f`` and ``f * f``
    where ``labelled``, and of ``f`` and ``f * f`` where ``rest``.

    Each product is formed in one of two reused buffers, no temporary per term (the budget
    planner asks for these thousands of times). ``(mask * y) * y`` holds the bits of
    ``mask * y**2``, the mask being exactly 0 or 1, and every row is summed as before."""
    shape = np.broadcast_shapes(labelled.shape, np.shape(y), np.shape(f))
    a, b = np.empty(shape), np.empty(shape)
    np.multiply(labelled, y, out=a)
    sums = [a.sum(1), np.multiply(a, f, out=b).sum(1)]
    sums.insert(1, np.multiply(a, y, out=a).sum(1))
    for mask in (labelled, rest):
        np.multiply(mask, f, out=a)
        sums += [a.sum(1), np.multiply(a, f, out=a).sum(1)]
    return tuple(sums)


def _lambda(design: str, n: np.ndarray, big_n: np.ndarray, cov: np.ndarray,
            f_variance: Callable[[], np.ndarray]) -> np.ndarray:
    if design == "human-only":
        return np.zeros_like(n)
    if design == "ppi":
        return np.ones_like(n)
    if design == "ppi++":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.clip(np.nan_to_num(cov / ((1 + n / big_n) * f_variance())),
                           0.0, 1.0)
    raise UserError(f"unknown uniform design {design!r}")


def uniform_estimates(y: np.ndarray, f: np.ndarray, labelled: np.ndarray, design: str,
                      interval: str = "t") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimate, standard error and degrees of freedom of each replicate (row of
    ``labelled``) of one design.

    ``y`` and ``f`` are the human and judge scores of the responses, one population for every
    replicate (1-D) or one per replicate (2-D, like ``labelled``).
    ``design`` is ``human-only``, ``ppi`` or ``ppi++``; ``interval`` ``t`` or ``normal``:
    the formulas of :func:`~elitr_core.stats.ppi.classical_mean`, :func:`~elitr_core.stats.
    ppi.ppi_mean` and :func:`~elitr_core.stats.ppi.ppipp_mean`, on every row at once. Rows
    with fewer than 2 labelled (3 for PPI++'s t interval) or no unlabelled response give NaN.
    """
    rest = ~labelled
    n, big_n = labelled.sum(axis=1).astype(float), rest.sum(axis=1).astype(float)
    return estimates_from_sums(n, big_n, _masked_sums(labelled, rest, y, f),
                               lambda: f.var(axis=-1, ddof=1), design, interval)


def estimates_from_sums(n: np.ndarray, big_n: np.ndarray, sums: tuple[np.ndarray, ...],
                        f_variance: Callable[[], np.ndarray], design: str,
                        interval: str = "t") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`uniform_estimates` from each replicate's ``n`` labelled and ``big_n`` unlabelled
    responses and its sums (``_masked_sums``' seven, in its order); ``f_variance`` gives the
    ``ddof=1`` variance of each replicate's judge scores (called for PPI++ only). The budget
    planner forms the sums of every size at once, as running sums along its studies."""
    s_y, s_yy, s_yf, s_fl, s_ffl, s_fu, s_ffu = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_y, mean_fl, mean_fu = s_y / n, s_fl / n, s_fu / big_n
        var_y = s_yy / n - mean_y**2  # ddof=0 moments
        var_fl = s_ffl / n - mean_fl**2
        var_fu = s_ffu / big_n - mean_fu**2
        cov = s_yf / n - mean_y * mean_fl
        lam = _lambda(design, n, big_n, cov, f_variance)
        estimate = lam * mean_fu + mean_y - lam * mean_fl
        residual = np.maximum(var_y - 2 * lam * cov + lam**2 * var_fl, 0)
        imputed = lam**2 * var_fu / big_n
        if interval == "normal":
            se, df = np.sqrt(imputed + residual / n), np.full_like(n, np.inf)
        else:
            se, df = _t_parts(design, n, big_n, imputed, residual, mean_fu - mean_fl, var_fl)
        if design == "human-only":
            estimate = mean_y
    bad = (n < (3 if design == "ppi++" and interval == "t" else 2)) | (big_n == 0)
    return tuple(np.where(bad, np.nan, v) for v in (estimate, se, df))  # type: ignore[return-value]


def _t_parts(design: str, n: np.ndarray, big_n: np.ndarray, imputed: np.ndarray,
             residual: np.ndarray, gap: np.ndarray,
             var_fl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Standard error and degrees of freedom of the t intervals from ``ddof=0`` moments."""
    a = imputed * big_n / np.maximum(big_n - 1, 1)  # ddof=1
    if design == "human-only":
        return np.sqrt(residual / (n - 1)), n - 1
    if design == "ppi":
        b = residual / (n - 1)
        return np.sqrt(a + b), satterthwaite(a, b, np.maximum(big_n - 1, 1), n - 1)
    s2 = residual * n / (n - 2)  # ddof=2: lambda is fitted on the same scores
    slope = np.where(var_fl > 0, s2 * gap**2 / (n * var_fl), 0.0)
    b = s2 / n + slope
    return np.sqrt(a + b), satterthwaite(a, b, np.maximum(big_n - 1, 1), n - 2)


def active_estimates(y: np.ndarray, f: np.ndarray, labelled: np.ndarray,
                     probabilities: np.ndarray,
                     interval: str = "t") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~elitr_core.stats.active.active_mean` of each replicate (row of ``labelled``):
    estimate, standard error and degrees of freedom (``y``, ``f`` and ``probabilities`` 1-D,
    or 2-D with one population per replicate)."""
    correction = labelled * (y - f) / probabilities
    terms = f + correction
    size = f.shape[-1]
    if interval == "normal":
        return terms.mean(axis=1), terms.std(axis=1) / np.sqrt(size), \
            np.full(len(terms), np.inf)
    n = labelled.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = satterthwaite(f.var(axis=-1, ddof=1) / size, correction.var(axis=1, ddof=1) / size,
                           size - 1, n - 1)
    return terms.mean(axis=1), terms.std(axis=1, ddof=1) / np.sqrt(size), \
        np.where(n >= 2, df, np.nan)


def _summary(design: str, model: str, budget: int, labelled: np.ndarray, estimate: np.ndarray,
             se: np.ndarray, df: np.ndarray, truth: float, confidence: float) -> list[object]:
    ok = np.isfinite(estimate) & np.isfinite(se) & ~np.isnan(df)
    half = quantile(confidence, df[ok]) * se[ok]
    covered = np.abs(estimate[ok] - truth) <= half
    return [design, model, budget, float(labelled.sum(1).mean()),
            float(np.abs(estimate[ok] - truth).mean()) if ok.any() else np.nan,
            float(2 * half.mean()) if ok.any() else np.nan,
            float(covered.mean()) if ok.any() else np.nan, int(ok.sum())]


def design_simulation(df: pd.DataFrame, judge: str, human: str, budget: int,
                      replicates: int = 1000, seed: int = 0, confidence: float = 0.95,
                      method: str = "middle", mix: float = DEFAULT_MIX) -> pd.DataFrame:
    """Replay studies of ``budget`` human scores on the responses the human scored in full.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table; only responses scored by both evaluators are used, and their
        human mean per model is the truth.
    judge, human : str
        Evaluator slugs.
    budget : int
        Human scores per replicate, over all models together: exactly ``budget`` for the
        uniform designs (drawn without replacement), ``budget`` in expectation for the active
        one (Poisson sampling with :func:`~elitr_core.stats.active.selection_probabilities`
        from the judge's ``method`` uncertainty).
    replicates : int
        Simulated studies per design.
    seed : int
        Seed of every draw.

    Returns
    -------
    pandas.DataFrame
        ``DESIGN_COLUMNS``: per design (``DESIGNS``) and model, the mean number of human
        scores, the mean absolute error against the full human mean, the mean interval width
        and the share of intervals covering it (``judge-only`` has no interval: NaN).
        Intervals ignore the finite population, so coverage tends to exceed the nominal rate.

    References
    ----------
    Angelopoulos et al. (2023), Science 382(6671); Angelopoulos, Duchi & Zrnic (2023),
    arXiv:2311.01453; Zrnic & Candes (2024), Active statistical inference, ICML.
    """
    if replicates < 1:
        raise UserError(f"replicates must be positive, not {replicates}")
    table = labelled_only(judge_human_table(df, judge, human), judge, human, minimum=4)
    if not 2 <= budget < len(table):
        raise UserError(f"the budget must lie between 2 and {len(table) - 1} (the responses "
                        f"both {judge} and {human} scored), not {budget}")
    quantile(confidence)  # checks the confidence before any work
    rng = np.random.default_rng(seed)
    ranks = rng.random((replicates, len(table))).argsort(axis=1).argsort(axis=1)
    uniform = ranks < budget
    unsure = uncertainty(df, judge, method).merge(table[list(RESPONSE_KEY)],
                                                  on=list(RESPONSE_KEY), how="right")
    pi = selection_probabilities(unsure["uncertainty"].to_numpy(), budget, mix)
    active = np.vstack([draw(pi, rng) for _ in range(replicates)])
    rows = []
    for model, group in table.groupby("model", sort=True):
        index = group.index.to_numpy()
        y, f = group["human"].to_numpy(float), group["judge"].to_numpy(float)
        truth = float(y.mean())
        rows.append(["judge-only", model, budget, 0.0, abs(f.mean() - truth), np.nan, np.nan,
                     replicates])
        for design in ("human-only", "ppi", "ppi++"):
            est, se, df = uniform_estimates(y, f, uniform[:, index], design)
            rows.append(_summary(design, model, budget, uniform[:, index], est, se, df, truth,
                                 confidence))
        est, se, df = active_estimates(y, f, active[:, index], pi[index])
        rows.append(_summary("active", model, budget, active[:, index], est, se, df, truth,
                             confidence))
    return pd.DataFrame(rows, columns=list(DESIGN_COLUMNS))
