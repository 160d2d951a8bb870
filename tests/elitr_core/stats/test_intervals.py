"""When the judge audit says its t intervals are not to be trusted, in every export's ``note``:
fewer than 30 human scores (``bench/results/ppi-coverage-2026-11-25.md``) and samples skewed by
1 or more with fewer than 100 (``bench/bench_estimators.py``); t limits cut to the 1..10 scale.
Skewness against ``scipy.stats.skew(bias=False)`` (1e-12)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.data.benchmark import bundled_files, scores_frame
from elitr_core.stats.intervals import (
    SKEW_MARK,
    clip_to_scale,
    interval_note,
    skewness,
    small_sample_warning,
)
from elitr_core.stats.ppi import ppi_table


@pytest.fixture(scope="module")
def test2_qa_st() -> pd.DataFrame:
    df = scores_frame(bundled_files())
    return df[(df["split"] == "test2") & (df["setting"] == "qa") & (df["mode"] == "st")]


def test_skewness_equals_scipy() -> None:
    rng = np.random.default_rng(2)
    for n in (3, 10, 57):
        y = rng.integers(1, 11, n).astype(float)
        assert skewness(y) == pytest.approx(stats.skew(y, bias=False), abs=1e-12)
    assert np.isnan(skewness(np.array([4.0, 4.0, 4.0]))) and np.isnan(skewness(np.ones(2)))


def _fired(population: np.ndarray, n: int, rng: np.random.Generator) -> float:
    notes = [interval_note(rng.choice(population, n)) for _ in range(300)]
    return float(np.mean([SKEW_MARK in note for note in notes]))


def test_the_skew_note_fires_where_t_under_covers_and_not_elsewhere(
        test2_qa_st: pd.DataFrame) -> None:
    """silver-human's scores of GPT-4 (skewness -1.27; t coverage 0.937 at n = 30) are not
    piled up at one end (the old rule, half the scores at 1-2 or 9-10, never fired on them);
    the new note fires on most samples of 30 and on none of 100, where t covers again. On
    LongAlpaca-7B's silver scores (skewness +0.18, t covers 0.946) it stays quiet."""
    silver = test2_qa_st[test2_qa_st["evaluator"] == "silver-human"]
    gpt4 = silver.loc[silver["model"] == "GPT-4", "score"].to_numpy(float)
    longalpaca = silver.loc[silver["model"] == "LongAlpaca-7B", "score"].to_numpy(float)
    assert max((gpt4 <= 2.5).mean(), (gpt4 >= 8.5).mean()) < 0.5  # not piled up
    rng = np.random.default_rng(4)
    assert _fired(gpt4, 30, rng) >= 0.6
    assert _fired(gpt4, 100, rng) == 0.0
    assert _fired(longalpaca, 30, rng) <= 0.05


def test_the_note_says_few_scores_and_skew_in_the_ppi_export(test2_qa_st: pd.DataFrame) -> None:
    """The n < 30 warning and the skew note live in the table's note (so in CSV/JSON), not
    only on the page; a t limit past the scale is cut to it."""
    df = test2_qa_st[test2_qa_st["evaluator"].isin(["gpt-4", "gold-human"])].copy()
    gold = df["evaluator"] == "gold-human"
    gpt4 = df["model"] == "GPT-4"
    # GPT-4 keeps 5 gold scores, all 9 and 10: the t upper limit is 9.6 + 2.78 * 0.55 / sqrt(5)
    keep = df[gold & gpt4].index[:5]
    df.loc[keep, "score"] = [9.0, 10.0, 10.0, 9.0, 10.0]
    df = df[~(gold & gpt4) | df.index.isin(keep)]
    table = ppi_table(df, "gpt-4", "gold-human").set_index("model")
    row = table.loc["GPT-4"]
    assert row["n_labelled"] == 5
    assert row["note"].startswith("5 human scores, fewer than 30: the t intervals covered")
    assert row["human_ci_high"] == 10.0 and row["human_ci_low"] < 9.6
    limits = table.filter(like="_ci_").astype(float).to_numpy()
    assert ((limits[~np.isnan(limits)] >= 1) & (limits[~np.isnan(limits)] <= 10)).all()
    assert SKEW_MARK not in table.loc["LongAlpaca-7B", "note"]  # 130 scores: nothing to say


def test_clip_to_scale_keeps_missing_limits() -> None:
    assert clip_to_scale(0.2, 10.83) == (1.0, 10.0)
    assert clip_to_scale(3.0, 4.0) == (3.0, 4.0)
    low, high = clip_to_scale(float("nan"), float("nan"))
    assert np.isnan(low) and np.isnan(high)


def test_the_warning_names_each_case_and_is_silent_otherwise() -> None:
    assert small_sample_warning([130, 130, 1, 0]) is None  # one score: no interval at all
    few = small_sample_warning([10, 130])
    assert few is not None and "1 model(s) have fewer than 30 human scores" in few
    some = small_sample_warning([60])
    assert some is not None and "fewer than 100, where PPI++'s t interval" in some
    skewed = small_sample_warning([130, 130], ["", interval_note(np.array(
        [9, 9, 9, 10, 9, 9, 1, 9, 10, 9, 9, 8, 9, 9, 2, 9, 9, 10, 9, 9, 9, 9, 3, 9, 9, 9, 10, 9,
         9, 9, 9], float))])
    assert skewed is not None and f"1 model(s) have human scores {SKEW_MARK}" in skewed
    assert "betting interval" in skewed
