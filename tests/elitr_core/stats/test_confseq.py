"""Confidence sequences against an independent transcription of Waudby-Smith & Ramdas (2023).

The reference below is written from the paper, one score at a time in plain Python (bets from
the running mean and variance, eq. 26-27; the hedged capital of Theorem 3), and reads the
sequence off a grid of candidate means, where the module finds roots by bisection and
first-rejection times by bisection. Tolerance: one grid step (9 / GRID on the 1..10 scale).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from elitr_core.errors import UserError
from elitr_core.stats.confseq import (
    asymptotic_cs,
    betting_cs,
    covers,
    ipw_bounds,
    ipw_increments,
    stopping_time,
)

GRID = 4000


def reference_cs(x: list[float], low: float, high: float,
                 alpha: float = 0.05) -> tuple[list[float], list[float]]:
    """Bounds after each score: the grid means whose hedged capital never reached 1/alpha.
    Each side's capital is split between a bettor capped at 1/2 and one capped at 3/4 / m
    (3/4 / (1 - m) betting on low scores): the module's two bettors."""
    z = [(v - low) / (high - low) for v in x]
    bets, total, squares, sigma2 = [], 0.0, 0.0, 0.25
    for t, value in enumerate(z, start=1):
        bets.append(math.sqrt(2 * math.log(2 / alpha) / (sigma2 * t * math.log(1 + t))))
        total += value
        mu = (0.5 + total) / (t + 1)
        squares += (value - mu) ** 2
        sigma2 = (0.25 + squares) / (t + 1)
    grid = np.linspace(0, 1, GRID + 1)
    alive = np.ones(grid.size, bool)
    k_up, k_down = np.ones(grid.size), np.ones(grid.size)
    lows, highs = [], []
    with np.errstate(divide="ignore"):
        cap_up, cap_down = 0.75 / grid, 0.75 / (1 - grid)
    k_up2, k_down2 = np.ones(grid.size), np.ones(grid.size)
    for lam, value in zip(bets, z, strict=True):
        k_up *= 1 + min(lam, 0.5) * (value - grid)
        k_down *= 1 - min(lam, 0.5) * (value - grid)
        k_up2 *= 1 + np.minimum(lam, cap_up) * (value - grid)
        k_down2 *= 1 - np.minimum(lam, cap_down) * (value - grid)
        hedged = np.maximum(0.5 * (k_up + k_up2) / 2, 0.5 * (k_down + k_down2) / 2)
        alive &= hedged < 1 / alpha
        kept = grid[alive]
        lows.append(low + kept.min() * (high - low))
        highs.append(low + kept.max() * (high - low))
    return lows, highs


