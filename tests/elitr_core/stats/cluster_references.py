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
