"""Benchmark: coverage and width of the human-corrected means' 95% intervals at small n.

Run ``python bench/bench_ppi_coverage.py [--full] [--out FILE]`` (default: 200 replicates per
cell, 53 s on the shared 2-core machine at load 8-9, Monte-Carlo standard error 0.015: enough to
tell 0.83 from 0.95; ``--full``: 4,000, standard error 0.0035, 1,311 s at load 12-17). Each
replicate draws a fresh population of ``--population`` (judge, human) pairs of one model from a
distribution with a known mean, the truth every estimator targets; humans score ``n`` of them
(10, 30, 100): uniformly for human-only, PPI and PPI++, or by active sampling (each drawn with a
probability favouring mid-scale judge scores, ``n`` in expectation) for the inverse-probability-
weighted estimator. The distributions:

- ``bundled MODEL``: the model's own (gpt-4, gold-human) pairs on the bundled test2 QA-st data
  (130 per model), resampled with replacement; the truth is their gold-human mean. GPT-4's
  humans give 9 to 74 of its 130 answers, LongAlpaca-7B's give 1 to 52;
- ``two-humped close`` / ``loose``: human scores from a two-humped distribution like the pooled
  gold-human scores, a judge that adds +0.8 and Gaussian noise (sd 1 or 2), rounded, clipped;
- ``skewed-high``: P(10) = 0.34, most of the rest at 7-9 (a model humans mostly like);
  ``piled-at-9``: P(9) = 0.6, a few 1-3s (like GPT-4's), with the close judge.

For every cell the table gives the share of intervals covering the truth and their mean width:
the project's small-sample t intervals (``interval="t"``) and, for human-only and PPI, the
betting intervals for bounded scores (:mod:`elitr_core.stats.betting`; for PPI the rectifier
``y - f`` on -9..9 and the judge mean on 1..10 at 97.5% each, added). The estimators are the
vectorised ones of :mod:`elitr_core.stats.ppi_designs` (tested equal to
:func:`~elitr_core.stats.ppi.ppi_mean` & co. one replicate at a time). Figures are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish  # noqa: E402
from elitr_core.stats.active import selection_probabilities  # noqa: E402
from elitr_core.stats.betting import betting_interval  # noqa: E402
from elitr_core.stats.intervals import quantile  # noqa: E402
from elitr_core.stats.ppi_designs import active_estimates, uniform_estimates  # noqa: E402

LEVELS = np.arange(1.0, 11.0)
#: P(human score = 1..10) of the synthetic distributions
SYNTHETIC = {
    "two-humped": np.array([0.22, 0.06, 0.05, 0.05, 0.06, 0.07, 0.08, 0.10, 0.11, 0.20]),
    "skewed-high": np.array([0.02, 0.02, 0.02, 0.03, 0.04, 0.06, 0.09, 0.16, 0.22, 0.34]),
    "piled-at-9": np.array([0.04, 0.02, 0.02, 0.01, 0.03, 0.03, 0.07, 0.13, 0.60, 0.05]),
}
SYNTHETIC_JUDGES = {"two-humped close": ("two-humped", 1.0),
                    "two-humped loose": ("two-humped", 2.0),
                    "skewed-high": ("skewed-high", 1.0), "piled-at-9": ("piled-at-9", 1.0)}
BUNDLED_MODELS = ("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B")
SIZES = (10, 30, 100)
ESTIMATORS = ("human-only", "ppi", "ppi++", "active")
BOUNDED = ("human-only", "ppi")
FLOOR = 0.94
Draw = Callable[[np.random.Generator, int, int], tuple[np.ndarray, np.ndarray]]


def synthetic(name: str, noise: float) -> tuple[Draw, float]:
    """Draws of (human, judge) populations from a synthetic distribution, and its mean."""
    p = SYNTHETIC[name] / SYNTHETIC[name].sum()

    def draw(rng: np.random.Generator, replicates: int, size: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
        y = rng.choice(LEVELS, (replicates, size), p=p)
        return y, np.clip(np.round(y + 0.8 + rng.normal(0, noise, y.shape)), 1, 10)
    return draw, float(p @ LEVELS)


def empirical(y0: np.ndarray, f0: np.ndarray) -> tuple[Draw, float]:
    """Draws of populations resampled from one model's (human, judge) pairs, and its mean."""
    def draw(rng: np.random.Generator, replicates: int, size: int) -> tuple[np.ndarray,
                                                                            np.ndarray]:
        pick = rng.integers(0, y0.size, (replicates, size))
        return y0[pick], f0[pick]
    return draw, float(y0.mean())


def distributions() -> dict[str, tuple[Draw, float]]:
    """The bundled models' own (gpt-4, gold-human) pairs, then the synthetic distributions."""
    from elitr_core.data.benchmark import bundled_files, scores_frame
    from elitr_core.stats.pairs import judge_human_table

    df = scores_frame(bundled_files())
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]
    pairs = judge_human_table(df, "gpt-4", "gold-human").dropna(subset=["human"])
    out = {f"bundled {m}": empirical(g["human"].to_numpy(float), g["judge"].to_numpy(float))
           for m, g in pairs.groupby("model") if m in BUNDLED_MODELS}
    out.update({label: synthetic(*spec) for label, spec in SYNTHETIC_JUDGES.items()})
    return out


