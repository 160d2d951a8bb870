"""Benchmark: confidence sequences under continuous monitoring, replayed on the bundled studies.

Run ``python bench/bench_confseq.py [--replicates N] [--out FILE]``. Each replicate is one
simulated study of one model: humans score responses one at a time, drawn with replacement
from the model's 130 bundled test2 QA-st responses (each with its gold or silver human score
and the GPT-4 and Prometheus judge scores), uniformly or by active selection (each response
drawn with probability proportional to ``pi``, ``pi`` from the GPT-4 judge's uncertainty as
``study create --selection active`` computes it for a budget of 40; the scores are then
inverse-probability weighted, :func:`elitr_core.stats.confseq.ipw_increments`). The truth is
the population's mean (human, or human - judge for the bias); the prediction-powered mean is
the judge's mean over the 130 responses plus the bias sequence, so its coverage and stops are
the bias sequence's, shifted by a known number.

Printed, never asserted:

1. Time-uniform coverage (the share of studies whose sequence holds the truth after every one
   of ``--horizon`` scores) of the betting sequences (human mean, bias, PPI), of the
   asymptotic sequence (Waudby-Smith et al. 2021, as an alternative), and of the fixed-n t
   interval looked at after every 10 scores (the cost of peeking).
2. With a target half-width of 0.5 and 0.75, the median and 90th percentile number of human
   scores at which the study stops (the first time the sequence is that narrow), human-only
   and PPI with each judge, beside the fixed-n design of the budget planner (``export
   ppi-budget``: human-only and PPI++, planned on the same 130 responses): one look at a
   planned n, 95% at that look.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish  # noqa: E402
from elitr_core.stats.active import selection_probabilities  # noqa: E402
from elitr_core.stats.confseq import (  # noqa: E402
    asymptotic_cs,
    covers,
    ipw_bounds,
    ipw_increments,
    stopping_time,
)
from elitr_core.stats.intervals import quantile  # noqa: E402
from elitr_core.stats.ppi_cs import (  # noqa: E402
    Ranges,
    ppi_covers,
    ppi_increments,
    ppi_stopping_time,
)

POOLS = ("gold-human", "silver-human")
JUDGES = ("gpt-4", "prometheus")
DESIGNS = ("uniform", "active")
TARGETS = (0.5, 0.75)
ACTIVE_BUDGET = 40
PEEK_EVERY = 10
FLOOR = 0.95


def bundled() -> pd.DataFrame:
    """The bundled long scores of test2 QA-st (the responses with human scores)."""
    from elitr_core.data.benchmark import bundled_files, scores_frame

    df = scores_frame(bundled_files())
    return df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]


def populations(df: pd.DataFrame) -> dict[tuple[str, str], pd.DataFrame]:
    """(pool, model) -> one row per response: human and every judge's score."""
    from elitr_core.stats.pairs import judge_human_table

    out = {}
    for pool in POOLS:
        tables = [judge_human_table(df, j, pool).dropna(subset=["human"])
                  .set_index(["model", "meeting", "question_id"])["judge"].rename(j)
                  for j in JUDGES]
        human = judge_human_table(df, JUDGES[0], pool).dropna(subset=["human"]) \
            .set_index(["model", "meeting", "question_id"])["human"]
        both = pd.concat([human, *tables], axis=1).dropna().reset_index()
        for model, group in both.groupby("model"):
            out[pool, str(model)] = group.reset_index(drop=True)
    return out


