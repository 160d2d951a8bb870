"""Validity of the statistics under the data's own structure: the size of a test of a true
null, simulated, beside the test it replaced. One section per part; sections are independent
(``--section NAME`` runs one; each prints its own table).

``interleaving``: an ``--interleave K`` run asks K meetings in one conversation, so a
conversation effect (its length, a confusion carried from one meeting to the next) moves all
its meetings together. Null data sets: G conversations of K meetings, each meeting 8-22
questions, a score (or interleaved - isolated difference) = conversation effect N(0, sd) +
question noise N(0, 1), no true difference and no true trend. The memory spans, two layouts:
``one run``: each meeting's span is the run's span (16,000) plus the transcripts asked after
its own (6,000-14,000 tokens each) plus its question's place in the question stretch (60
tokens a question), as ``generation/interleave.py`` lays a conversation out (the span varies
mostly between the meetings of a conversation); ``a sweep``: each conversation asked at its
own span (4,000-32,000, as runs at several ``--span``), so the span varies mostly between
conversations. The share of p < 0.05 of:

- ``sign-flip by meeting``: the sign-flip test over meetings, ``stats.paired.paired_by_meeting``'s
  ``p`` (``cluster_tests.sign_flip_p`` of the meetings' sums; the old ``export interleaving``);
- ``sign-flip by conversation``: the same over conversations (the table now);
- ``CR1 by meeting`` / ``CR1 by conversation``: the span trend's t-test of
  ``stats.interleaving.cluster_slope`` (OLS, CR1, t on G - 1 df), clustered by meeting (the
  old ``interleaving-span``) and by conversation (the interval the table prints beside ``p``);
- ``wild by conversation``: the trend's ``p`` now, ``stats.cluster_tests.wild_cluster_p``
  over conversations (all 2^G patterns up to 12 conversations; 1,999 random ones above, where
  the table draws 9,999).

``trend-interval``: the coverage of the 95% interval printed beside the trend's ``p`` (the
true slope is 0), CR1 (``interleaving.cluster_slope``, t on G - 1 degrees of freedom; the
interval until 28 Nov) against CR2 with Satterthwaite degrees of freedom
(``cluster_robust.cr2_slope``, the interval now), clustered by conversation, in the same
null data sets and both layouts, with 2-20 conversations; beside each CR2 coverage the median
of its degrees of freedom and of its width over CR1's. Coverage is one less the size of the
interval's t-test, so its Monte-Carlo standard error near 0.95 is 0.0022 at R = 10,000.

Each size is printed with its Monte-Carlo standard error, sqrt(size (1 - size) / R) (near
0.05: 0.0031 at the default R = 5,000, so a test of exact size 0.05 lands in 0.044-0.056 in
19 of 20 cells). The tests take arrays of data sets (``sign_flip_ps``, ``cr1_slope_ps``,
``wild_cluster_ps``, tested equal to the one-set functions), so 5,000 data sets a cell run
in minutes. Figures are shares, not times; the load average is printed anyway.

    python bench/bench_validity.py [--section interleaving|trend-interval] [--replicates 5000]
                                   [--out bench/results/x.md]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish, uptime  # noqa: E402
from elitr_core.stats.cluster_robust import cr2_slope_fits  # noqa: E402
from elitr_core.stats.cluster_tests import (  # noqa: E402
    cluster_moments,
    cr1_slope_ps,
    sign_flip_ps,
    wild_cluster_ps,
)

#: (K meetings a conversation, G conversations): the issue's int2 (8 meetings in 4) and int3
#: (6 in 2) runs of one split, then runs over more meetings, where a test can reach 0.05.
DESIGNS = ((2, 4), (3, 2), (2, 12), (3, 10), (2, 20))
CONVERSATION_SD = (0.5, 1.0)
SPAN = 16_000


#: Data sets simulated and tested at once (the tests take arrays of data sets)
BLOCK = 250
COLUMNS = ("sign-flip by meeting (old)", "sign-flip by conversation (now)",
           "one run: CR1 by meeting (old)", "CR1 by conversation", "wild by conversation (now)",
           "a sweep: CR1 by meeting (old)", "CR1 by conversation", "wild by conversation (now)")


def interleaved_nulls(rng: np.random.Generator, k: int, g: int, sd: float,
                      sets: int) -> dict[str, np.ndarray]:
    """``sets`` null data sets, one row a question: its data set, meeting and conversation
    (numbered within the set), value and spans (tokens) in the two layouts."""
    sizes = rng.integers(8, 23, (sets, k * g))
    rows = sizes.ravel()
    data_set = np.repeat(np.arange(sets), sizes.sum(1))
    meeting = np.repeat(np.tile(np.arange(k * g), sets), rows)
    conversation = meeting // k
    effect = rng.normal(0.0, sd, (sets, g))
    value = effect[data_set, conversation] + rng.normal(0.0, 1.0, data_set.size)
    transcript = rng.uniform(6_000, 14_000, (sets, g, k))
    # the transcripts asked after each meeting's own, within its conversation
    later = (np.cumsum(transcript[..., ::-1], 2)[..., ::-1] - transcript).reshape(sets, k * g)
    first = np.repeat(np.cumsum(rows) - rows, rows)
    place = (np.arange(data_set.size) - first) * 60.0 * k
    sweep = rng.uniform(4_000, 32_000, (sets, g))[data_set, conversation] + place
    return {"data_set": data_set, "meeting": meeting, "conversation": conversation,
            "value": value, "span": SPAN + later[data_set, meeting] + place, "sweep": sweep}


def interleaving_block(k: int, g: int, sd: float, sets: int,
                       rng: np.random.Generator) -> np.ndarray:
    """p < 0.05 of the eight tests (columns) on ``sets`` null data sets (rows)."""
    d = interleaved_nulls(rng, k, g, sd, sets)
    ds, value = d["data_set"], d["value"]
    p = []
    for clusters, m in (("meeting", k * g), ("conversation", g)):
        sums = np.bincount(ds * m + d[clusters], value, sets * m).reshape(sets, m)
        # paired_by_meeting's p: sign_flip_p of the clusters' sums, 10,000 random patterns
        p.append(sign_flip_ps(sums, 10_000, rng))
    for x in (d["span"] / 1000, d["sweep"] / 1000):
        by_meeting = cluster_moments(x, value, d["meeting"], ds, sets)
        by_conversation = cluster_moments(x, value, d["conversation"], ds, sets)
        p += [cr1_slope_ps(by_meeting), cr1_slope_ps(by_conversation),
              wild_cluster_ps(by_conversation, 1999, rng)]
    return np.column_stack(p) < 0.05


def interleaving_row(k: int, g: int, sd: float, replicates: int, seed: int) -> np.ndarray:
    """Share of p < 0.05 of the eight tests over ``replicates`` null data sets."""
    rng = np.random.default_rng([seed, k, g, int(sd * 100)])
    hits = np.zeros(len(COLUMNS))
    for start in range(0, replicates, BLOCK):
        hits += interleaving_block(k, g, sd, min(BLOCK, replicates - start), rng).sum(0)
    return hits / replicates


def interleaving(replicates: int, seed: int) -> list[str]:
    """The ``interleaving`` section: a markdown table of sizes, each with its Monte-Carlo
    standard error sqrt(size (1 - size) / replicates) in brackets."""
    lines = ["| K | conversations | meetings | conversation sd | " + " | ".join(COLUMNS) + " |",
             "|" + "---|" * (4 + len(COLUMNS))]
    for k, g in DESIGNS:
        for sd in CONVERSATION_SD:
            row = interleaving_row(k, g, sd, replicates, seed)
            se = np.sqrt(row * (1 - row) / replicates)
            lines.append(f"| {k} | {g} | {k * g} | {sd:g} | "
                         + " | ".join(f"{a:.3f} ({b:.3f})" for a, b in zip(row, se, strict=True))
                         + " |")
            print(lines[-1], flush=True)
    return lines


#: The trend interval's designs: K meetings a conversation, G conversations (2 to 20).
TREND_DESIGNS = ((3, 2), (2, 3), (2, 4), (2, 6), (2, 8), (3, 10), (2, 12), (2, 20))
TREND_COLUMNS = ("one run: CR1", "CR2 (now)", "CR2 df, width / CR1",
                 "a sweep: CR1", "CR2 (now)", "CR2 df, width / CR1")


def trend_block(k: int, g: int, sd: float, sets: int, rng: np.random.Generator
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per null data set (rows) and layout (one run, a sweep): whether the CR1 and the CR2
    95% intervals cover the true slope 0, the CR2 degrees of freedom and width over CR1's."""
    d = interleaved_nulls(rng, k, g, sd, sets)
    covered, df, ratio = [], [], []
    for x in (d["span"] / 1000, d["sweep"] / 1000):
        moments = cluster_moments(x, d["value"], d["conversation"], d["data_set"], sets)
        cr1 = cr1_slope_ps(moments)
        fit = cr2_slope_fits(moments)
        cr2 = 2 * stats.t.sf(np.abs(fit["slope"] / fit["se"]), fit["df"])
        # CR1's half-width from its own p: |slope| / t_(G-1)^-1(1 - p/2) * t_(G-1)(0.975)
        cr1_half = (np.abs(fit["slope"]) / stats.t.isf(cr1 / 2, g - 1)
                    * stats.t.isf(0.025, g - 1))
        covered += [cr1 >= 0.05, cr2 >= 0.05]
        df.append(fit["df"])
        ratio.append(stats.t.isf(0.025, fit["df"]) * fit["se"] / cr1_half)
    return np.column_stack(covered), np.column_stack(df), np.column_stack(ratio)


