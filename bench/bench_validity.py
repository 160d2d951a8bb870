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

- ``sign-flip, meetings``: ``stats.paired.paired_by_meeting`` with meetings as clusters (the
  old ``export interleaving``);
- ``sign-flip, conversations``: the same with conversations as clusters (the table now);
- ``CR1 by meeting`` / ``CR1 by conversation``: the span trend's t-test,
  ``stats.interleaving.cluster_slope`` (OLS, CR1, t on G - 1 df), clustered by meeting (the
  old ``interleaving-span``) and by conversation;
- ``wild by conversation``: the trend's ``p`` now, ``stats.cluster_tests.wild_cluster_p``
  over conversations (all 2^G patterns up to 12 conversations; 1,999 random ones above, where
  the table draws 9,999).

With ``--replicates R`` the Monte-Carlo standard error of a size near 0.05 is
sqrt(0.05 * 0.95 / R) (0.005 at R = 2000). Figures are shares, not times; the load average is
printed anyway.

    python bench/bench_validity.py [--section interleaving] [--replicates 2000]
                                   [--out bench/results/x.md]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import publish  # noqa: E402
from elitr_core.stats.cluster_tests import wild_cluster_p  # noqa: E402
from elitr_core.stats.interleaving import cluster_slope  # noqa: E402
from elitr_core.stats.paired import paired_by_meeting  # noqa: E402

#: (K meetings a conversation, G conversations): the issue's int2 (8 meetings in 4) and int3
#: (6 in 2) runs of one split, then runs over more meetings, where a test can reach 0.05.
DESIGNS = ((2, 4), (3, 2), (2, 12), (3, 10), (2, 20))
CONVERSATION_SD = (0.5, 1.0)
SPAN = 16_000


def interleaved_null(rng: np.random.Generator, k: int, g: int,
                     sd: float) -> tuple[np.ndarray, ...]:
    """One null data set: per question its value, meeting, conversation and spans (tokens)
    in the two layouts."""
    sizes = rng.integers(8, 23, k * g)
    meeting = np.repeat(np.arange(k * g), sizes)
    conversation = meeting // k
    value = rng.normal(0.0, sd, g)[conversation] + rng.normal(0.0, 1.0, meeting.size)
    transcript = rng.uniform(6_000, 14_000, k * g)
    later = np.array([transcript[m + 1:(m // k + 1) * k].sum() for m in range(k * g)])
    place = np.concatenate([np.arange(n) for n in sizes]) * 60.0 * k
    sweep = rng.uniform(4_000, 32_000, g)[conversation] + place
    return value, meeting, conversation, SPAN + later[meeting] + place, sweep


def interleaving_row(k: int, g: int, sd: float, replicates: int, seed: int) -> list[float]:
    """Share of p < 0.05 of the eight tests over ``replicates`` null data sets."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(8)
    for r in range(replicates):
        value, meeting, conversation, span, sweep = interleaved_null(rng, k, g, sd)
        names = ("bench", str(r))
        p = [paired_by_meeting(value, clusters, names, n_bootstrap=0, seed=seed,
                               confidence=0.95, same="")["p"]
             for clusters in (meeting, conversation)]
        for x in (span / 1000, sweep / 1000):
            p += [cluster_slope(x, value, meeting)["p"], cluster_slope(x, value, conversation)["p"],
                  wild_cluster_p(x, value, conversation, 1999, rng)]
        hits += np.array(p) < 0.05
    return list(hits / replicates)


def interleaving(replicates: int, seed: int) -> list[str]:
    """The ``interleaving`` section: a markdown table of sizes."""
    lines = ["| K | conversations | meetings | conversation sd | sign-flip by meeting (old) | "
             "sign-flip by conversation (now) | one run: CR1 by meeting (old) | "
             "CR1 by conversation | wild by conversation (now) | a sweep: CR1 by meeting "
             "(old) | CR1 by conversation | wild by conversation (now) |",
             "|" + "---|" * 12]
    for k, g in DESIGNS:
        for sd in CONVERSATION_SD:
            row = interleaving_row(k, g, sd, replicates, seed)
            lines.append(f"| {k} | {g} | {k * g} | {sd:g} | "
                         + " | ".join(f"{share:.3f}" for share in row) + " |")
            print(lines[-1], flush=True)
    return lines


SECTIONS: dict[str, Callable[[int, int], list[str]]] = {"interleaving": interleaving}


def main() -> None:
    """Run the sections asked for and print (or write) their tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--section", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = [f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
           f"replicates: {args.replicates} (MC standard error of a size near 0.05: "
           f"{np.sqrt(0.05 * 0.95 / args.replicates):.4f}), seed {args.seed}", ""]
    for name in args.section or sorted(SECTIONS):
        print(f"## {name}", flush=True)
        out += [f"## {name}", "", *SECTIONS[name](args.replicates, args.seed), ""]
    out.append(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    publish("\n".join(out) + "\n", args.out)


if __name__ == "__main__":
    main()