def _scores(seed: int, n: int, p: list[float] | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.choice(np.arange(1.0, 11.0), n, p=p)


PILED = [0.04, 0.02, 0.02, 0.01, 0.03, 0.03, 0.07, 0.13, 0.60, 0.05]


@pytest.mark.parametrize(("seed", "p"), [(1, None), (2, PILED), (3, PILED)])
def test_betting_cs_matches_the_grid_transcription(seed: int, p: list[float] | None) -> None:
    x = _scores(seed, 150, p)
    lo, hi = betting_cs(x, 1, 10)
    ref_lo, ref_hi = reference_cs(list(x), 1, 10)
    step = 9 / GRID
    # the grid's kept points lie inside the exact interval, within one step of its ends
    assert np.all(lo <= np.array(ref_lo) + 1e-9)
    assert np.all(hi >= np.array(ref_hi) - 1e-9)
    assert np.max(np.array(ref_lo) - lo) <= step
    assert np.max(hi - np.array(ref_hi)) <= step
    assert hi[-1] - lo[-1] < 3  # it did narrow


def test_rectifier_range_matches_the_transcription() -> None:
    rng = np.random.default_rng(4)
    d = np.clip(np.round(rng.normal(0.8, 1.2, 120)), -9, 9)
    lo, hi = betting_cs(d, -9, 9)
    ref_lo, ref_hi = reference_cs(list(d), -9, 9)
    assert np.max(np.abs(lo - ref_lo)) <= 18 / GRID
    assert np.max(np.abs(hi - ref_hi)) <= 18 / GRID


@pytest.mark.parametrize("half_width", [0.75, 1.0, 1.5])
def test_stopping_time_is_the_first_narrow_enough_interval(half_width: float) -> None:
    x = np.vstack([_scores(s, 250, PILED if s % 2 else None) for s in range(4)])
    lo, hi = betting_cs(x, 1, 10)
    expected = [np.flatnonzero(row <= 2 * half_width)[:1] + 1 for row in hi - lo]
    got = stopping_time(x, 1, 10, half_width)
    for want, have in zip(expected, got, strict=True):
        assert (have == want[0]) if want.size else np.isinf(have)


def test_covers_is_the_truth_inside_every_interval() -> None:
    x = np.vstack([_scores(s, 200, PILED) for s in range(20)])
    truth = float(np.dot(PILED, np.arange(1, 11)))
    for m in (truth, 7.0, 8.4):
        lo, hi = betting_cs(x, 1, 10)
        inside = ((lo <= m) & (m <= hi)).all(axis=1)
        assert (covers(x, 1, 10, m) == inside).all()


def test_time_uniform_coverage_holds_where_peeking_at_a_t_interval_does_not() -> None:
    """400 independent sequences (the unit of independence: one simulated study) of 300
    scores from a skewed distribution; MC standard error of a 0.95 share is 0.011."""
    rng = np.random.default_rng(5)
    x = rng.choice(np.arange(1.0, 11.0), (400, 300), p=PILED)
    truth = float(np.dot(PILED, np.arange(1, 11)))
    assert covers(x, 1, 10, truth).mean() >= 0.95
    # the fixed-n normal interval looked at every 10 scores misses far more often
    n = np.arange(10, 301, 10)
    means = np.cumsum(x, axis=1)[:, n - 1] / n
    sds = np.array([[x[i, :k].std(ddof=1) for k in n] for i in range(len(x))])
    peeked = (np.abs(means - truth) <= 1.96 * sds / np.sqrt(n)).all(axis=1).mean()
    assert peeked < 0.9


def test_asymptotic_cs_is_the_papers_formula() -> None:
    x = np.array([3.0, 7.0, 9.0, 9.0, 2.0, 8.0])
    lo, hi = asymptotic_cs(x, 0.9, optimal_at=50)
    alpha, t = 0.1, 6
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / 50
    sd = float(np.std(x))
    half = sd * math.sqrt((t * rho2 + 1) / (t * t * rho2) * 2
                          * math.log(math.sqrt(t * rho2 + 1) / alpha))
    assert hi[-1] == pytest.approx(x.mean() + half, rel=1e-12)
    assert lo[-1] == pytest.approx(x.mean() - half, rel=1e-12)
    assert np.isnan(lo[0])


def test_ipw_increments_average_to_the_population_mean() -> None:
    rng = np.random.default_rng(6)
    y = rng.integers(1, 11, 50).astype(float)
    pi = rng.uniform(0.1, 0.9, 50)
    q = pi / pi.sum()
    increments = ipw_increments(y, pi, pi.sum(), 50)
    assert float(q @ increments) == pytest.approx(y.mean(), rel=1e-12)
    lo, hi = ipw_bounds(1, 10, pi.min(), pi.max(), pi.sum(), 50)
    assert lo <= increments.min() and increments.max() <= hi
    lo, hi = ipw_bounds(-9, 9, pi.min(), pi.max(), pi.sum(), 50)
    assert lo == pytest.approx(-hi)


def test_bad_input_is_one_clear_error() -> None:
    with pytest.raises(UserError, match="outside 1..10"):
        betting_cs(np.array([1.0, 11.0]), 1, 10)
    with pytest.raises(UserError, match="missing"):
        covers(np.array([1.0, np.nan]), 1, 10, 5)
    with pytest.raises(UserError, match="half-width"):
        stopping_time(np.array([1.0, 2.0]), 1, 10, 0)
    with pytest.raises(UserError, match="probability"):
        ipw_increments(np.array([1.0]), np.array([0.0]), 1.0, 1)