def trend_interval(replicates: int, seed: int) -> list[str]:
    """The ``trend-interval`` section: coverage of CR1 and CR2 by conversation (MC standard
    error in brackets), CR2's median degrees of freedom and median width over CR1's."""
    lines = ["| K | conversations | conversation sd | " + " | ".join(TREND_COLUMNS) + " |",
             "|" + "---|" * (3 + len(TREND_COLUMNS))]
    for k, g in TREND_DESIGNS:
        for sd in CONVERSATION_SD:
            rng = np.random.default_rng([seed, k, g, int(sd * 100), 1])
            parts = [trend_block(k, g, sd, min(BLOCK * 4, replicates - start), rng)
                     for start in range(0, replicates, BLOCK * 4)]
            cover = np.concatenate([p[0] for p in parts]).mean(0)
            df = np.median(np.concatenate([p[1] for p in parts]), 0)
            ratio = np.median(np.concatenate([p[2] for p in parts]), 0)
            se = np.sqrt(cover * (1 - cover) / replicates)
            cells = []
            for layout in range(2):
                cells += [f"{cover[2 * layout + j]:.3f} ({se[2 * layout + j]:.3f})"
                          for j in range(2)]
                cells.append(f"{df[layout]:.1f}, {ratio[layout]:.2f}")
            lines.append(f"| {k} | {g} | {sd:g} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    return lines


SECTIONS: dict[str, Callable[[int, int], list[str]]] = {"interleaving": interleaving,
                                                        "trend-interval": trend_interval}


def main() -> None:
    """Run the sections asked for and print (or write) their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--replicates", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    out = [f"`uptime` before: {uptime()}",
           f"replicates: {args.replicates} (MC standard error of a size near 0.05: "
           f"{np.sqrt(0.05 * 0.95 / args.replicates):.4f}), seed {args.seed}", ""]
    for name in args.section or sorted(SECTIONS):
        print(f"## {name}", flush=True)
        out += [f"## {name}", "", *SECTIONS[name](args.replicates, args.seed), ""]
    out.append(f"`uptime` after: {uptime()}; {time.perf_counter() - start:.0f} s")
    publish("\n".join(out) + "\n", args.out)


if __name__ == "__main__":
    main()
