"""The span trend's interval with few clusters: the CR2 (bias-reduced linearisation)
cluster-robust standard error with Bell-McCaffrey / Satterthwaite degrees of freedom.

The CR1 interval (``interleaving.cluster_slope``: ``G / (G - 1)`` times the sandwich, t on
``G - 1`` degrees of freedom) is too narrow with few clusters, and the more so when the
regressor varies between clusters rather than within them, as the span does over runs at
several spans: each cluster's residuals are shrunk by its own leverage, which the
``G / (G - 1)`` factor does not undo, and the t quantile on ``G - 1`` degrees of freedom
ignores how few clusters carry the information. CR2 divides each cluster's residuals by the
square root of ``I - H_gg`` (unbiased when the errors are independent and homoskedastic), and
the degrees of freedom are those of the Satterthwaite approximation to the distribution of
the CR2 variance under that working model (Bell & McCaffrey 2002; Imbens & Kolesar 2016;
Pustejovsky & Tipton 2018, what R's ``clubSandwich::coef_test(..., test = "Satterthwaite")``
prints). Coverage beside CR1 on simulated conversations: ``bench/bench_validity.py``,
section ``trend-interval``.

Written here rather than taken from a library: statsmodels (the only one of these installed)
offers CR1 for clusters and HC2 for single observations, not CR2 nor its degrees of freedom;
the tests check this code against a dense computation of the textbook formulas, against
statsmodels' HC2 (CR2 with one observation a cluster) and against Welch's two-group variance
with ``G - 2`` degrees of freedom, the closed form of a balanced two-group design.

For one regressor every quantity is a 2 x 2 matrix per cluster: with ``B = (X'X)^-1``,
``R = B^(1/2)``, ``W_g = X_g' X_g`` and ``S_g = R W_g R``, ``X_g' (I - H_gg)^(-1/2) =
R^-1 (I - S_g)^(-1/2) R X_g'`` (a function of ``H_gg = X_g B X_g'`` moves through ``X_g'``),
so the fit needs only each cluster's count and sums of ``x``, ``x^2``, ``y`` and ``x y``
(:func:`.cluster_tests.cluster_moments`) and thousands of simulated data sets are fitted at
once. A cluster whose ``I - H_gg`` is singular (its leverage 1) takes the pseudo-inverse, as
clubSandwich does.

References
----------
Bell, R. M., & McCaffrey, D. F. (2002). Bias reduction in standard errors for linear
regression with multi-stage samples. Survey Methodology, 28(2), 169-181. Imbens, G. W., &
Kolesar, M. (2016). Robust standard errors in small samples: some practical advice. Review of
Economics and Statistics, 98(4), 701-712. Pustejovsky, J. E., & Tipton, E. (2018).
Small-sample methods for cluster-robust variance estimation and hypothesis testing in fixed
effects models. Journal of Business & Economic Statistics, 36(4), 672-683 (eq. 10-11: the
degrees of freedom ``(sum_g p_g'p_g)^2 / sum_g sum_h (p_g'p_h)^2``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.stats.cluster_tests import cluster_moments

#: An eigenvalue of ``I - H_gg`` below this counts as 0 (the cluster's leverage is 1).
_SINGULAR = 1e-10


def _sym_power(matrix: np.ndarray, power: float) -> np.ndarray:
    """``matrix ** power`` of symmetric positive definite 2 x 2 matrices (stacked)."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * values[..., None, :] ** power) @ np.swapaxes(vectors, -1, -2)


