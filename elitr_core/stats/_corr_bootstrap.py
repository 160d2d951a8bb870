"""Cluster-bootstrap replicates of Pearson, Spearman and Kendall without building replicates.

Every function takes the paired scores ``x``, ``y``, the cluster (question) code of each pair,
0..G-1, and the cluster counts ``weights`` (B replicates x G clusters; row b says how many times
replicate b drew each cluster). It returns the B replicate statistics, each equal to what scipy
returns on the explicitly resampled data, NaN where the statistic is undefined (a replicate
where one evaluator is constant).

- Pearson: the six moments (n, sums, sums of squares and products) are additive over
  clusters, so replicate moments are ``weights @ per-cluster moments``.
- Spearman and Kendall: with few distinct values (the 1..10 scale, means of a few samples) the
  replicate's joint table of value counts ``M_b[u, v]`` is ``weights @ per-cluster tables``;
  mid-ranks are cumulative counts of ``M_b``'s marginals, and concordant / discordant pair counts
  are sums of ``M_b`` times its quadrant cumulative sums (Knight's tau-b on a table).
- Otherwise Spearman gathers per-replicate mid-ranks at the (cluster, x value, y value) cells,
  and Kendall falls back to explicit resampling with scipy, at most ``KENDALL_MAX_EXPLICIT``
  replicates.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from scipy import sparse, stats

#: largest joint table (distinct x values x distinct y values) handled by the table algorithms
GRID_LIMIT = 20_000
#: Kendall replicates computed explicitly when the table is too large (O(n log n) each)
KENDALL_MAX_EXPLICIT = 200
#: floats per chunk of replicates (bounds the working memory to a few tens of MB)
_CHUNK_CELLS = 2_000_000


def _chunks(n_rows: int, cells_per_row: int) -> Iterator[slice]:
    step = max(1, _CHUNK_CELLS // max(cells_per_row, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def _corr_from_moments(moments: Sequence[np.ndarray], scale: float) -> np.ndarray:
    """Pearson r from weighted moments (n, sx, sy, sxx, syy, sxy); NaN where a variance vanishes.

    A variance counts as zero below ``1e-10 * scale`` per observation.
    """
    n, sx, sy, sxx, syy, sxy = moments
    with np.errstate(divide="ignore", invalid="ignore"):
        vx = sxx - sx * sx / n
        vy = syy - sy * sy / n
        cov = sxy - sx * sy / n
        # rounding leaves ~1e-16 of variance in constant replicates: treat it as zero
        tiny = 1e-10 * scale * n
        r = cov / np.sqrt(vx * vy)
        r[(vx <= tiny) | (vy <= tiny)] = np.nan
    return np.clip(r, -1.0, 1.0)


def bootstrap_pearson(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                      weights: np.ndarray) -> np.ndarray:
    """Pearson r of each replicate from per-cluster moments (centred for accuracy)."""
    xc, yc = x - x.mean(), y - y.mean()
    per_cluster = np.stack([np.bincount(clusters, w, weights.shape[1])
                            for w in (None, xc, yc, xc * xc, yc * yc, xc * yc)], axis=1)
    moments = weights @ per_cluster
    scale = max(float(xc.var()), float(yc.var()))
    return _corr_from_moments(tuple(moments.T), scale)


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, inverse = np.unique(values, return_inverse=True)
    return inverse.ravel(), uniques.size


def _joint_tables(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                  n_clusters: int) -> tuple[sparse.csr_matrix, int, int]:
    """Per-cluster joint counts of (x value, y value): sparse, clusters x (U * V)."""
    xi, n_u = _codes(x)
    yi, n_v = _codes(y)
    tables = sparse.csr_matrix((np.ones(x.size), (clusters, xi * n_v + yi)),
                               shape=(n_clusters, n_u * n_v))
    return tables, n_u, n_v


def _replicate_tables(tables: sparse.csr_matrix, w: np.ndarray, n_u: int,
                      n_v: int) -> np.ndarray:
    """Joint count tables of a chunk of replicates: (b, U, V)."""
    return np.asarray((tables.T @ w.T).T).reshape(w.shape[0], n_u, n_v)


def _midranks(counts: np.ndarray) -> np.ndarray:
    """Mid-rank of each distinct value given its (replicate) count: rows are replicates."""
    return np.cumsum(counts, axis=1) - (counts - 1) / 2


def _spearman_from_tables(m: np.ndarray) -> np.ndarray:
    nx, ny = m.sum(2), m.sum(1)
    rx, ry = _midranks(nx), _midranks(ny)
    n = nx.sum(1)
    sxy = np.einsum("bu,buv,bv->b", rx, m, ry)
    moments = (n, (nx * rx).sum(1), (ny * ry).sum(1), (nx * rx * rx).sum(1),
               (ny * ry * ry).sum(1), sxy)
    return _corr_from_moments(moments, 1.0)


def _kendall_from_tables(m: np.ndarray) -> np.ndarray:
    """Tau-b of each replicate's joint table (pairs counted within the resampled data)."""
    # below[u, v]: m summed over the rows u' > u (column v); upto[u, v]: below summed over
    # v' <= v. A pair of cells (u, v), (u' > u, v') is concordant for v' > v, discordant for
    # v' < v, so concordant minus discordant at (u, v) is (row total - upto) - (upto - below):
    # two cumulative sums instead of four. Counts are whole numbers: the sums are exact.
    below = np.zeros_like(m)
    below[:, :-1] = m[:, :0:-1].cumsum(1)[:, ::-1]
    upto = below.cumsum(2)
    balance = (m * (upto[:, :, -1:] - 2 * upto + below)).sum((1, 2))
    n = m.sum((1, 2))
    pairs = n * (n - 1) / 2
    tx, ty = m.sum(2), m.sum(1)
    untied_x = pairs - (tx * (tx - 1) / 2).sum(1)
    untied_y = pairs - (ty * (ty - 1) / 2).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = balance / np.sqrt(untied_x * untied_y)
    tau[(untied_x <= 0) | (untied_y <= 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _by_tables(x: np.ndarray, y: np.ndarray, clusters: np.ndarray, weights: np.ndarray,
               statistic: str) -> np.ndarray:
    tables, n_u, n_v = _joint_tables(x, y, clusters, weights.shape[1])
    weights = weights.astype(float)
    compute = _spearman_from_tables if statistic == "spearman" else _kendall_from_tables
    # the Kendall cumulative sums hold about 4 tables per replicate at once
    out = [compute(_replicate_tables(tables, weights[s], n_u, n_v))
           for s in _chunks(weights.shape[0], 4 * n_u * n_v)]
    return np.concatenate(out)


def _spearman_by_cells(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                       weights: np.ndarray) -> np.ndarray:
    """Spearman for many distinct values: gather mid-ranks at the occupied cells."""
    n_clusters = weights.shape[1]
    xi, n_u = _codes(x)
    yi, n_v = _codes(y)
    count_x = sparse.csr_matrix((np.ones(x.size), (clusters, xi)), shape=(n_clusters, n_u))
    count_y = sparse.csr_matrix((np.ones(y.size), (clusters, yi)), shape=(n_clusters, n_v))
    cells, mult = np.unique(np.stack([clusters, xi, yi]), axis=1, return_counts=True)
    weights = weights.astype(float)
    out = []
    for s in _chunks(weights.shape[0], cells.shape[1] + n_u + n_v):
        w = weights[s]
        nx = np.asarray((count_x.T @ w.T).T)
        ny = np.asarray((count_y.T @ w.T).T)
        rx, ry = _midranks(nx), _midranks(ny)
        sxy = (w[:, cells[0]] * mult * rx[:, cells[1]] * ry[:, cells[2]]).sum(1)
        moments = (nx.sum(1), (nx * rx).sum(1), (ny * ry).sum(1), (nx * rx * rx).sum(1),
                   (ny * ry * ry).sum(1), sxy)
        out.append(_corr_from_moments(moments, 1.0))
    return np.concatenate(out)


def resample_indices(clusters: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices of the explicit replicate that draws cluster g ``counts[g]`` times."""
    order = np.argsort(clusters, kind="stable")
    starts = np.searchsorted(clusters[order], np.arange(counts.size))
    ends = np.append(starts[1:], clusters.size)
    drawn = np.repeat(np.arange(counts.size), counts)
    return np.concatenate([order[starts[g]:ends[g]] for g in drawn])


def _kendall_explicit(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                      weights: np.ndarray) -> np.ndarray:
    out = []
    for counts in weights[:KENDALL_MAX_EXPLICIT]:
        idx = resample_indices(clusters, counts)
        xs, ys = x[idx], y[idx]
        constant = np.ptp(xs) == 0 or np.ptp(ys) == 0
        out.append(np.nan if constant else stats.kendalltau(xs, ys).statistic)
    return np.asarray(out, float)


def kendall_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row pair ``a[r]``, ``b[r]`` (two ``(R, n)`` arrays) over the
    entries finite in both: what ``scipy.stats.kendalltau`` returns on them, from the same
    integer counts (concordant minus discordant pairs, pairs untied on each side) by the same
    float operations; NaN below 3 such entries or with one side constant on them. All pairs
    of a row at once, O(R n^2): for short rows (a few models) in many replicates, where a
    scipy call per row costs a millisecond."""
    ok = np.isfinite(a) & np.isfinite(b)
    i, j = np.triu_indices(a.shape[1], 1)
    both = ok[:, i] & ok[:, j]
    with np.errstate(invalid="ignore"):
        sa = np.where(both, np.sign(a[:, i] - a[:, j]), 0).astype(np.int64)
        sb = np.where(both, np.sign(b[:, i] - b[:, j]), 0).astype(np.int64)
    untied_a, untied_b = np.abs(sa).sum(1), np.abs(sb).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (sa * sb).sum(1) / np.sqrt(untied_a) / np.sqrt(untied_b)
    tau = np.minimum(1.0, np.maximum(-1.0, tau))
    tau[(ok.sum(1) < 3) | (untied_a == 0) | (untied_b == 0)] = np.nan
    return tau


def _grid_size(x: np.ndarray, y: np.ndarray) -> int:
    return np.unique(x).size * np.unique(y).size


def bootstrap_spearman(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                       weights: np.ndarray) -> np.ndarray:
    """Spearman rho (Pearson on mid-ranks within each replicate) of each replicate."""
    if _grid_size(x, y) <= GRID_LIMIT:
        return _by_tables(x, y, clusters, weights, "spearman")
    return _spearman_by_cells(x, y, clusters, weights)


def bootstrap_kendall(x: np.ndarray, y: np.ndarray, clusters: np.ndarray,
                      weights: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each replicate (explicit and capped on very fine-grained scores)."""
    if _grid_size(x, y) <= GRID_LIMIT:
        return _by_tables(x, y, clusters, weights, "kendall")
    return _kendall_explicit(x, y, clusters, weights)
