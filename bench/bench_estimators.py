"""Benchmark: coverage and size of issue 40's estimators, side by side with what they replace.

Run ``python bench/bench_estimators.py [--part betting|aggregate|plans] [--replicates R]
[--out FILE]``. Figures are printed, never asserted; the machine's ``uptime`` is printed with
them (they are coverages, widths and errors, which the load does not move).

- ``betting``: the betting interval of a mean of 1..10 scores with bets capped at 1 (before)
  and truncated at c/m and c/(1-m), c = 1/2 (Waudby-Smith & Ramdas 2024; after), both in a
  random order: coverage and mean width at n = 10, 30, 100; and the t interval's coverage
  with the share of samples on which the skew note (|skewness| >= 1, n < 100) and the old
  "piled up at one end" note (half the scores at 1-2 or 9-10) fire. Populations: the bundled
  test2 QA-st gold-human and silver-human scores of three models, and synthetic ones.
- ``aggregate``: MAE to a known true score of the mean, the median, the default silver
  aggregate (each annotator's offset and precision) and nominal Dawid-Skene, in six simulated
  designs (dense, sparse, batches, spammers, adversaries, the paper's 10 a response).
- ``plans``: budget plans (the table's t interval, simulated, 80% assurance) from all of a
  model's 130 bundled scores and from pilots of 20: planned n, printed assurance, and the share
  of ``R`` real studies of that size (n of the 130 without replacement) whose interval
  (``ppi_designs.uniform_estimates``, tested equal to ``ppi.classical_mean`` /
  ``ppi.ppipp_mean``) met the target. ``R`` pilots a cell, each planned by the Dirichlet
  posterior planner of 28 Nov and by the planner now (N responses, the pilot's among them,
  spread corrected); the gap is the mean printed assurance less the mean share met, with the
  share's Monte-Carlo standard error over pilots. The planners before 28 Nov (normal
  quantile; the pilot taken for the population) are measured in ``plans-2026-11-28.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish, uptime  # noqa: E402
from elitr_core.stats import budget  # noqa: E402
from elitr_core.stats.betting import betting_interval  # noqa: E402
from elitr_core.stats.budget import REPLICATES, _smallest, _Studies  # noqa: E402
from elitr_core.stats.intervals import SKEW_LIMIT, WIDER_CHECK_FROM  # noqa: E402

LEVELS = np.arange(1.0, 11.0)
SIZES = (10, 30, 100)
#: P(score = 1..10) of the synthetic populations (those of bench_ppi_coverage.py, a uniform
#: and a bell-shaped one)
SYNTHETIC = {
    "two-humped": [0.22, 0.06, 0.05, 0.05, 0.06, 0.07, 0.08, 0.10, 0.11, 0.20],
    "skewed-high": [0.02, 0.02, 0.02, 0.03, 0.04, 0.06, 0.09, 0.16, 0.22, 0.34],
    "piled-at-9": [0.04, 0.02, 0.02, 0.01, 0.03, 0.03, 0.07, 0.13, 0.60, 0.05],
    "uniform": [0.1] * 10,
    "bell": [0.0, 0.01, 0.04, 0.12, 0.33, 0.33, 0.12, 0.04, 0.01, 0.0],
}
BUNDLED_MODELS = ("GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5")


def bundled_scores() -> dict[str, np.ndarray]:
    """The bundled test2 QA-st human scores, per evaluator and model."""
    from elitr_core.data.benchmark import bundled_files, scores_frame

    df = scores_frame(bundled_files())
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]
    return {f"{ev} {model}": g["score"].to_numpy(float)
            for (ev, model), g in df.groupby(["evaluator", "model"])
            if ev in ("gold-human", "silver-human") and model in BUNDLED_MODELS}


def populations() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Name -> (values, probabilities): the bundled scores' empirical distributions, then the
    synthetic ones."""
    out = {name: (np.unique(y), np.unique(y, return_counts=True)[1] / y.size)
           for name, y in bundled_scores().items()}
    for name, p in SYNTHETIC.items():
        out[name] = (LEVELS, np.array(p) / sum(p))
    return out


