"""Tests that respect clusters: a sign-flip permutation test over clusters and the p-value of
a cluster-bootstrap percentile interval.

The questions of one meeting are not independent (one multi-turn conversation per meeting, one
transcript): a test that treats 271 questions as 271 independent pairs reports p = 0.02 where
the meeting-cluster bootstrap interval holds 0. Both tests here take the meeting as the unit,
like the interval beside them. The p-value of the bootstrap interval agrees with that interval
by construction (below 0.05 exactly when the 95% interval leaves 0 out); the sign-flip test is
exact and may disagree with a percentile interval over few meetings, which is a little liberal
(on the bundled data 9 of 101 model pairs: the interval leaves 0 out, the sign-flip p is
0.05-0.09).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Up to this many clusters the sign-flip test enumerates all 2^M flips (exact p-value).
EXACT_CLUSTERS = 20
#: Up to this many clusters the wild cluster bootstrap enumerates all 2^G patterns (each one
#: a refit, so fewer than the sign-flip test's sums).
EXACT_WILD = 12
_CHUNK = 1 << 15
#: A flipped statistic within this relative distance of the observed one counts as equal.
_TIE = 1e-9


def _all_signs(n_clusters: int) -> np.ndarray:
    """The 2^M sign patterns as rows (bit m of the row number flips cluster m)."""
    rows = np.arange(1 << n_clusters, dtype=np.int64)[:, None]
    bits = (rows >> np.arange(n_clusters, dtype=np.int64)) & 1
    return 1.0 - 2.0 * bits


def _exact_hits(sums: np.ndarray, threshold: float) -> int:
    """How many of the 2^M patterns have ``|sum_m s_m S_m| >= threshold``, by meeting in the
    middle: the 2^h totals of the first h clusters against the sorted 2^(M-h) totals of the
    others, counted with a binary search. 2^(M/2) log work instead of M 2^M (18 clusters:
    about 1 ms instead of 90 ms; an export of every model pair holds a hundred such rows)."""
    if threshold <= 0:
        return 1 << sums.size
    half = sums.size // 2
    left = _all_signs(half) @ sums[:half]
    right = np.sort(_all_signs(sums.size - half) @ sums[half:])
    # threshold > 0, so "total >= threshold" and "total <= -threshold" never overlap
    high = right.size - np.searchsorted(right, threshold - left, side="left")
    low = np.searchsorted(right, -threshold - left, side="right")
    return int(high.sum() + low.sum())


def sign_flip_p(cluster_sums: np.ndarray, n_random: int = 10_000,
                rng: np.random.Generator | None = None) -> float:
    """Two-sided p-value of "the differences are symmetric about 0, cluster by cluster".

    The statistic is the total of the paired differences, ``sum_m S_m`` over the clusters'
    sums; under the null hypothesis each cluster's vector of differences is as likely as its
    negation (the two conditions are exchangeable within the cluster), so every sign pattern
    ``sum_m s_m S_m`` is equally likely. The p-value is the share of patterns at least as far
    from 0 as the observed total.

    Parameters
    ----------
    cluster_sums : numpy.ndarray
        ``S_m``: the sum of the paired differences of each cluster (meeting).
    n_random : int
        Random sign patterns drawn when there are more than :data:`EXACT_CLUSTERS` clusters
        (below that all 2^M patterns are enumerated and the p-value is exact).
    rng : numpy.random.Generator, optional
        Source of the random patterns (seeded by the caller for reproducible tables).

    The test is exact only under that symmetry. With mean-zero but skewed meeting effects it
    is liberal (0.056-0.089 at 0.05 for Exp(1) - 1 effects, 8-30 meetings;
    ``bench/bench_sign_flip_size.py``); studentising the statistic would not help (the sum of
    squares is the same under every flip, so a t statistic orders the flips as the total does).

    Returns
    -------
    float
        The p-value; exact p-values are multiples of 2^-M, so with M clusters it is never
        below 2^(1-M) (M = 5 cannot reach 0.05). Random patterns give
        ``(1 + hits) / (1 + n_random)`` (Phipson & Smyth, 2010), never 0.

    References
    ----------
    Fisher, R. A. (1935). The Design of Experiments, section 21 (the sign-flip randomisation
    test). Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2008). Bootstrap-based
    improvements for inference with clustered errors. Review of Economics and Statistics,
    90(3), 414-427 (sign flips of whole clusters). Phipson, B., & Smyth, G. K. (2010).
    Permutation p-values should never be zero. Stat. Appl. Genet. Mol. Biol., 9(1).

    Examples
    --------
    >>> sign_flip_p(np.array([1.0, 2.0, 3.0]))  # 2 of the 8 patterns reach |6|
    0.25
    """
    sums = np.asarray(cluster_sums, float)
    threshold = abs(sums.sum()) * (1 - _TIE) - _TIE
    if sums.size <= EXACT_CLUSTERS:
        return _exact_hits(sums, threshold) / (1 << sums.size)
    rng = rng if rng is not None else np.random.default_rng(0)
    hits = 0
    for start in range(0, n_random, _CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(_CHUNK, n_random - start), sums.size))
        hits += int((np.abs(signs @ sums) >= threshold).sum())
    return (1 + hits) / (1 + n_random)


def bootstrap_p(replicates: np.ndarray, null: float = 0.0) -> float:
    """Two-sided p-value of ``null`` from bootstrap replicates: twice the smaller share of
    finite replicates on either side of it (at least ``1 / B``, capped at 1).

    It inverts the percentile interval: ``p < 1 - confidence`` exactly when the percentile
    interval of the same replicates leaves ``null`` out (up to the interpolation of one
    replicate), so the p-value and the interval next to it never disagree.

    References
    ----------
    Efron, B., & Tibshirani, R. J. (1993). An Introduction to the Bootstrap, section 15.4
    (achieved significance level from a confidence interval). Field, C. A., & Welsh, A. H.
    (2007). Bootstrapping clustered data. JRSS B, 69(3), 369-390.
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return float("nan")
    below = float((finite <= null).mean())
    above = float((finite >= null).mean())
    return float(min(1.0, max(2 * min(below, above), 1 / finite.size)))