def semi_synthetic(df: pd.DataFrame, real: dict[tuple[str, str], pd.DataFrame],
                   rng: np.random.Generator) -> dict[tuple[str, str], pd.DataFrame]:
    """(pool, model) -> the models without human scores, each response with its real GPT-4
    judge score and a human score drawn from the pool's human-given-judge distribution (the
    share of each human score among the real models' responses with the same GPT-4 score;
    the judge scores no real response got borrow the nearest one's): a population whose
    truth, the drawn scores' mean, is known. Semi-synthetic, labelled so everywhere."""
    judged = df[(df["evaluator"] == "gpt-4")].groupby(["model", "meeting", "question_id"])[
        "score"].mean().reset_index()
    humanless = sorted(set(judged["model"]) - {m for _, m in real})
    out = {}
    for pool in POOLS:
        pairs = pd.concat([p for (q, _), p in real.items() if q == pool])
        table = pd.crosstab(pairs["gpt-4"], pairs["human"])
        for model in humanless:
            mine = judged[judged["model"] == model].reset_index(drop=True)
            rows = [table.index[np.abs(table.index - j).argmin()] for j in mine["score"]]
            human = [rng.choice(table.columns, p=table.loc[r] / table.loc[r].sum())
                     for r in rows]
            out[pool, model] = pd.DataFrame({"model": model, "human": np.asarray(human, float),
                                             "gpt-4": mine["score"].to_numpy(float)})
    return out


def plans(df: pd.DataFrame, model: str, pool: str, judge: str,
          half_width: float) -> tuple[float, float]:
    """The budget planner's fixed n (human-only, PPI++) for one model's population."""
    from elitr_core.stats.budget import budget_plan

    mine = df[(df["model"] == model) & df["evaluator"].isin([pool, judge])]
    row = budget_plan(mine, judge, pool, half_width).iloc[0]
    return (float(row["n_human_only"]) if pd.notna(row["n_human_only"]) else np.nan,
            float(row["n_ppi"]) if pd.notna(row["n_ppi"]) else np.nan)


def peeked_t(values: np.ndarray, truth: float) -> float:
    """Share of studies whose 95% t interval holds the truth at every 10th score."""
    n = np.arange(PEEK_EVERY, values.shape[1] + 1, PEEK_EVERY)
    total, squares = np.cumsum(values, axis=1), np.cumsum(values ** 2, axis=1)
    mean = total[:, n - 1] / n
    sd = np.sqrt(np.maximum((squares[:, n - 1] - n * mean ** 2) / (n - 1), 0))
    half = np.asarray(quantile(0.95, n - 1)) * sd / np.sqrt(n)
    return float((np.abs(mean - truth) <= half).all(axis=1).mean())


def asymptotic(values: np.ndarray, truth: float) -> float:
    """Share of studies whose asymptotic sequence holds the truth after every score from the
    10th (before, a standard deviation from a few scores is often 0)."""
    lo, hi = asymptotic_cs(values)
    start = PEEK_EVERY - 1
    return float(((lo[:, start:] <= truth) & (truth <= hi[:, start:])).all(axis=1).mean())


def stops(stop: object) -> dict[float, tuple[float, float]]:
    """Target -> median and 90th percentile of the stop (inf: not within the horizon);
    ``stop(w)``: each study's first score with a half-width <= w."""
    out = {}
    for w in TARGETS:
        at = stop(w)  # type: ignore[operator]
        # "higher": a median between two studies that never stopped is inf, not nan
        out[w] = (float(np.quantile(at, 0.5, method="higher")),
                  float(np.quantile(at, 0.9, method="higher")))
    return out


