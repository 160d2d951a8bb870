"""The tuned prediction-powered sequence against an independent transcription.

The reference below is written from the module's description, one score at a time in plain
Python: the pairs' sums kept by hand, each candidate lambda's half-width formula (Kilian,
Cortinovis & Caron 2025 with PPI++'s weight, Angelopoulos, Duchi & Zrnic 2023), the
increments and their bounds, then the betting capital (Waudby-Smith & Ramdas 2023, bets
eq. 26-27) of every candidate mean on a grid, each score in the scale of its own bounds.
Tolerance: the chosen lambdas are equal; the bounds within one grid step (9 / GRID).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from elitr_core.stats import ppi_cs as module
from elitr_core.stats.confseq import betting_cs, stopping_time
from elitr_core.stats.ppi_cs import (
    Ranges,
    ppi_covers,
    ppi_cs,
    ppi_increments,
    ppi_stopping_time,
    tuned_lambdas,
)

GRID = 3000
ALPHA = 0.05


def reference_lambdas(h: list[float], j: list[float], w: list[float],
                      r: Ranges) -> list[float]:
    """The lambda before each score, from plain sums over the earlier pairs."""
    level = math.log(2 / ALPHA)
    chosen = []
    for t in range(1, len(h) + 1):
        a = [w[i] * h[i] for i in range(t - 1)]
        b = [w[i] * j[i] for i in range(t - 1)]
        n = len(a)
        ma, mb = (sum(a) / n, sum(b) / n) if n else (0.0, 0.0)
        best, best_half = None, math.inf
        for lam in [k / 20 for k in range(21)]:
            dev = sum((ai - lam * bi - (ma - lam * mb)) ** 2 for ai, bi in zip(a, b, strict=True))
            prior = 10 * 4.0 * (1 - 2 * lam * 0.5 + lam ** 2)
            v = (dev + prior) / (n + 10)
            least, most = r.score_low - lam * r.score_high, r.score_high - lam * r.score_low
            low = min(r.weight_min * least, r.weight_max * least) + lam * r.judge_mean
            high = max(r.weight_min * most, r.weight_max * most) + lam * r.judge_mean
            big_t = max(t, 100)
            bet = math.sqrt(2 * level / (v * big_t * math.log(1 + big_t)))
            est = (min(max(ma - lam * mb + lam * r.judge_mean, r.score_low), r.score_high)
                   if n else (low + high) / 2)
            half = 0.0
            for room in (est - low, high - est):
                bb = min(bet, max(0.5 / (high - low), 0.75 / max(room, 1e-9)))
                half += level / (big_t * bb) + bb * v / 2
            if half < best_half - 1e-12:
                best, best_half = lam, half
        chosen.append(best)
    return chosen


def reference_cs(x: list[float], lows: list[float], highs: list[float],
                 known: tuple[float, float]) -> tuple[list[float], list[float]]:
    """Bounds after each score: the grid means (within ``known``) whose hedged capital never
    reached 2/alpha; each score and candidate read in the [0, 1] scale of its own bounds,
    each side's capital split between a bettor capped at 1/2 and one capped at 3/4 over the
    candidate's distance to the bound it bets towards."""
    grid = np.linspace(known[0], known[1], GRID + 1)
    alive = np.ones(grid.size, bool)
    k = {name: np.ones(grid.size) for name in ("up", "down", "up2", "down2")}
    total, squares = 0.0, 0.0
    mid = (lows[0] + highs[0]) / 2
    out_lo, out_hi = [], []
    for t, (value, lo, hi) in enumerate(zip(x, lows, highs, strict=True), start=1):
        span = hi - lo
        sigma2 = (0.25 + squares / span ** 2) / t
        lam = math.sqrt(2 * math.log(2 / ALPHA) / (sigma2 * t * math.log(1 + t)))
        z, m = (value - lo) / span, (grid - lo) / span
        with np.errstate(divide="ignore"):
            k["up"] *= 1 + min(lam, 0.5) * (z - m)
            k["down"] *= 1 - min(lam, 0.5) * (z - m)
            k["up2"] *= 1 + np.minimum(lam, 0.75 / m) * (z - m)
            k["down2"] *= 1 - np.minimum(lam, 0.75 / (1 - m)) * (z - m)
        hedged = np.maximum((k["up"] + k["up2"]) / 4, (k["down"] + k["down2"]) / 4)
        alive &= hedged < 1 / ALPHA
        total += value
        squares += (value - (mid + total) / (t + 1)) ** 2
        out_lo.append(grid[alive].min())
        out_hi.append(grid[alive].max())
    return out_lo, out_hi


