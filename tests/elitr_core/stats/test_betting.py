"""Betting confidence intervals for bounded means (Waudby-Smith & Ramdas 2024).

References: a scalar transcription of the paper's hedged capital process (predictable plug-in
empirical-Bernstein bets truncated at c/m and c/(1-m), written with Python loops over steps and
candidate means; bounds equal on the same grid, 1e-12); ``confseq``'s ``betting_ci`` where that
package is importable (it compiles C++ against Boost at install, so CI skips it; its defaults
``trunc_scale=1/2, m_trunc=True`` are this module's truncation); the coverage guarantee by
simulation on the two-point distribution at the scale's ends, where the t interval fails (3,000
samples, Monte-Carlo standard error 0.004), and on samples stored sorted by value, where betting
in the stored order loses it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from elitr_core.errors import UserError
from elitr_core.stats.betting import betting_interval


def scalar_interval(x: list[float], low: float, high: float, alpha: float,
                    breaks: int, c: float = 0.5) -> tuple[float, float]:
    """The hedged betting interval, one candidate mean and one step at a time."""
    z = [(v - low) / (high - low) for v in x]
    n = len(z)
    bets, total, squares = [], 0.0, 0.0
    previous_variance = 0.25
    for t, value in enumerate(z, start=1):
        bets.append(math.sqrt(2 * math.log(2 / alpha) / (n * previous_variance)))
        total += value
        mean = (0.5 + total) / (t + 1)
        squares += (value - mean) ** 2
        previous_variance = (0.25 + squares) / (t + 1)
    kept = []
    for j in range(1, breaks):
        m = j / breaks
        up = down = 1.0
        rejected = False
        for bet, value in zip(bets, z, strict=True):
            up *= 1 + min(bet, c / m) * (value - m)
            down *= 1 - min(bet, c / (1 - m)) * (value - m)
            if max(up, down) / 2 >= 1 / alpha:
                rejected = True
                break
        if not rejected:
            kept.append(m)
    lo, hi = max(kept[0] - 1 / breaks, 0.0), min(kept[-1] + 1 / breaks, 1.0)
    return low + lo * (high - low), low + hi * (high - low)


SAMPLES = [
    [9, 9, 1, 9, 8, 9, 9, 10, 9, 7],
    [1, 1, 1, 2, 1, 5, 9, 1, 1, 3, 1, 2],
    [5.5, 6.0, 7.25, 4.0, 8.5, 6.0, 5.0],
]


@pytest.mark.parametrize("sample", SAMPLES)
def test_equals_the_scalar_transcription(sample: list[float]) -> None:
    lo, hi = betting_interval(np.array(sample, float), 1, 10, 0.95, breaks=200, seed=None)
    ref = scalar_interval(sample, 1, 10, 0.05, 200)
    assert (float(lo), float(hi)) == pytest.approx(ref, abs=1e-12)
    assert lo <= np.mean(sample) <= hi
    # rows are independent samples: the 2-D form gives each row its own interval
    lows, highs = betting_interval(np.array([sample, sample[::-1]], float), 1, 10, 0.95, 200,
                                   seed=None)
    assert (lows[0], highs[0]) == pytest.approx((lo, hi), abs=1e-12)
    assert (lows[1], highs[1]) == pytest.approx(
        scalar_interval(sample[::-1], 1, 10, 0.05, 200), abs=1e-12)
    # c = 3/4, the paper's other suggestion
    c75 = betting_interval(np.array(sample, float), 1, 10, 0.95, 200, seed=None,
                           truncation=0.75)
    assert (float(c75[0]), float(c75[1])) == pytest.approx(
        scalar_interval(sample, 1, 10, 0.05, 200, c=0.75), abs=1e-12)


@pytest.mark.parametrize("sample", SAMPLES)
def test_bets_in_a_seeded_random_order(sample: list[float]) -> None:
    """By default each row is bet in the order of a permutation drawn from seed 0: the same
    interval as the scalar transcription on the scores in that order, every time."""
    x = np.array(sample, float)
    order = np.random.default_rng(0).random((1, x.size)).argsort(axis=1)[0]
    lo, hi = betting_interval(x, 1, 10, 0.95, breaks=200)
    assert (float(lo), float(hi)) == pytest.approx(
        scalar_interval(list(x[order]), 1, 10, 0.05, 200), abs=1e-12)
    assert betting_interval(x, 1, 10, 0.95, breaks=200) == (lo, hi)


def test_keeps_its_coverage_on_scores_stored_sorted_by_value() -> None:
    """Scores read back sorted by something that tracks them (here: by the score itself).
    Betting in that order, the capital runs away from the true mean: 30 scores from the
    two-humped distribution cover 0.24-0.30 and 100 scores not at all (an empty interval).
    The random order restores the guarantee (400 samples, Monte-Carlo se 0.011)."""
    p = np.array([0.22, 0.06, 0.05, 0.05, 0.06, 0.07, 0.08, 0.10, 0.11, 0.20])
    truth = float(p @ np.arange(1.0, 11.0))
    rng = np.random.default_rng(3)
    for n in (30, 100):
        y = np.sort(rng.choice(np.arange(1.0, 11.0), (400, n), p=p), axis=1)
        for stored in (y, y[:, ::-1]):
            lo, hi = betting_interval(stored, 1, 10, 0.95)
            assert ((lo <= truth) & (truth <= hi)).mean() >= 0.95
            given = betting_interval(stored, 1, 10, 0.95, seed=None)
            assert ((given[0] <= truth) & (truth <= given[1])).mean() < 0.5


def test_the_papers_truncation_is_narrower_than_a_cap_of_1_and_still_covers() -> None:
    """Uniform scores on 1..10, 10 a sample (400 samples): bets truncated at c/m and c/(1-m)
    give intervals 38% narrower than bets capped at 1 (5.0 against 8.1 points), both covering."""
    rng = np.random.default_rng(5)
    y = rng.integers(1, 11, (400, 10)).astype(float)
    lo, hi = betting_interval(y, 1, 10, 0.95)
    capped = betting_interval(y, 1, 10, 0.95, truncation=None)
    assert ((lo <= 5.5) & (5.5 <= hi)).mean() >= 0.95
    assert (hi - lo).mean() < 0.7 * (capped[1] - capped[0]).mean()


def test_equals_confseq_where_installed() -> None:
    betting = pytest.importorskip("confseq.betting")
    rng = np.random.default_rng(1)
    for n in (10, 30, 100):
        y = rng.choice(np.arange(1.0, 11.0), n, p=np.array([3, 1, 1, 1, 1, 2, 3, 6, 60, 22]) / 100)
        lo, hi = betting.betting_ci((y - 1) / 9, alpha=0.05, breaks=1000)
        mine = betting_interval(y, 1, 10, 0.95, breaks=1000, seed=None)
        assert (float(mine[0]), float(mine[1])) == pytest.approx((1 + 9 * lo, 1 + 9 * hi),
                                                                 abs=1e-4)


def test_keeps_its_coverage_where_the_t_interval_fails() -> None:
    """Scores 10 with probability 0.1, else 1 (mean 1.9), 10 per sample: 35% of samples are
    all 1s, where the t interval has width 0."""
    rng = np.random.default_rng(7)
    y = np.where(rng.random((3000, 10)) < 0.1, 10.0, 1.0)
    truth = 1.9
    lo, hi = betting_interval(y, 1, 10, 0.95)
    betting = ((lo <= truth) & (truth <= hi)).mean()
    half = stats.t.ppf(0.975, 9) * y.std(axis=1, ddof=1) / np.sqrt(10)
    t = (np.abs(y.mean(axis=1) - truth) <= half).mean()
    assert betting >= 0.95 and t < 0.70
    assert (lo >= 1).all() and (hi <= 10).all()


def test_bad_input_is_one_sentence() -> None:
    with pytest.raises(UserError, match="outside 1..10"):
        betting_interval(np.array([0.0, 3.0]), 1, 10)
    with pytest.raises(UserError, match="confidence"):
        betting_interval(np.array([2.0, 3.0]), 1, 10, confidence=95)
    with pytest.raises(UserError, match="truncation"):
        betting_interval(np.array([2.0, 3.0]), 1, 10, truncation=1.0)
    with pytest.raises(UserError, match="high > low"):
        betting_interval(np.array([2.0, 3.0]), 10, 1)