def betting_part(replicates: int, rng: np.random.Generator) -> str:
    """The betting widths before/after and the t coverage against both notes' firing."""
    lines = ["| population | skewness | n | t coverage | skew note fires | piled note fires "
             "| betting cap 1: coverage (width) | betting c/m: coverage (width) | narrower |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, (values, p) in populations().items():
        truth = float(values @ p)
        skew = float(((values - truth) ** 3) @ p / (((values - truth) ** 2) @ p) ** 1.5)
        for n in SIZES:
            y = rng.choice(values, (replicates, n), p=p)
            mean, sd = y.mean(1), y.std(1, ddof=1)
            half = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
            t_cover = (np.abs(mean - truth) <= half).mean()
            with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # constant samples: no skew
                g = np.nan_to_num(stats.skew(y, axis=1, bias=False))
            skew_fires = ((np.abs(g) >= SKEW_LIMIT) & (n < WIDER_CHECK_FROM)).mean()
            piled_fires = np.maximum((y <= 2.5).mean(1), (y >= 8.5).mean(1)).__ge__(0.5).mean()
            cells = []
            widths = []
            for truncation in (None, 0.5):
                lo, hi = betting_interval(y, 1, 10, 0.95, truncation=truncation)
                widths.append(float((hi - lo).mean()))
                cells.append(f"{((lo <= truth) & (truth <= hi)).mean():.3f} ({widths[-1]:.2f})")
            lines.append(f"| {name} | {skew:+.2f} | {n} | {t_cover:.3f} | {skew_fires:.2f} | "
                         f"{piled_fires:.2f} | {cells[0]} | {cells[1]} | "
                         f"{1 - widths[1] / widths[0]:.0%} |")
    return "\n".join(lines)


#: P(true score = 1..10) of a response (the pooled gold-human scores' two humps)
TRUTH = np.array([0.22, 0.06, 0.05, 0.05, 0.06, 0.07, 0.08, 0.10, 0.11, 0.20])


def _crowd(rng: np.random.Generator, n_workers: int, spam: float = 0.0,
           adversary: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Annotators' noise sd (0.5-2.5), offset (sd 0.7) and kind (0 honest, 1 spammer scoring
    uniformly at random, 2 adversary scoring 11 - truth)."""
    kind = np.zeros(n_workers, int)
    kind[rng.random(n_workers) < spam] = 1
    kind[(kind == 0) & (rng.random(n_workers) < adversary)] = 2
    return rng.uniform(0.5, 2.5, n_workers), rng.normal(0, 0.7, n_workers), kind


def design(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(task, worker) pairs of one simulated study."""
    if name == "dense":  # 8 annotators score all 120 responses
        return np.repeat(np.arange(120), 8), np.tile(np.arange(8), 120)
    if name == "paper":  # 8 meetings x 45 items, 10 annotators of each meeting score them all
        task = np.repeat(np.arange(360), 10)
        return task, (task // 45) * 10 + np.tile(np.arange(10), 360)
    if name == "batches":  # batches of 10 responses, 3 annotators a batch, new ones each batch
        task = np.repeat(np.arange(300), 3)
        return task, (task // 10) * 3 + np.tile(np.arange(3), 300)
    per = {"sparse": 3, "spammers": 5, "adversaries": 5}[name]  # random pool of 40
    task = np.repeat(np.arange(300), per)
    worker = np.concatenate([rng.choice(40, per, replace=False) for _ in range(300)])
    return task, worker


def simulate(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                           np.ndarray]:
    """task, worker, score and each response's true score of one simulated study."""
    task, worker = design(name, rng)
    truth = rng.choice(LEVELS, task.max() + 1, p=TRUTH)
    sd, offset, kind = _crowd(rng, worker.max() + 1, 0.25 if name == "spammers" else 0.0,
                              0.2 if name == "adversaries" else 0.0)
    honest = truth[task] + offset[worker] + rng.normal(0, 1, task.size) * sd[worker]
    score = np.where(kind[worker] == 1, rng.integers(1, 11, task.size), np.where(
        kind[worker] == 2, 11 - truth[task] + rng.normal(0, 1, task.size), honest))
    return task, worker, np.clip(np.rint(score), 1, 10), truth


AGGREGATES = ("mean", "median", "gaussian", "dawid-skene")


def aggregates(task: np.ndarray, worker: np.ndarray, score: np.ndarray) -> dict[str, np.ndarray]:
    """Each aggregate of one study, per response."""
    import pandas as pd

    from elitr_core.stats.annotator_offsets import gaussian_aggregate
    from elitr_core.stats.dawid_skene import dawid_skene

    per = pd.Series(score).groupby(task)
    ds = dawid_skene(task, worker, score)
    return {"mean": per.mean().to_numpy(), "median": per.median().to_numpy(),
            "gaussian": gaussian_aggregate(task, worker, score).mu,
            "dawid-skene": ds.probas @ ds.classes.astype(float)}


DESIGNS = ("dense", "sparse", "batches", "spammers", "adversaries", "paper")


def aggregate_part(replicates: int, rng: np.random.Generator) -> str:
    """MAE to the true score of every aggregate in every design, over simulated studies."""
    import warnings as w

    lines = ["| design | " + " | ".join(f"{a} MAE" for a in AGGREGATES)
             + " | gaussian - mean (95% CI) | gaussian better in |",
             "| --- |" + " --- |" * (len(AGGREGATES) + 2)]
    studies = max(replicates // 50, 5)
    for name in DESIGNS:
        errors = {a: [] for a in AGGREGATES}
        for _ in range(studies):
            task, worker, score, truth = simulate(name, rng)
            with w.catch_warnings():
                w.simplefilter("ignore")
                for a, value in aggregates(task, worker, score).items():
                    errors[a].append(float(np.abs(value - truth).mean()))
        gap = np.array(errors["gaussian"]) - np.array(errors["mean"])
        half = stats.t.ppf(0.975, studies - 1) * gap.std(ddof=1) / np.sqrt(studies)
        lines.append(f"| {name} | " + " | ".join(f"{np.mean(errors[a]):.3f}" for a in AGGREGATES)
                     + f" | {gap.mean():+.3f} ({gap.mean() - half:+.3f}, {gap.mean() + half:+.3f})"
                     f" | {(gap < 0).mean():.0%} |")
    return "\n".join(lines) + f"\n\n{studies} simulated studies a design"


class _IndependentBase(_Studies):
    """The planner of 28 Nov (main at fd859d6, ``plans-2026-11-28b.md``): the base measure's
    pair a human and a judge score each uniform on the scale and independent, where the
    planner now draws the judge score from the pilot's line of judge on human
    (``budget._judge_given_human``); everything else as now (the human scores stream for
    stream, so human-only plans are the same)."""

    def __init__(self, y: np.ndarray, yhat: np.ndarray, judge: np.ndarray, replicates: int,
                 seed: int) -> None:
        # the one function that changed, swapped for the benchmark's side-by-side run only
        now = budget._judge_given_human
        budget._judge_given_human = lambda y, yhat, human, rng: rng.integers(
            1, 11, human.shape).astype(float)
        try:
            super().__init__(y, yhat, judge, replicates, seed)
        finally:
            budget._judge_given_human = now


PILOT = 20
#: --model: plan these bundled models only (a run per model in parallel; default all three)
MODELS: list[str] = []
#: --design: plan these designs only (default both)
DESIGNS_PLANNED: list[str] = []


def _pilot_cell(planner: type[_Studies], y: np.ndarray, f: np.ndarray, picks: list[np.ndarray],
                design: str, half_width: float, real: _Studies) -> str:
    """Mean planned n, printed assurance and share of real studies met over the pilots, the
    share's MC standard error, the gap (printed - met) and the share of pilots met >= 0.5."""
    rows = []
    for j, pick in enumerate(picks):
        pn, pa, _ = _smallest(planner(y[pick], f[pick], f, REPLICATES, j), design, half_width,
                              0.95, 0.8)
        rows.append((pn, pa, np.nan if np.isnan(pn) else
                     real.assurance(int(pn), design, half_width, 0.95)))
    p = np.array(rows, float)
    ok = ~np.isnan(p[:, 0])
    se = p[ok, 2].std(ddof=1) / np.sqrt(ok.sum())
    return (f"{p[ok, 0].mean():.1f}, {p[ok, 1].mean():.3f}, {p[ok, 2].mean():.3f} ({se:.3f}), "
            f"{p[ok, 1].mean() - p[ok, 2].mean():+.3f}, {np.mean(p[ok, 2] >= 0.5):.0%} "
            f"({ok.sum()} of {len(picks)} planned)")


def plans_part(replicates: int, rng: np.random.Generator) -> str:
    """Planned against realised: the share of real studies meeting the target at the planned
    size, for plans from all 130 scores and from pilots of 20, before and after."""
    from elitr_core.data.benchmark import bundled_files, scores_frame
    from elitr_core.stats.pairs import judge_human_table

    df = scores_frame(bundled_files())
    df = df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]
    pairs = judge_human_table(df, "gpt-4", "gold-human").dropna(subset=["human"])
    lines = ["| model | half-width | design | all 130 scores: n, printed assurance, met | "
             "pilots of 20, base pair independent (28 Nov b, before): mean n, mean printed, "
             "mean met (MC se), gap, pilots met >= 0.5 | pilots of 20, base pair's judge from "
             "the pilot's line (now): the same |",
             "| --- | --- | --- | --- | --- | --- |"]
    studies, pilots = max(replicates, 200), max(replicates, 10)
    for model, g in pairs.groupby("model"):
        if model not in (MODELS or BUNDLED_MODELS):
            continue
        y, f = g["human"].to_numpy(float), g["judge"].to_numpy(float)
        # real studies of any size: n of the 130 without replacement, the table's interval
        # (ppi_designs.uniform_estimates, tested equal to classical_mean / ppipp_mean)
        real = _Studies(y, f, f, studies, int(rng.integers(1 << 31)))
        for half_width in (0.75, 1.0):
            full = _Studies(y, f, f, REPLICATES, 0)
            picks = [rng.choice(y.size, PILOT, replace=False) for _ in range(pilots)]
            for design in DESIGNS_PLANNED or ("human-only", "ppi++"):
                n, printed, _ = _smallest(full, design, half_width, 0.95, 0.8)
                cells = [_pilot_cell(planner, y, f, picks, design, half_width, real)
                         for planner in (_IndependentBase, _Studies)]
                lines.append(
                    f"| {model} | {half_width} | {design} | {n:.0f}, {printed:.3f}, "
                    f"{real.assurance(int(n), design, half_width, 0.95):.3f} | {cells[0]} | "
                    f"{cells[1]} |")
                print(lines[-1], flush=True)
    return "\n".join(lines) + (f"\n\n{studies} real studies per plan; {pilots} pilots of "
                               f"{PILOT} a cell, each planned by both planners")


PARTS = {"betting": betting_part, "aggregate": aggregate_part, "plans": plans_part}


def main() -> None:
    """Parse options, run the parts asked for, print (and optionally write) the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=list(PARTS), action="append")
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, help="also write the tables (Markdown) here")
    parser.add_argument("--model", action="append", choices=BUNDLED_MODELS,
                        help="plans: only this model (repeat; default all three)")
    parser.add_argument("--design", action="append", choices=("human-only", "ppi++"),
                        help="plans: only this design (repeat; default both)")
    args = parser.parse_args()
    MODELS.extend(args.model or [])
    DESIGNS_PLANNED.extend(args.design or [])
    rng = np.random.default_rng(args.seed)
    texts = [f"`uptime` before: {uptime()}"]
    for part in args.part or list(PARTS):
        start = time.perf_counter()
        table = PARTS[part](args.replicates, rng)
        texts.append(f"## {part}\n\n{table}\n\n{args.replicates} replicates per cell, seed "
                     f"{args.seed}, {time.perf_counter() - start:.0f} s")
    texts.append(f"`uptime` after: {uptime()}")
    publish("\n\n".join(texts) + "\n", args.out)


if __name__ == "__main__":
    main()