def cell(rng: np.random.Generator, pop: pd.DataFrame, design: str, replicates: int,
         horizon: int, stop_horizon: int, stopped: int) -> dict[str, dict[str, object]]:
    """One model and pool under one design: every sequence's coverage, and the stops of
    the first ``stopped`` studies."""
    with_stops = stopped > 0
    size = len(pop)
    if design == "uniform":
        pi = np.ones(size)
    else:
        pi = selection_probabilities(1 - np.abs(pop["gpt-4"].to_numpy() - 5.5) / 4.5,
                                     ACTIVE_BUDGET)
    pick = rng.choice(size, (replicates, max(horizon, stop_horizon)), p=pi / pi.sum())
    weight = ipw_increments(np.ones_like(pick, float), pi[pick], pi.sum(), size)
    w_min, w_max = ipw_bounds(1, 1, pi.min(), pi.max(), pi.sum(), size)
    human = pop["human"].to_numpy(float)
    truth = float(human.mean())
    judges = [j for j in JUDGES if j in pop.columns]
    out: dict[str, dict[str, object]] = {}
    for name, y, (low, high) in [("human-only", human, (1, 10))] + [
            (f"bias {j}", human - pop[j].to_numpy(float), (-9, 9)) for j in judges]:
        low, high = ipw_bounds(low, high, pi.min(), pi.max(), pi.sum(), size)
        values = y[pick] * weight
        short = values[:, :horizon]
        out[name] = {"betting": float(covers(short, low, high, float(y.mean())).mean()),
                     "asymptotic": asymptotic(short, float(y.mean())),
                     "t every 10": peeked_t(short, float(y.mean()))}
        if with_stops and name == "human-only":
            out[name]["stops"] = stops(lambda w, v=values, lo=low, hi=high: stopping_time(
                v[:stopped, :stop_horizon], lo, hi, w))
    for j in judges:
        judge = pop[j].to_numpy(float)
        r = Ranges(judge_mean=float(judge.mean()), weight_min=w_min, weight_max=w_max)
        h, g = human[pick], judge[pick]
        k = slice(0, horizon)
        # the t interval and asymptotic sequence of the same (tuned) increments
        x = ppi_increments(h[:, k], g[:, k], weight[:, k], r)[0]
        out[f"PPI {j}"] = {
            "betting": float(ppi_covers(h[:, k], g[:, k], weight[:, k], r, truth).mean()),
            "asymptotic": asymptotic(x, truth), "t every 10": peeked_t(x, truth)}
        if with_stops:
            out[f"PPI {j}"]["stops"] = stops(lambda w, r=r, h=h, g=g: ppi_stopping_time(
                h[:stopped, :stop_horizon], g[:stopped, :stop_horizon],
                weight[:stopped, :stop_horizon], r, w))
    return out


def _cov(value: float) -> str:
    return f"{value:.3f}" + ("" if value >= FLOOR else " *")


def _n(value: float) -> str:
    return "–" if np.isnan(value) else (">H" if np.isinf(value) else f"{value:.0f}")


