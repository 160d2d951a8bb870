"""The cluster tests on their own.

References: the sign-flip p-value against an enumeration of every sign pattern with
itertools (exact, 1e-12; up to 18 clusters, integer sums full of ties, against every pattern
written out as a numpy matrix, exact), its random-pattern branch against the exact value (within 4
Monte Carlo standard errors); the bootstrap p-value against the percentile interval of the
same replicates (numpy.quantile); the wild cluster bootstrap p-value against statsmodels'
cluster-robust OLS refitted on every sign pattern written out (1e-12), its random branch
against its exact one (within 4 Monte Carlo standard errors).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from elitr_core.stats import cluster_tests
from elitr_core.stats.cluster_tests import (
    bootstrap_p,
    sign_flip_p,
    smallest_sign_flip_p,
    wild_cluster_p,
)
from elitr_core.stats.interleaving import cluster_slope
from tests.elitr_core.stats.cluster_references import exact_sign_flip_p, statsmodels_wild_p


@pytest.mark.parametrize("seed", range(6))
def test_sign_flip_p_is_the_enumerated_share(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sums = np.round(rng.normal(0.5, 2, int(rng.integers(1, 13))), 1)  # ties included
    assert sign_flip_p(sums) == pytest.approx(exact_sign_flip_p(sums), abs=1e-12)


@pytest.mark.parametrize("n_clusters", [1, 2, 13, 18])
def test_sign_flip_p_counts_ties_like_every_pattern_written_out(n_clusters: int) -> None:
    """Integer sums (integer scores) put many patterns exactly on the observed total; the
    meet-in-the-middle count must take them all, like the 2^M x M matrix of every pattern."""
    sums = np.random.default_rng(n_clusters).integers(-6, 9, n_clusters).astype(float)
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=n_clusters)))
    expected = np.count_nonzero(np.abs(signs @ sums) >= abs(sums.sum())) / len(signs)
    assert sign_flip_p(sums) == expected


def test_all_zero_and_smallest_values() -> None:
    assert sign_flip_p(np.zeros(5)) == 1.0
    assert sign_flip_p(np.full(5, 2.0)) == pytest.approx(2 / 32, abs=1e-15)
    assert smallest_sign_flip_p(5) == 2 / 32 and smallest_sign_flip_p(40) == 0.0


def test_random_patterns_match_the_exact_p(monkeypatch: pytest.MonkeyPatch) -> None:
    sums = np.random.default_rng(4).normal(0.4, 1, 12)
    exact = sign_flip_p(sums)
    monkeypatch.setattr(cluster_tests, "EXACT_CLUSTERS", 5)
    drawn = sign_flip_p(sums, 40_000, np.random.default_rng(1))
    assert abs(drawn - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000) + 1 / 40_000
    assert sign_flip_p(np.full(12, 1.0), 999, np.random.default_rng(1)) >= 1 / 1000  # never 0


@pytest.mark.parametrize("shift", [-0.5, -0.1, 0.0, 0.12, 0.2, 0.4])
def test_bootstrap_p_inverts_the_percentile_interval(shift: float) -> None:
    reps = np.random.default_rng(3).normal(shift, 0.1, 2000)
    p = bootstrap_p(reps)
    for confidence in (0.8, 0.9, 0.95, 0.99):
        low, high = np.quantile(reps, [(1 - confidence) / 2, (1 + confidence) / 2])
        if abs(p - (1 - confidence)) > 2 / reps.size:
            assert (p < 1 - confidence) == (low > 0 or high < 0)
    assert 1 / reps.size <= p <= 1
    assert np.isnan(bootstrap_p(np.array([np.nan, np.inf])))


@pytest.mark.parametrize("seed", range(4))
def test_wild_cluster_p_is_statsmodels_on_every_pattern(seed: int) -> None:
    rng = np.random.default_rng(seed)
    g = int(rng.integers(3, 7))
    clusters = np.repeat(np.arange(g), rng.integers(2, 8, g))
    x = rng.normal(size=clusters.size) + rng.normal(size=g)[clusters]
    y = 0.4 * x + rng.normal(size=g)[clusters] + rng.normal(size=clusters.size)
    assert wild_cluster_p(x, y, clusters) == pytest.approx(
        statsmodels_wild_p(x, y, clusters), abs=1e-12)


def test_wild_cluster_random_patterns_match_the_exact_p(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(13), 4)
    x = rng.normal(size=13)[clusters] + rng.normal(size=clusters.size) * 0.3
    y = 0.25 * x + rng.normal(size=13)[clusters] + rng.normal(size=clusters.size)
    monkeypatch.setattr(cluster_tests, "EXACT_WILD", 13)
    exact = wild_cluster_p(x, y, clusters)
    monkeypatch.setattr(cluster_tests, "EXACT_WILD", 12)
    drawn = wild_cluster_p(x, y, clusters, 20_000, np.random.default_rng(1))
    assert 0.01 < exact < 0.5
    assert drawn == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 20_000))


def test_many_data_sets_at_once_give_each_one_its_own_p() -> None:
    """The array forms the size benchmark uses (bench/bench_validity.py) give every data set
    the p-value of the one-set function: sign flips (exact with integer ties, and random
    patterns from the same stream), the wild bootstrap (exact and random) and the CR1 test of
    interleaving.cluster_slope."""
    rng = np.random.default_rng(3)
    for m in (4, 13, 18):
        sums = rng.integers(-6, 9, (40, m)).astype(float)
        assert list(cluster_tests.sign_flip_ps(sums)) == [sign_flip_p(row) for row in sums]
    sums = rng.normal(0.3, 1, (5, 25))
    shared = cluster_tests.sign_flip_ps(sums, 3_000, np.random.default_rng(8))
    assert list(shared) == [sign_flip_p(row, 3_000, np.random.default_rng(8)) for row in sums]
    for g, n_random in ((7, 9_999), (15, 999)):
        sizes = rng.integers(3, 9, (6, g))
        data_set = np.repeat(np.arange(6), sizes.sum(1))
        codes = np.repeat(np.tile(np.arange(g), 6), sizes.ravel())
        x = rng.normal(size=codes.size) + 20
        y = rng.normal(size=(6, g))[data_set, codes] + rng.normal(size=codes.size)
        moments = cluster_tests.cluster_moments(x, y, codes, data_set, 6)
        many = cluster_tests.wild_cluster_ps(moments, n_random, np.random.default_rng(2))
        crs = cluster_tests.cr1_slope_ps(moments)
        for k in range(6):
            one = data_set == k
            assert many[k] == pytest.approx(wild_cluster_p(
                x[one], y[one], codes[one], n_random, np.random.default_rng(2)), abs=1e-12)
            assert crs[k] == pytest.approx(cluster_slope(x[one], y[one], codes[one])["p"],
                                           abs=1e-10)