def smallest_sign_flip_p(n_clusters: int) -> float:
    """The smallest p-value an exact sign-flip test over ``n_clusters`` clusters can give."""
    return 2.0 / (1 << n_clusters) if n_clusters <= EXACT_CLUSTERS else 0.0


def one_meeting_note(n_meetings: int, unit: str = "meeting") -> str:
    """The note of a row whose interval and cluster test are left empty for want of clusters
    (``unit``: what a cluster is, a meeting or an interleaved conversation)."""
    return ("" if n_meetings >= 2 else f"responses of one {unit} only: the interval and the "
            f"cluster test need 2 {unit}s or more")


def wild_cluster_p(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, n_random: int = 9_999,
                   rng: np.random.Generator | None = None) -> float:
    """Two-sided p-value of "slope 0" in ``y = a + b x``: the wild cluster bootstrap-t with the
    null imposed (WCR, Rademacher weights), the regression form of the sign-flip test.

    Under the null ``y = a + u``: the restricted residuals ``u_i = y_i - mean(y)`` of each
    cluster are flipped together (``y* = mean(y) + s_g u_i``), the slope refitted and
    studentised by its CR1 standard error (as :func:`.interleaving.cluster_slope`); ``p`` is
    the share of patterns with ``|t*| >= |t|``. All 2^G patterns up to
    :data:`EXACT_WILD` clusters (the smallest p is then 2^(1-G), so G = 5 cannot reach
    0.05), else ``n_random`` random ones, ``(1 + hits) / (1 + n_random)``. With few clusters
    and a regressor that varies between them, the CR1 t-test on G - 1 degrees of freedom
    rejects a true null far too often (4 conversations: about 0.2 at 0.05, 20: 0.07,
    ``bench/bench_validity.py``); this test holds its level (0.035-0.063 with 10-20).

    References
    ----------
    Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2008). Bootstrap-based improvements for
    inference with clustered errors. Review of Economics and Statistics, 90(3), 414-427
    (wild cluster bootstrap-t, null imposed). MacKinnon, J. G., & Webb, M. D. (2018). The
    wild bootstrap for few (treated) clusters. Econometrics Journal, 21(2), 114-135.
    """
    codes = pd.factorize(np.asarray(clusters))[0]
    g, n = int(codes.max()) + 1, x.size
    design = np.column_stack([np.ones(n), x])
    bread = np.linalg.inv(design.T @ design)
    residual = y - y.mean()
    moved = np.zeros((g, 2))  # X_g' u_g: what a cluster's flip adds to X'y
    np.add.at(moved, codes, design * residual[:, None])
    level = np.zeros((g, 2))  # X_g' 1 mean(y)
    np.add.at(level, codes, design * y.mean())
    gram = np.zeros((g, 2, 2))  # X_g' X_g
    np.add.at(gram, codes, design[:, :, None] * design[:, None, :])
    scale = g / (g - 1) * (n - 1) / (n - 2)

    def t_of(signs: np.ndarray) -> np.ndarray:
        beta = np.array([y.mean(), 0.0]) + (signs @ moved) @ bread.T
        scores = (level[None] + signs[:, :, None] * moved[None]
                  - np.einsum("gij,pj->pgi", gram, beta))
        meat = np.einsum("pgi,pgj->pij", scores, scores)
        var = np.einsum("i,pij,j->p", bread[1], meat, bread[1]) * scale
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.abs(beta[:, 1]) / np.sqrt(var)

    observed = float(t_of(np.ones((1, g)))[0])
    if not np.isfinite(observed):
        return float("nan")
    threshold = observed * (1 - _TIE)
    if g <= EXACT_WILD:
        hits = sum(int((t_of(_all_signs(g)[start:start + _CHUNK]) >= threshold).sum())
                   for start in range(0, 1 << g, _CHUNK))
        return hits / (1 << g)
    rng = rng if rng is not None else np.random.default_rng(0)
    hits = 0
    for start in range(0, n_random, _CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(_CHUNK, n_random - start), g))
        hits += int((t_of(signs) >= threshold).sum())
    return (1 + hits) / (1 + n_random)