def cr2_slope_fits(moments: np.ndarray) -> dict[str, np.ndarray]:
    """Slope, CR2 standard error and Satterthwaite degrees of freedom of ``y = a + b x`` for
    each data set of :func:`.cluster_tests.cluster_moments` (sets x G x 5), every set at once.

    Returns a dict of arrays (one value a set): ``slope``, ``se`` and ``df``; a set whose
    ``x`` does not vary gives NaN.
    """
    count, sx, sxx, sy, sxy = np.moveaxis(np.asarray(moments, float), 2, 0)  # each (sets, G)
    gram = np.stack([np.stack([count, sx], -1), np.stack([sx, sxx], -1)], -1)  # (s, G, 2, 2)
    total = gram.sum(1)
    det = total[:, 0, 0] * total[:, 1, 1] - total[:, 0, 1] ** 2
    ok = det > 1e-12 * np.maximum(total[:, 0, 0] * total[:, 1, 1], 1e-300)
    total = np.where(ok[:, None, None], total, np.eye(2))
    bread = np.linalg.inv(total)
    beta = bread @ np.stack([sy.sum(1), sxy.sum(1)], -1)[..., None]  # (s, 2, 1)
    a, b = beta[:, 0], beta[:, 1]  # (s, 1)
    score = np.stack([sy - a * count - b * sx, sxy - a * sx - b * sxx], -1)  # X_g' u_g
    root = _sym_power(bread, 0.5)  # R
    s_g = root[:, None] @ gram @ root[:, None]  # R W_g R: its eigenvalues are H_gg's
    values, vectors = np.linalg.eigh(s_g)
    rest = 1.0 - values  # eigenvalues of I - H_gg in the column space of X_g
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_root = np.where(rest > _SINGULAR, 1.0 / np.sqrt(np.maximum(rest, _SINGULAR)), 0.0)
    r = root[:, 1]  # R c for the slope, c = (0, 1): (s, 2)
    # everything below in each cluster's eigenbasis of S_g
    r_g = np.einsum("sgij,si->sgj", vectors, r)  # U' R c
    rs_g = np.einsum("sgij,sgi->sgj", vectors, np.einsum("sij,sgj->sgi", root, score))
    # c' B X_g' A_g u_g = (R c)' (I - S_g)^(-1/2) R X_g' u_g: the slope's adjusted score
    w = (r_g * inv_root * rs_g).sum(-1)
    se = np.sqrt((w * w).sum(1))
    # the df: Omega_gh = p_g' p_h = delta_gh d_g - v_g' v_h (module docstring's references)
    d = (r_g * r_g * inv_root**2 * values).sum(-1)  # (R c)' F_g^2 S_g (R c)
    v = r_g * inv_root * values  # F_g S_g R c, in the eigenbasis (rotations keep v_g' v_h)
    v = np.einsum("sgij,sgj->sgi", vectors, v)  # back to one basis for the cross products
    cross = np.einsum("sgi,sgj->sij", v, v)  # V'V: (s, 2, 2)
    trace = d.sum(1) - (v * v).sum((1, 2))
    frobenius = (d * d).sum(1) - 2 * (d * (v * v).sum(-1)).sum(1) + (cross * cross).sum((1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        df = trace**2 / frobenius
    nan = np.where(ok, 1.0, np.nan)
    return {"slope": b[:, 0] * nan, "se": se * nan, "df": df * nan}


def cr2_slope_ps(moments: np.ndarray) -> np.ndarray:
    """Two-sided p-value of "slope 0" of each data set (the CR2 t-test on its Satterthwaite
    degrees of freedom): ``p < 1 - confidence`` exactly when :func:`cr2_slope`'s interval
    leaves 0 out, so its size on null data is one less the interval's coverage."""
    fit = cr2_slope_fits(moments)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2 * stats.t.sf(np.abs(fit["slope"] / fit["se"]), fit["df"])


def cr2_slope(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
              confidence: float = 0.95) -> dict[str, float]:
    """OLS slope of ``y`` on ``x`` with its CR2 standard error and a t interval on the
    Satterthwaite degrees of freedom (see the module).

    Returns
    -------
    dict
        ``slope``, ``se``, ``df``, ``t``, ``p`` and ``ci_low``/``ci_high`` (NaN where ``x``
        does not vary).

    Examples
    --------
    Two groups of two clusters (x constant within a cluster, balanced): the variance is
    Welch's of the cluster means and the degrees of freedom G - 2.

    >>> x = np.repeat([0.0, 0.0, 1.0, 1.0], 2)
    >>> y = np.array([1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 7.0])
    >>> fit = cr2_slope(x, y, np.repeat([0, 1, 2, 3], 2))
    >>> round(fit["se"] ** 2, 6), round(fit["df"], 6)  # means' variances (0.5 + 2) / 2; 4 - 2
    (1.25, 2.0)
    """
    codes = pd.factorize(np.asarray(clusters))[0]
    fit = {k: float(v[0]) for k, v in cr2_slope_fits(
        cluster_moments(np.asarray(x, float), np.asarray(y, float), codes)).items()}
    with np.errstate(divide="ignore", invalid="ignore"):
        t = fit["slope"] / fit["se"] if fit["se"] > 0 else float("nan")
    half = float(stats.t.ppf(0.5 + confidence / 2, fit["df"])) * fit["se"]
    return {**fit, "t": t, "p": float(2 * stats.t.sf(abs(t), fit["df"])),
            "ci_low": fit["slope"] - half, "ci_high": fit["slope"] + half}