def _pairs(seed: int, n: int, rows: int = 1) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Human and judge scores of a population of 130 responses (the judge a noisy,
    overgenerous reading of the human), drawn uniformly; the judge's and humans' means."""
    rng = np.random.default_rng(seed)
    human = rng.choice(np.arange(1.0, 11.0), 130, p=[.1, .05, .05, .05, .05, .05, .1, .15,
                                                       .2, .2])
    judge = np.clip(np.round(human + 1 + rng.normal(0, 1.5, 130)), 1, 10)
    pick = rng.integers(0, 130, (rows, n))
    return human[pick], judge[pick], float(judge.mean()), float(human.mean())


@pytest.mark.parametrize("seed", [1, 2])
def test_lambdas_match_the_transcription(seed: int) -> None:
    h, j, mu, _ = _pairs(seed, 60)
    w = np.random.default_rng(seed).choice([0.8, 1.0, 1.6], 60)[None, :]
    r = Ranges(judge_mean=mu, weight_min=0.8, weight_max=1.6)
    got = tuned_lambdas(h, j, w, r)[0]
    want = reference_lambdas(list(h[0]), list(j[0]), list(w[0]), r)
    assert np.allclose(got, want)
    assert 0 < got[0] < 1  # before any pair: from the prior, between human-only and 1
    assert len(set(got.tolist())) > 1  # it did move with the pairs


def test_ppi_cs_matches_the_grid_transcription() -> None:
    h, j, mu, _ = _pairs(3, 120)
    r = Ranges(judge_mean=mu)
    x, low, high = ppi_increments(h, j, np.ones_like(h), r)
    assert (low <= x).all() and (x <= high).all()
    lo, hi = ppi_cs(h[0], j[0], np.ones(120), r)
    ref_lo, ref_hi = reference_cs(list(x[0]), list(low[0]), list(high[0]), (1.0, 10.0))
    step = 9 / GRID
    assert np.max(np.abs(np.minimum.accumulate(ref_hi) - hi)) <= step
    assert np.max(np.abs(np.maximum.accumulate(ref_lo) - lo)) <= step
    assert hi[-1] - lo[-1] < 3  # it did narrow


def test_lambda_zero_is_the_human_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    h, j, mu, _ = _pairs(4, 80)
    monkeypatch.setattr(module, "LAMBDAS", np.array([0.0]))
    lo, hi = ppi_cs(h[0], j[0], np.ones(80), Ranges(judge_mean=mu))
    ref_lo, ref_hi = betting_cs(h[0], 1, 10)
    assert np.allclose(lo, ref_lo, atol=1e-8) and np.allclose(hi, ref_hi, atol=1e-8)


def test_stopping_time_is_the_first_narrow_enough_interval() -> None:
    h, j, mu, _ = _pairs(5, 200, rows=3)
    r = Ranges(judge_mean=mu)
    lo, hi = ppi_cs(h, j, np.ones_like(h), r)
    got = ppi_stopping_time(h, j, np.ones_like(h), r, 0.75)
    for row, have in zip(hi - lo, got, strict=True):
        want = np.flatnonzero(row <= 1.5)[:1] + 1
        assert (have == want[0]) if want.size else np.isinf(have)


@pytest.mark.parametrize("weighted", [False, True])
def test_time_uniform_coverage_and_an_earlier_stop_than_human_only(weighted: bool) -> None:
    """400 independent simulated studies (the unit of independence) of 400 scores; MC
    standard error of a 0.95 share is 0.011. Weighted: responses drawn with probability
    proportional to pi, scores weighted by sum(pi) / (N pi)."""
    rng = np.random.default_rng(6)
    human = rng.choice(np.arange(1.0, 11.0), 130)
    judge = np.clip(np.round(human + 1 + rng.normal(0, 1.5, 130)), 1, 10)
    pi = rng.uniform(0.3, 1.0, 130) if weighted else np.ones(130)
    pick = rng.choice(130, (400, 400), p=pi / pi.sum())
    w = pi.sum() / (130 * pi[pick])
    r = Ranges(judge_mean=float(judge.mean()), weight_min=float(w.min()),
               weight_max=float(w.max()))
    truth = float(human.mean())
    assert ppi_covers(human[pick], judge[pick], w, r, truth).mean() >= 0.95
    ppi = ppi_stopping_time(human[pick], judge[pick], w, r, 0.75)
    alone = stopping_time(human[pick] * w, 1 * r.weight_min, 10 * r.weight_max, 0.75)
    assert np.median(ppi) < np.median(alone)
