"""The CR2 cluster-robust slope and its Satterthwaite degrees of freedom, against three
independent references: the textbook formulas with full n x n matrices
(``cluster_references.dense_cr2``, 1e-9 relative), statsmodels' HC2 (CR2 with one observation
a cluster; 1e-9 relative) and the closed form of a balanced two-group design with ``x``
constant within each cluster (Welch's variance of the cluster means on G - 2 degrees of
freedom, by hand; 1e-12)."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from elitr_core.stats import cluster_tests
from elitr_core.stats.cluster_robust import cr2_slope, cr2_slope_fits, cr2_slope_ps
from elitr_core.stats.interleaving import cluster_slope
from tests.elitr_core.stats.cluster_references import dense_cr2


@pytest.mark.parametrize("seed", range(8))
def test_cr2_equals_the_textbook_formulas(seed: int) -> None:
    """Unequal clusters of 1-7 answers, 2-7 clusters, ``x`` varying within and between."""
    rng = np.random.default_rng(seed)
    g = int(rng.integers(2, 8))
    codes = np.repeat(np.arange(g), rng.integers(1, 8, g))
    x = rng.normal(size=g)[codes] * 3 + rng.normal(size=codes.size) + 16
    y = rng.normal(size=g)[codes] + rng.normal(size=codes.size)
    fit = cr2_slope(x, y, codes)
    se, df = dense_cr2(x, y, codes)
    assert fit["se"] == pytest.approx(se, rel=1e-9) and fit["df"] == pytest.approx(df, rel=1e-9)
    slope = np.polyfit(x, y, 1)[0]
    half = stats.t.ppf(0.975, df) * se
    assert (fit["ci_low"], fit["ci_high"]) == pytest.approx((slope - half, slope + half),
                                                            rel=1e-9)
    assert fit["p"] == pytest.approx(2 * stats.t.sf(abs(slope / se), df), rel=1e-9)


def test_a_cluster_of_leverage_one_takes_the_pseudo_inverse() -> None:
    """One answer alone at span 5, every other at span 1: that answer's leverage is 1, its
    ``I - H_gg`` is 0 (pseudo-inverse: its residual, 0, adds nothing)."""
    x = np.array([5.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    y = np.array([6.0, 1.0, 2.0, 4.0, 2.0, 5.0])
    codes = np.array([0, 1, 1, 2, 2, 2])
    fit = cr2_slope(x, y, codes)
    se, df = dense_cr2(x, y, codes)
    assert fit["se"] > 0 and fit["se"] == pytest.approx(se, rel=1e-9)
    assert fit["df"] == pytest.approx(df, rel=1e-9)


def test_one_answer_a_cluster_is_statsmodels_hc2() -> None:
    rng = np.random.default_rng(11)
    x = rng.uniform(4, 32, 15)
    y = 0.1 * x + rng.standard_t(3, 15)
    fit = cr2_slope(x, y, np.arange(15))
    reference = sm.OLS(y, sm.add_constant(x)).fit(cov_type="HC2")
    assert fit["slope"] == pytest.approx(reference.params[1], rel=1e-9)
    assert fit["se"] == pytest.approx(reference.bse[1], rel=1e-9)


def test_balanced_two_groups_give_welch_on_g_minus_2_degrees_of_freedom() -> None:
    """Six clusters of four answers, three at span 0 and three at 1: the slope is the
    difference of the groups' means, the CR2 variance the sum of each group's variance of
    its cluster means over 3, and the degrees of freedom 2 (3 - 1) = 4."""
    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(6), 4)
    x = (codes >= 3).astype(float)
    y = rng.normal(size=6)[codes] + rng.normal(size=24)
    means = np.array([y[codes == g].mean() for g in range(6)])
    fit = cr2_slope(x, y, codes)
    welch = means[:3].var(ddof=1) / 3 + means[3:].var(ddof=1) / 3
    assert fit["slope"] == pytest.approx(means[3:].mean() - means[:3].mean(), abs=1e-12)
    assert fit["se"] ** 2 == pytest.approx(welch, abs=1e-12)
    assert fit["df"] == pytest.approx(4.0, abs=1e-12)
    # CR1 on the same data: G/(G-1) times the uncorrected sandwich, t on 5 degrees of freedom
    cr1 = cluster_slope(x, y, codes)
    assert cr1["ci_high"] - cr1["ci_low"] < fit["ci_high"] - fit["ci_low"]


def test_many_data_sets_at_once_give_each_one_its_own_fit() -> None:
    """The array form the coverage benchmark uses (bench/bench_validity.py) fits every data
    set as the one-set function does."""
    rng = np.random.default_rng(6)
    sets, g = 7, 5
    sizes = rng.integers(2, 9, (sets, g))
    data_set = np.repeat(np.arange(sets), sizes.sum(1))
    codes = np.repeat(np.tile(np.arange(g), sets), sizes.ravel())
    x = rng.uniform(4, 32, (sets, g))[data_set, codes] + rng.normal(size=codes.size)
    y = rng.normal(size=(sets, g))[data_set, codes] + rng.normal(size=codes.size)
    moments = cluster_tests.cluster_moments(x, y, codes, data_set, sets)
    fits, ps = cr2_slope_fits(moments), cr2_slope_ps(moments)
    for k in range(sets):
        one = cr2_slope(x[data_set == k], y[data_set == k], codes[data_set == k])
        for key in ("slope", "se", "df"):
            assert fits[key][k] == pytest.approx(one[key], rel=1e-9)
        assert ps[k] == pytest.approx(one["p"], rel=1e-9)


def test_no_spread_in_x_gives_no_fit() -> None:
    fit = cr2_slope(np.full(6, 2.0), np.arange(6.0), np.repeat([0, 1, 2], 2))
    assert np.isnan(fit["slope"]) and np.isnan(fit["se"]) and np.isnan(fit["p"])