def coverage_table(results: dict, synthetic: set) -> str:  # type: ignore[type-arg]
    lines = ["| pool | model | data | design | sequence | betting CS | asymptotic CS | "
             "t every 10 |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (pool, model, design), seqs in results.items():
        data = "semi-synthetic" if (pool, model) in synthetic else "real"
        for name, r in seqs.items():
            lines.append(f"| {pool} | {model} | {data} | {design} | {name} | "
                         f"{_cov(r['betting'])} | {_cov(r['asymptotic'])} | "
                         f"{_cov(r['t every 10'])} |")
    return "\n".join(lines)


def stop_table(results: dict, planned: dict) -> str:  # type: ignore[type-arg]
    head = " | ".join(f"W={w}: {s}" for w in TARGETS
                      for s in ("human-only CS", "PPI gpt-4 CS", "PPI prometheus CS",
                                "planner human-only", "planner PPI++ gpt-4"))
    lines = [f"| pool | model | design | {head} |",
             "| --- | --- | --- |" + " --- |" * (5 * len(TARGETS))]
    for (pool, model, design), seqs in results.items():
        if (pool, model, TARGETS[0]) not in planned:
            continue
        cells = []
        for w in TARGETS:
            for name in ("human-only", "PPI gpt-4", "PPI prometheus"):
                med, p90 = seqs[name]["stops"][w]
                cells.append(f"{_n(med)} / {_n(p90)}")
            cells += [_n(v) for v in planned[pool, model, w]]
        lines.append(f"| {pool} | {model} | {design} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def earlier(results: dict, judge: str) -> str:  # type: ignore[type-arg]
    """How many real cells' PPI stop (median and 90th percentile) comes before human-only's."""
    wins, total, worst = 0, 0, []
    for (pool, model, design), seqs in results.items():
        if "stops" not in seqs.get(f"PPI {judge}", {}):
            continue
        for w in TARGETS:
            for q in (0, 1):
                ppi, alone = seqs[f"PPI {judge}"]["stops"][w][q], seqs["human-only"]["stops"][w][q]
                total += 1
                wins += ppi < alone
                worst.append((ppi / alone, f"{pool} {model} {design} W={w} "
                              f"{'median' if q == 0 else 'p90'} {_n(ppi)} vs {_n(alone)}"))
    ratio, where = max(worst)
    return (f"PPI {judge} stops before human-only in {wins} of {total} (cell, target, "
            f"median/p90) comparisons; closest: {where} (ratio {ratio:.2f})")


def main() -> None:
    """Parse options, replay every cell, print (and optionally write) both tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicates", type=int, default=400)
    parser.add_argument("--horizon", type=int, default=500,
                        help="scores per study for the coverage (every one a look)")
    parser.add_argument("--stop-horizon", type=int, default=700,
                        help="scores per study at most when looking for the stop")
    parser.add_argument("--stop-replicates", type=int, default=200,
                        help="of the replicates, how many are followed to the stop")
    parser.add_argument("--data", choices=("both", "real", "semi-synthetic"), default="both",
                        help="replay the real cells, the semi-synthetic ones or both")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--out", type=Path, help="also write the tables (Markdown) here")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    load = os.getloadavg()
    start = time.perf_counter()
    scores = bundled()
    pops = populations(scores)
    synthetic = semi_synthetic(scores, pops, rng)
    results, planned = {}, {}
    chosen = {**(pops if args.data != "semi-synthetic" else {}),
              **(synthetic if args.data != "real" else {})}
    for (pool, model), pop in chosen.items():
        real = (pool, model) in pops
        for w in TARGETS if real else ():
            planned[pool, model, w] = plans(scores, model, pool, "gpt-4", w)
        for design in DESIGNS:
            results[pool, model, design] = cell(rng, pop, design, args.replicates,
                                                 args.horizon, args.stop_horizon,
                                                 args.stop_replicates if real else 0)
            print(f"{pool} {model} {design}: {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    se = np.sqrt(0.95 * 0.05 / args.replicates)
    truths = "; ".join(f"{p} {m} {g['human'].mean():.3f} (n={len(g)})"
                       for (p, m), g in pops.items())
    fake = "; ".join(f"{p} {m} {g['human'].mean():.3f}" for (p, m), g in synthetic.items())
    text = (
        "### Time-uniform coverage (95% sequences; * below 0.95)\n\n"
        f"{coverage_table(results, set(synthetic))}\n\n"
        f"Each cell: {args.replicates} simulated studies (Monte-Carlo standard error {se:.4f} "
        f"at 0.95), each looked at after every one of {args.horizon} human scores (the "
        f"asymptotic sequence from the {PEEK_EVERY}th, the t interval after every "
        f"{PEEK_EVERY}th). Bias: the sequence for mean(human - judge). PPI: the human mean "
        "from the judge's mean over the 130 responses and the rectifier tuned before each "
        "score (`stats/ppi_cs.py`); its t interval and asymptotic sequence are those of the "
        "same increments. Semi-synthetic rows: the six models the bundle has no human "
        "score for; each response keeps its real GPT-4 score and gets a human score drawn "
        "once (seeded) from the pool's human-given-GPT-4-score distribution on the three "
        "models with both, so the truth (the drawn scores' mean) is known; their studies "
        "are then replayed like the real ones.\n\n"
        "### Human scores at the stop (real data): median / 90th percentile\n\n"
        f"{stop_table(results, planned)}\n\n"
        + (f"{earlier(results, 'gpt-4')}. {earlier(results, 'prometheus')}. "
           f"Each stop: the first {args.stop_replicates} studies of each cell.\n\n"
           if args.data != "semi-synthetic" else "\n")
        + 
        f"Stop: the first score after which the 95% sequence's half-width is <= W (>H: not "
        f"within {args.stop_horizon}). Planner: `export ppi-budget`'s fixed n on the same 130 "
        "responses (one look at that n, 95% at that look; uniform draws; – where 130 "
        "judged responses cannot reach W).\n\n"
        f"Population means (human): {truths}. Semi-synthetic truths: {fake}. Seed "
        f"{args.seed}; {seconds:.0f} s; load average before {load[0]:.2f} {load[1]:.2f} "
        f"{load[2]:.2f}, after " + " ".join(f"{v:.2f}" for v in os.getloadavg()) + "\n")
    publish(text, args.out)


if __name__ == "__main__":
    main()
