"""Size of the meetings' sign-flip test at 0.05 under symmetric and skewed meeting effects.

The paired tables (``model-difference``, ``st-vs-mt``) test "mean difference 0" with a
sign-flip permutation test over meetings (``elitr_core.stats.cluster_tests.sign_flip_p``): it
is exact when each meeting's differences are as likely as their negation. A meeting effect
that is mean-zero but skewed (an exponential minus its mean: most meetings a little below 0,
a few far above) breaks that symmetry. This benchmark simulates null data sets (M meetings of
8-22 questions, difference = meeting effect + N(0, 1) question noise, mean 0) and prints the
share of p < 0.05 for:

- ``sign-flip``: the test the tables use (studentising it changes nothing: with sign flips the
  sum of squares is fixed, so the t statistic is a monotone function of the total);
- ``boot-t sym``: a cluster bootstrap-t (meetings resampled, the ratio mean over questions
  studentised by its cluster-robust standard error), p = share of |t*| >= |t|;
- ``boot-t eq``: the same replicates, equal-tailed p (twice the smaller tail).

With ``--replicates R`` the Monte-Carlo standard error of a size near 0.05 is
sqrt(0.05 * 0.95 / R) (0.005 at R = 2000). The load average is printed: figures are shares,
not times, so load does not move them.

    python bench/bench_sign_flip_size.py [--replicates 2000] [--out bench/results/x.md]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from elitr_core.stats.cluster_tests import sign_flip_p  # noqa: E402

MEETINGS = (8, 12, 18, 30)
EFFECT_SD = (0.5, 1.0, 2.0)


def null_data(rng: np.random.Generator, meetings: int, effect_sd: float,
              skewed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Meeting sums of the differences and meeting sizes of one null data set."""
    sizes = rng.integers(8, 23, meetings)
    effect = ((rng.exponential(1.0, meetings) - 1.0) if skewed
              else rng.normal(0.0, 1.0, meetings)) * effect_sd
    codes = np.repeat(np.arange(meetings), sizes)
    diff = effect[codes] + rng.normal(0.0, 1.0, codes.size)
    return np.bincount(codes, weights=diff), sizes.astype(float)


def bootstrap_t_p(sums: np.ndarray, sizes: np.ndarray, rng: np.random.Generator,
                  n_bootstrap: int = 999) -> tuple[float, float]:
    """Symmetric and equal-tailed p of the cluster bootstrap-t (ratio mean over questions)."""
    m, total = sums.size, sizes.sum()
    mean = sums.sum() / total
    t0 = mean / (np.sqrt(m / (m - 1) * np.sum((sums - mean * sizes) ** 2)) / total)
    weights = rng.multinomial(m, np.full(m, 1.0 / m), n_bootstrap)
    drawn = weights @ sizes
    means = (weights @ sums) / drawn
    squares = (sums[None, :] - means[:, None] * sizes[None, :]) ** 2
    se = np.sqrt(m / (m - 1) * np.sum(weights * squares, axis=1)) / drawn
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (means - mean) / se
    t = t[np.isfinite(t)]
    symmetric = (1 + np.sum(np.abs(t) >= abs(t0))) / (1 + t.size)
    low, high = (1 + np.sum(t <= t0)) / (1 + t.size), (1 + np.sum(t >= t0)) / (1 + t.size)
    return float(symmetric), float(min(1.0, 2 * min(low, high)))


def size_row(meetings: int, effect_sd: float, skewed: bool, replicates: int,
             seed: int) -> tuple[float, float, float]:
    """Share of p < 0.05 of the three tests over ``replicates`` null data sets."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(3)
    for _ in range(replicates):
        sums, sizes = null_data(rng, meetings, effect_sd, skewed)
        hits += [sign_flip_p(sums, 2000, rng) < 0.05,
                 *(p < 0.05 for p in bootstrap_t_p(sums, sizes, rng))]
    share = hits / replicates
    return float(share[0]), float(share[1]), float(share[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [f"load average before: {os.getloadavg()}",
             f"{args.replicates} null data sets per row (MC s.e. "
             f"{np.sqrt(0.05 * 0.95 / args.replicates):.3f}); size of a 0.05 test", "",
             "| meeting effect | meetings | effect sd | sign-flip | boot-t sym | boot-t eq |",
             "| --- | --- | --- | --- | --- | --- |"]
    print("\n".join(lines), flush=True)
    seed = 0
    for skewed in (False, True):
        for meetings in MEETINGS:
            for sd in EFFECT_SD:
                seed += 1
                flip, sym, eq = size_row(meetings, sd, skewed, args.replicates, seed)
                line = (f"| {'exponential - 1' if skewed else 'normal'} | {meetings} | {sd} | "
                        f"{flip:.3f} | {sym:.3f} | {eq:.3f} |")
                lines.append(line)
                print(line, flush=True)
    lines += ["", f"load average after: {os.getloadavg()}"]
    print(lines[-1])
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
