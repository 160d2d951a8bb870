"""Figure downloads: the time from a PNG/SVG download click's call to its bytes.

The pages render a figure only when its download button is clicked
(``elitr_core.export.figures.figure_bytes``). Side by side, in one process and on the same
figures (the Leaderboard's bars and the Calibration plot of the bundled data):

- one-shot: a Chromium started and stopped for every figure (the pages' way before issue 28);
- warm: ``keep_warm=True``, the pages' way now: the first download starts kaleido's server
  (one Chromium), the later ones reuse it.

Each mode renders ``--repeats`` rounds of PNG and SVG of both figures, taking turns so that the
machine's load hits both; the load averages are printed before and after (figures on the
2-core shared machine move with them).

    python bench/bench_figures.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _figures() -> list[object]:
    """A Calibration plot and the Leaderboard's bars, on small synthetic tables of the shapes
    the pages draw (the rendering, not the data, is what is timed)."""
    import pandas as pd

    from elitr_core.export import figures

    calibration = pd.DataFrame({
        "reference": "gold-human", "evaluator": ["gpt-4"] * 3 + ["prometheus"] * 3,
        "bin": [1, 5, 10] * 2, "n": [4, 7, 1, 4, 7, 1],
        "mean": [2.0, 5.5, 9.0, 3.0, 5.0, 6.0],
        "ci_low": [1.0, 5.0, None, 2.0, 4.0, None], "ci_high": [3.5, 6.0, None, 4.0, 6.5, None]})
    board = pd.DataFrame([
        {"model": m, "split": "test2", "setting": s, "mode": mode, "evaluator": "gpt-4",
         "mean": 5 + i * 0.5 + j, "std": None, "n": 130, "n_seeds": 1}
        for i, m in enumerate(("GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"))
        for j, (s, mode) in enumerate((("qa", "st"), ("qa", "mt"), ("conv", "mt")))])
    return [figures.calibration_plot(calibration),
            figures.leaderboard_bars(board, "gpt-4", "test2")]


def _time(fig: object, fmt: str, warm: bool) -> float:
    from elitr_core.export.figures import figure_bytes

    started = time.perf_counter()
    data = figure_bytes(fig, fmt, keep_warm=warm)  # type: ignore[arg-type]
    assert data, "a figure renders to some bytes"
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import kaleido

    print(f"load average before: {os.getloadavg()}")
    figs = _figures()
    times: dict[str, list[float]] = {"one-shot": [], "warm, first": [], "warm, later": []}
    for round_ in range(args.repeats):
        # one-shot first (no server: each call starts its own Chromium), then warm from cold
        kaleido.stop_sync_server(silence_warnings=True)
        pairs = [(fig, fmt) for fig in figs for fmt in ("png", "svg")]
        times["one-shot"] += [_time(fig, fmt, warm=False) for fig, fmt in pairs]
        warm = [_time(fig, fmt, warm=True) for fig, fmt in pairs]
        times["warm, first"].append(warm[0])
        times["warm, later"] += warm[1:]
        print(f"round {round_ + 1} done, load {os.getloadavg()}")
    kaleido.stop_sync_server(silence_warnings=True)
    print(f"load average after: {os.getloadavg()}")
    print("\n| mode | downloads | median s | max s |\n| --- | --- | --- | --- |")
    for mode, values in times.items():
        print(f"| {mode} | {len(values)} | {statistics.median(values):.2f} | "
              f"{max(values):.2f} |")


if __name__ == "__main__":
    main()
