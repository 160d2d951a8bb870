"""Independent references for the paired and meeting-cluster statistics (import, not a
conftest).

Written the slow, obvious way on purpose: every sign pattern with itertools (of the
meetings' sums, or of the signed ranks), every bootstrap replicate built by repeating the
drawn meetings' rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy import stats

from elitr_core.stats.agreement import cluster_weights, pair_rng


def exact_sign_flip_p(sums: np.ndarray) -> float:
    """Share of the 2^M whole-meeting sign flips whose total is at least as far from 0."""
    totals = [abs(sum(s * v for s, v in zip(signs, sums, strict=True)))
              for signs in itertools.product([-1, 1], repeat=len(sums))]
    return float(np.mean(np.asarray(totals) >= abs(sum(sums)) - 1e-9))


def explicit_cluster_bootstrap(meetings: np.ndarray, statistic: Callable[[np.ndarray], float],
                               names: tuple[str, ...], n: int, seed: int = 0) -> np.ndarray:
    """The statistic on ``n`` replicates, each the rows of its drawn meetings repeated as often
    as drawn (the draws of :func:`cluster_weights` seeded like the code under test)."""
    codes = pd.factorize(meetings)[0]
    weights = cluster_weights(codes.max() + 1, n, pair_rng(seed, *names))
    out = []
    for counts in weights:
        index = np.concatenate([np.flatnonzero(codes == g) for g in range(counts.size)
                                for _ in range(counts[g])])
        out.append(statistic(index))
    return np.asarray(out)


def exact_wilcoxon_p(diff: np.ndarray) -> float:
    """Two-sided exact p: share of sign flips whose W+ is at least as extreme."""
    ranks = stats.rankdata(np.abs(diff))
    observed = ranks[diff > 0].sum()
    total = ranks.sum()
    flips = np.array([sum(r for r, s in zip(ranks, signs, strict=True) if s)
                      for signs in itertools.product([0, 1], repeat=diff.size)])
    extreme = np.abs(flips - total / 2) >= abs(observed - total / 2) - 1e-9
    return float(extreme.mean())


def statsmodels_wild_p(x: np.ndarray, y: np.ndarray, clusters: np.ndarray) -> float:
    """Every Rademacher pattern over the clusters written out, each ``y*`` refitted by
    statsmodels' OLS with CR1 errors (``cov_type="cluster"``), the share of ``|t*| >= |t|``."""
    def t(values: np.ndarray) -> float:
        fit = sm.OLS(values, sm.add_constant(x)).fit(
            cov_type="cluster", cov_kwds={"groups": clusters}, use_t=True)
        return abs(float(fit.tvalues[1]))
    residual = y - y.mean()
    g = int(clusters.max()) + 1
    flipped = [t(y.mean() + np.array(signs)[clusters] * residual)
               for signs in itertools.product((1.0, -1.0), repeat=g)]
    return float(np.mean(np.array(flipped) >= t(y) * (1 - 1e-9)))


def dense_cr2(x: np.ndarray, y: np.ndarray, clusters: np.ndarray) -> tuple[float, float]:
    """The slope's CR2 standard error and Satterthwaite degrees of freedom from the textbook
    formulas with full n x n matrices (Bell & McCaffrey 2002; Pustejovsky & Tipton 2018, eq.
    10-11, working model the identity): ``A_g = (I - H_gg)^(-1/2)`` by eigendecomposition
    (pseudo-inverse where an eigenvalue is 0), ``V = sum_g (c' B X_g' A_g u_g)^2``,
    ``p_g = (I - H)_g' A_g X_g B c`` and ``df = (sum_g p_g'p_g)^2 / sum_gh (p_g'p_h)^2``."""
    design = np.column_stack([np.ones_like(x), x])
    bread = np.linalg.inv(design.T @ design)
    residual_maker = np.eye(x.size) - design @ bread @ design.T
    u = residual_maker @ y
    c = np.array([0.0, 1.0])
    variance, p = 0.0, []
    for g in np.unique(clusters):
        rows = np.flatnonzero(clusters == g)
        values, vectors = np.linalg.eigh(residual_maker[np.ix_(rows, rows)])
        inverse_root = np.array([1 / np.sqrt(v) if v > 1e-10 else 0.0 for v in values])
        adjust = vectors @ np.diag(inverse_root) @ vectors.T
        variance += float(c @ bread @ design[rows].T @ adjust @ u[rows]) ** 2
        q = np.zeros(x.size)
        q[rows] = adjust @ design[rows] @ bread @ c
        p.append(residual_maker @ q)
    omega = np.array(p) @ np.array(p).T
    return float(np.sqrt(variance)), float(np.trace(omega) ** 2 / np.sum(omega**2))
