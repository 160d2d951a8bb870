"""The exact sign-flip test over meetings: meet-in-the-middle count against every pattern.

``elitr_core.stats.cluster_tests.sign_flip_p`` counts the 2^M whole-meeting sign patterns
whose total is at least as far from 0 as the observed one. Side by side, for M clusters:
the earlier enumeration (every pattern written out, 2^15 rows at a time, one matrix product
each) and the meet-in-the-middle count (the 2^(M/2) totals of one half against the sorted
totals of the other). Then the tables that run the test once per row on the bundled data
(``model-difference`` for every model pair, ``st-vs-mt``). Last, the question-level
Wilcoxon test beside it (``p_naive``): ``scipy.stats.wilcoxon`` on every row (before) against
``elitr_core.stats.paired.signed_rank_test`` (now) in ``export model-difference`` on the
tests' small benchmark (18 rows of 12 questions: scipy's exact permutation path). CPU
seconds (``process_time``), best of ``--repeats``; the load average is printed: on this
2-core machine other work moves every figure.

    python bench/bench_sign_flip.py [--repeats 3]
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

from elitr_core.stats import cluster_tests  # noqa: E402
from elitr_core.stats.cluster_tests import sign_flip_p  # noqa: E402

_CHUNK = 1 << 15


def every_pattern_hits(sums: np.ndarray, threshold: float) -> int:
    """The enumeration sign_flip_p used before: M x 2^M multiplications."""
    total = 1 << sums.size
    hits = 0
    for start in range(0, total, _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, total), dtype=np.int64)[:, None]
        signs = 1.0 - 2.0 * ((rows >> np.arange(sums.size, dtype=np.int64)) & 1)
        hits += int((np.abs(signs @ sums) >= threshold).sum())
    return hits


def every_pattern_p(sums: np.ndarray) -> float:
    return every_pattern_hits(sums, abs(sums.sum()) * (1 - 1e-9) - 1e-9) / (1 << sums.size)


def best_cpu(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} / {os.getloadavg()[1]:.2f} / "
          f"{os.getloadavg()[2]:.2f}")
    print("clusters | every pattern (before) | meet in the middle (now) | same p")
    rng = np.random.default_rng(0)
    for m in (10, 14, 18, 20):
        sums = rng.integers(-20, 25, m).astype(float)
        before = best_cpu(lambda s=sums: every_pattern_p(s), args.repeats)
        now = best_cpu(lambda s=sums: sign_flip_p(s), args.repeats)
        print(f"{m:8d} | {before * 1e3:19.2f} ms | {now * 1e3:21.3f} ms | "
              f"{every_pattern_p(sums) == sign_flip_p(sums)}")

    from elitr_core.stats.conversation import st_vs_mt
    from elitr_core.stats.paired import model_difference
    from tests.elitr_core.stats.synthetic import bundled

    scores = bundled()
    print("table (bundled data) | rows | every pattern (before) | meet in the middle (now)")
    for name, build in (("model-difference, every pair", lambda: model_difference(scores)),
                        ("st-vs-mt", lambda: st_vs_mt(scores))):
        now = best_cpu(build, args.repeats)
        meet_in_the_middle = cluster_tests._exact_hits
        cluster_tests._exact_hits = every_pattern_hits
        try:
            before = best_cpu(build, args.repeats)
        finally:
            cluster_tests._exact_hits = meet_in_the_middle
        print(f"{name} | {len(build())} | {before:.2f} CPU s | {now:.2f} CPU s")
    _signed_rank(args.repeats)
    print(f"load average {os.getloadavg()[0]:.2f}")


def _signed_rank(repeats: int) -> None:
    import contextlib
    import io
    import tempfile

    from scipy import stats

    from elitr_core.cli.main import main as cli
    from elitr_core.stats import paired
    from tests import small_db

    def scipy_test(diff: np.ndarray) -> tuple[float, float]:
        test = stats.wilcoxon(diff)
        return float(test.statistic), float(test.pvalue)

    url = f"sqlite:///{tempfile.mkdtemp(prefix='bench-signed-rank-')}/small.db"
    small_db.build(url)

    def export(table: str) -> str:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli(["export", table, "--format", "json", "--db", url]) == 0
        return out.getvalue()

    print("export (small benchmark) | scipy.stats.wilcoxon (before) | signed_rank_test (now) "
          "| same output")
    for table in ("model-difference",):
        now = best_cpu(lambda t=table: export(t), repeats)
        same = export(table)
        paired.signed_rank_test, mine = scipy_test, paired.signed_rank_test
        try:
            before = best_cpu(lambda t=table: export(t), repeats)
            same = same == export(table)
        finally:
            paired.signed_rank_test = mine
        print(f"{table} | {before:.2f} CPU s | {now:.2f} CPU s | {same}")


if __name__ == "__main__":
    main()