def uniform_masks(rng: np.random.Generator, replicates: int, size: int, n: int) -> np.ndarray:
    """Exactly ``n`` labelled responses per replicate, drawn without replacement."""
    return rng.random((replicates, size)).argsort(axis=1).argsort(axis=1) < n


def active_draws(rng: np.random.Generator, f: np.ndarray,
                 n: int) -> tuple[np.ndarray, np.ndarray]:
    """Poisson sampling with the ``middle`` uncertainty rule, ``n`` expected per replicate."""
    pi = np.vstack([selection_probabilities(1 - np.abs(row - 5.5) / 4.5, n) for row in f])
    return rng.random(f.shape) < pi, pi


def t_cover(truth: float, estimate: np.ndarray, se: np.ndarray,
            df: np.ndarray) -> tuple[float, float]:
    """Share of 95% t intervals covering ``truth`` and their mean width (where defined)."""
    ok = np.isfinite(estimate) & np.isfinite(se) & ~np.isnan(df)
    half = quantile(0.95, df[ok]) * se[ok]
    return float((np.abs(estimate[ok] - truth) <= half).mean()), float(2 * half.mean())


def bounded_cover(truth: float, y: np.ndarray, f: np.ndarray, labelled: np.ndarray,
                  n: int, design: str) -> tuple[float, float]:
    """Coverage and mean width of the betting intervals (human-only, or PPI as the sum of the
    rectifier's and the unlabelled judge mean's intervals at 97.5% each)."""
    size = y.shape[1]
    y_l = y[labelled].reshape(-1, n)  # labelled scores in population order (a random order)
    if design == "human-only":
        low, high = betting_interval(y_l, 1, 10, 0.95)
    else:
        f_l = f[labelled].reshape(-1, n)
        f_u = f[~labelled].reshape(-1, size - n)
        r_low, r_high = betting_interval(y_l - f_l, -9, 9, 0.975)
        j_low, j_high = betting_interval(f_u, 1, 10, 0.975)
        low, high = r_low + j_low, r_high + j_high
    return float(((low <= truth) & (truth <= high)).mean()), float((high - low).mean())


def cell(rng: np.random.Generator, draw: Draw, truth: float, replicates: int, size: int,
         n: int) -> dict[str, tuple[float, float, float, float]]:
    """Estimator -> (t coverage, t width, betting coverage, betting width) for one cell."""
    y, f = draw(rng, replicates, size)
    labelled = uniform_masks(rng, replicates, size, n)
    drawn, pi = active_draws(rng, f, n)
    out = {}
    nan = float("nan")
    for name in ESTIMATORS:
        if name == "active":
            t = t_cover(truth, *active_estimates(y, f, drawn, pi, "t"))
        else:
            t = t_cover(truth, *uniform_estimates(y, f, labelled, name, "t"))
        bounded = bounded_cover(truth, y, f, labelled, n, name) if name in BOUNDED \
            else (nan, nan)
        out[name] = (*t, *bounded)
    return out


Results = dict[tuple[str, int], dict[str, tuple[float, float, float, float]]]


def _mark(value: float) -> str:
    if np.isnan(value):
        return "–"
    return f"{value:.3f}" + ("" if round(value, 3) >= FLOOR else " **<**")


def table(results: Results, names: list[str]) -> str:
    """Markdown table: one row per distribution and n, coverage (width) per estimator."""
    head = " | ".join(f"{e} t | {e} betting" if e in BOUNDED else f"{e} t"
                      for e in ESTIMATORS)
    lines = [f"| distribution | n | {head} |",
             "| --- | --- |" + " --- |" * (len(ESTIMATORS) + len(BOUNDED))]
    for name in names:
        for n in SIZES:
            cells = []
            for e in ESTIMATORS:
                t_cov, t_width, b_cov, b_width = results[name, n][e]
                cells.append(f"{_mark(t_cov)} ({t_width:.2f})")
                if e in BOUNDED:
                    cells.append(f"{_mark(b_cov)} ({b_width:.2f})")
            lines.append(f"| {name} | {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Parse options, simulate every cell, print (and optionally write) the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--full", action="store_true", help="4,000 replicates per cell")
    parser.add_argument("--population", type=int, default=300,
                        help="judged responses per model and replicate")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--only", help="distributions whose name contains this text")
    parser.add_argument("--out", type=Path, help="also write the table (Markdown) here")
    args = parser.parse_args()
    replicates = 4000 if args.full else args.replicates
    rng = np.random.default_rng(args.seed)
    load = os.getloadavg()
    start = time.perf_counter()
    dists = {k: v for k, v in distributions().items() if not args.only or args.only in k}
    results = {(name, n): cell(rng, draw, truth, replicates, args.population, n)
               for name, (draw, truth) in dists.items() for n in SIZES}
    seconds = time.perf_counter() - start
    truths = ", ".join(f"{k} {v[1]:.3f}" for k, v in dists.items())
    conditions = (f"Coverage of the 95% intervals, mean width in brackets; **<** marks a "
                  f"coverage below {FLOOR}. {replicates} replicates per cell (Monte-Carlo "
                  f"standard error {np.sqrt(0.95 * 0.05 / replicates):.4f} at 0.95), "
                  f"{args.population} judged responses per population, seed {args.seed}; "
                  f"truths: {truths}; {seconds:.0f} s; load average before "
                  f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, after "
                  + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    publish(f"{table(results, list(dists))}\n\n{conditions}\n", args.out)


if __name__ == "__main__":
    main()
