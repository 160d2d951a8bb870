"""The Dawid-Skene silver aggregate against the plain mean, on the bundled data.

The bundled release stores silver-human as one aggregate score per response (no annotator's
own scores), so the comparison with gold-human is made two ways on the 390 test2 QA-st
responses gold-human scored:

1. *The bundled raters as a crowd*: gpt-4, prometheus and silver-human (three real raters
   of every response) aggregated by their mean and by Dawid-Skene.
2. *Simulated crowds around gold*: ``--annotators`` annotators, ``--per-item`` of them per
   response, each giving gold + N(0, sd) rounded into 1..10, with sd spread from 0.5 to 2.5,
   plus ``--careless`` annotators answering uniformly at random; ``--crowds`` seeds.

Printed: n, MAE, bias and Pearson r of each aggregate against gold-human
(``elitr_core.stats.silver_aggregate.agreement_with_gold``, ``method="dawid-skene"``; the
default aggregate against the mean in six designs is ``bench/bench_estimators.py``), and the
load average.

    python bench/bench_silver_aggregate.py [--crowds 20] [--out bench/results/x.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish  # noqa: E402
from db.runs import ScoreFilter
from elitr_core.cli.main import main as cli  # noqa: E402
from elitr_core.data.database import open_database, reading  # noqa: E402
from elitr_core.data.scores import scores_table  # noqa: E402
from elitr_core.stats.silver_aggregate import agreement_with_gold  # noqa: E402


def bundled_scores() -> pd.DataFrame:
    """test2 QA-st scores of the bundled data (a temporary SQLite database)."""
    folder = tempfile.mkdtemp()
    url = f"sqlite:///{folder}/bundled.db"
    assert cli(["init", "--db", url]) == 0
    with reading(open_database(url, write=False)) as session:
        return scores_table(session, ScoreFilter(split="test2", setting="qa", mode="st"))


def raters_as_crowd(df: pd.DataFrame) -> pd.DataFrame:
    """gpt-4, prometheus and silver-human as annotators of one pool, on gold's responses."""
    gold = df[df["evaluator"] == "gold-human"]
    keys = ["meeting", "question_id", "model"]
    scored = set(map(tuple, gold[keys].astype(str).to_numpy()))
    raters = df[df["evaluator"].isin(["gpt-4", "prometheus", "silver-human"])]
    raters = raters[[tuple(k) in scored for k in raters[keys].astype(str).to_numpy()]]
    crowd = raters.assign(annotator=raters["evaluator"].astype(str), evaluator="raters")
    return pd.concat([crowd, gold], ignore_index=True)


def simulated_crowd(df: pd.DataFrame, rng: np.random.Generator, annotators: int,
                    per_item: int, careless: int) -> pd.DataFrame:
    gold = df[df["evaluator"] == "gold-human"].reset_index(drop=True)
    sds = np.linspace(0.5, 2.5, annotators)
    names = [f"a{i}" for i in range(annotators)] + [f"careless{i}" for i in range(careless)]
    rows = []
    for _, response in gold.iterrows():
        for who in rng.choice(len(names), per_item, replace=False):
            if who < annotators:
                value = np.clip(np.rint(response["score"] + rng.normal(0, sds[who])), 1, 10)
            else:
                value = float(rng.integers(1, 11))
            rows.append({**response.to_dict(), "evaluator": "crowd", "annotator": names[who],
                         "score": float(value)})
    return pd.concat([pd.DataFrame(rows), gold], ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crowds", type=int, default=20)
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--per-item", type=int, default=5)
    parser.add_argument("--careless", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    lines = [f"load average before: {os.getloadavg()}", ""]
    df = bundled_scores()
    table = agreement_with_gold(raters_as_crowd(df), "raters", method="dawid-skene")
    lines += ["## The bundled raters (gpt-4, prometheus, silver-human) as a crowd, vs gold-human",
              "", table.to_markdown(index=False, floatfmt=".3f"), ""]
    runs = [agreement_with_gold(simulated_crowd(df, np.random.default_rng(seed),
                                                args.annotators, args.per_item,
                                                args.careless), "crowd",
                                method="dawid-skene")
            for seed in range(args.crowds)]
    summary = pd.concat(runs).groupby("aggregate", sort=False)[["mae", "bias", "r"]].agg(
        ["mean", "min", "max"])
    wins = np.mean([r.set_index("aggregate").loc["dawid-skene", "mae"]
                    < r.set_index("aggregate").loc["mean", "mae"] for r in runs])
    lines += [f"## Simulated crowds around gold ({args.crowds} crowds: {args.annotators} "
              f"annotators with sd 0.5-2.5 and {args.careless} careless, {args.per_item} per "
              "response)", "", summary.to_markdown(floatfmt=".3f"), "",
              f"Dawid-Skene mean below the plain mean's MAE in {wins:.0%} of the crowds", "",
              f"load average after: {os.getloadavg()}"]
    publish("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
