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
from scipy import stats

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


def _exact_hits_rows(sums: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """:func:`_exact_hits` of every row at once: each row's sorted right-half totals are
    shifted by a multiple of a gap wider than any row's range, so one sorted array and one
    binary search serve all rows (the shifts are below 1e6, far inside the 1e-9 tie
    tolerance's reach of a double)."""
    rows, m = sums.shape
    half = m // 2
    left = sums[:, :half] @ _all_signs(half).T
    right = np.sort(sums[:, half:] @ _all_signs(m - half).T, axis=1)
    gap = 4 * (np.abs(sums).sum(1).max() + np.abs(thresholds).max()) + 1
    shift = np.arange(rows)[:, None] * gap
    flat = (right + shift).ravel()
    before = np.arange(rows)[:, None] * right.shape[1]
    t = thresholds[:, None]
    high = before + right.shape[1] - np.searchsorted(flat, t - left + shift, side="left")
    low = np.searchsorted(flat, -t - left + shift, side="right") - before
    hits = (high + low).sum(1)
    return np.where(thresholds <= 0, 1 << m, hits)


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
    return float(sign_flip_ps(np.asarray(cluster_sums, float)[None], n_random, rng)[0])


def sign_flip_ps(cluster_sums: np.ndarray, n_random: int = 10_000,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """:func:`sign_flip_p` of each row of ``cluster_sums`` (data sets x clusters), the random
    sign patterns (more than :data:`EXACT_CLUSTERS` clusters) drawn once and shared by the rows:
    each row's p-value is the one :func:`sign_flip_p` gives with the same ``rng``, and a
    simulation of many data sets costs one matrix product per chunk of patterns."""
    sums = np.asarray(cluster_sums, float)
    thresholds = np.abs(sums.sum(1)) * (1 - _TIE) - _TIE
    if sums.shape[1] <= EXACT_CLUSTERS:
        hits = (_exact_hits(sums[0], thresholds[0]) if len(sums) == 1
                else _exact_hits_rows(sums, thresholds))
        return np.asarray(hits, float).reshape(-1) / (1 << sums.shape[1])
    rng = rng if rng is not None else np.random.default_rng(0)
    hits = np.zeros(len(sums))
    for start in range(0, n_random, _CHUNK):
        signs = rng.choice([-1.0, 1.0], size=(min(_CHUNK, n_random - start), sums.shape[1]))
        hits += (np.abs(signs @ sums.T) >= thresholds).sum(0)
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
    rejects a true null far too often (4 conversations: about 0.2 at 0.05, 20: 0.08,
    ``bench/bench_validity.py``); this test holds its level (0.045-0.058 with 10-20, Monte-Carlo
    standard error 0.003).

    References
    ----------
    Cameron, A. C., Gelbach, J. B., & Miller, D. L. (2008). Bootstrap-based improvements for
    inference with clustered errors. Review of Economics and Statistics, 90(3), 414-427
    (wild cluster bootstrap-t, null imposed). MacKinnon, J. G., & Webb, M. D. (2018). The
    wild bootstrap for few (treated) clusters. Econometrics Journal, 21(2), 114-135.
    """
    codes = pd.factorize(np.asarray(clusters))[0]
    moments = cluster_moments(np.asarray(x, float), np.asarray(y, float), codes)
    return float(wild_cluster_ps(moments, n_random, rng)[0])


def cluster_moments(x: np.ndarray, y: np.ndarray, codes: np.ndarray,
                    data_set: np.ndarray | None = None, n_sets: int = 1) -> np.ndarray:
    """What a straight-line fit with cluster-robust errors needs of each cluster: its count
    and sums of ``x``, ``x^2``, ``y`` and ``x y`` (``x`` centred on each data set's mean,
    which changes no slope, standard error or test and keeps the sums small).

    ``codes`` numbers the clusters 0..G-1 within each data set; ``data_set`` (0..n_sets-1,
    default all 0) says which data set a row belongs to, every set with the same G. Returns
    an array ``(n_sets, G, 5)``."""
    data_set = np.zeros(x.size, np.int64) if data_set is None else data_set
    g = int(codes.max()) + 1
    centre = np.bincount(data_set, x, n_sets) / np.bincount(data_set, None, n_sets)
    xc = x - centre[data_set]
    cell = data_set * g + codes
    return np.stack([np.bincount(cell, w, n_sets * g)
                     for w in (None, xc, xc * xc, y, xc * y)], 1).reshape(n_sets, g, 5)


def wild_cluster_ps(moments: np.ndarray, n_random: int = 9_999,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """:func:`wild_cluster_p` of each data set from its :func:`cluster_moments` (sets x G x 5),
    every set at once; random patterns (more than :data:`EXACT_WILD` clusters) are drawn once
    and shared by the sets, as :func:`sign_flip_ps` does."""
    count, sx, sxx, sy, sxy = np.moveaxis(moments, 2, 0)  # each (sets, G)
    g = count.shape[1]
    n = count.sum(1)
    gram = np.stack([np.stack([count, sx], -1), np.stack([sx, sxx], -1)], -1)  # (s, G, 2, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        bread = np.linalg.inv(gram.sum(1))  # (s, 2, 2)
        mean_y = sy.sum(1) / n
        moved = np.stack([sy - mean_y[:, None] * count, sxy - mean_y[:, None] * sx], -1)
        # each cluster's contribution to the slope's score, bread[1] . X_g'(y*_g - X_g beta*),
        # is s_g bread[1] . moved_g - bread[1] . gram_g (beta* - (mean(y), 0)), linear in s
        m = np.einsum("si,sgi->sg", bread[:, 1], moved)
        c = np.einsum("si,sgij->sgj", bread[:, 1], gram)
        shift = np.einsum("sgi,sji->sgj", moved, bread)  # what flipping g adds to beta
        scale = g / (g - 1) * (n - 1) / (n - 2)

        # so the scores are E s with E = diag(m) - c shift' (G x G per set)
        effect = m[:, :, None] * np.eye(g) - np.matmul(c, shift.transpose(0, 2, 1))
        slope_shift = shift[..., 1]  # what flipping g adds to the slope: (sets, G)

        def t_of(signs: np.ndarray) -> np.ndarray:  # (sets, patterns)
            w = np.matmul(signs, effect.transpose(0, 2, 1))  # (sets, patterns, G)
            return np.abs(signs @ slope_shift[..., None])[..., 0] / np.sqrt(
                np.einsum("spg,spg->sp", w, w) * scale[:, None])

        observed = t_of(np.ones((1, g)))[:, 0]
    threshold = observed * (1 - _TIE)
    hits = np.zeros(len(moments))
    chunk = max(64, (1 << 21) // (len(moments) * g))  # patterns a step: arrays of ~2M values
    if g <= EXACT_WILD:
        # a pattern and its negation give the same |t|: the half with s_G = +1 counts twice
        half = _all_signs(g)[: 1 << (g - 1)]
        for start in range(0, half.shape[0], chunk):
            with np.errstate(divide="ignore", invalid="ignore"):
                hits += (t_of(half[start:start + chunk]) >= threshold[:, None]).sum(1)
        p = hits / half.shape[0]
    else:
        rng = rng if rng is not None else np.random.default_rng(0)
        for start in range(0, n_random, chunk):
            signs = rng.choice([-1.0, 1.0], size=(min(chunk, n_random - start), g))
            with np.errstate(divide="ignore", invalid="ignore"):
                hits += (t_of(signs) >= threshold[:, None]).sum(1)
        p = (1 + hits) / (1 + n_random)
    return np.where(np.isfinite(observed), p, np.nan)


def cr1_slope_ps(moments: np.ndarray) -> np.ndarray:
    """Two-sided p-value of "slope 0" of each data set from its :func:`cluster_moments`: the
    CR1 t-test on G - 1 degrees of freedom of :func:`.interleaving.cluster_slope`, every set at
    once (a simulation of its size needs thousands)."""
    count, sx, sxx, sy, sxy = np.moveaxis(moments, 2, 0)
    g, n = count.shape[1], count.sum(1)
    x_sum, xx_sum, y_sum, xy_sum = (v.sum(1) for v in (sx, sxx, sy, sxy))
    with np.errstate(divide="ignore", invalid="ignore"):
        det = n * xx_sum - x_sum**2
        slope = (n * xy_sum - x_sum * y_sum) / det
        intercept = (y_sum - slope * x_sum) / n
        # each cluster's scores X_g' u_g, projected on the slope's row of (X'X)^-1
        score_1 = sy - intercept[:, None] * count - slope[:, None] * sx
        score_x = sxy - intercept[:, None] * sx - slope[:, None] * sxx
        w = (-x_sum[:, None] * score_1 + n[:, None] * score_x) / det[:, None]
        se = np.sqrt((w * w).sum(1) * g / (g - 1) * (n - 1) / (n - 2))
        return 2 * stats.t.sf(np.abs(slope / se), g - 1)
