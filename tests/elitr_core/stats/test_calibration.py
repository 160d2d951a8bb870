"""Evaluator means on common responses and score-bin calibration against the t formula."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from elitr_core.data.importers import BUNDLED_EVALUATORS
from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.calibration import calibration, evaluator_means, score_bin
from elitr_core.vocab import EXPORT_COLUMNS
from tests.elitr_core.stats.synthetic import bundled, frame, paper_cell, row

#: t_{0.975, 2} from a printed Student t table (independent of scipy)
T_975_DF2 = 4.302653


def test_evaluator_means_keep_each_set_and_state_the_common_one() -> None:
    rows = [
        row(question_id="1", evaluator="gpt-4", score=8.0),
        row(question_id="1", evaluator="gold-human", score=6.0),
        row(question_id="2", evaluator="gpt-4", score=2.0),  # no human score
    ]
    table = evaluator_means(frame(rows))
    assert tuple(table.columns) == EXPORT_COLUMNS["evaluator-means"]
    means = table.set_index("evaluator")
    assert means.loc["gpt-4", ["n", "mean", "n_common", "mean_common"]].tolist() == [
        2, 5.0, 1, 8.0]
    assert means.loc["gold-human", ["n", "mean", "n_common", "mean_common"]].tolist() == [
        1, 6.0, 1, 6.0]


def test_evaluator_means_without_a_common_response_keep_their_own() -> None:
    rows = [row(question_id="1", evaluator="gpt-4"), row(question_id="2", evaluator="prometheus")]
    table = evaluator_means(frame(rows))
    assert table["n"].tolist() == [1, 1] and table["n_common"].tolist() == [0, 0]
    assert table["mean_common"].isna().all()


def test_score_bin_rounds_halves_up() -> None:
    got = score_bin(pd.Series([1.4, 1.5, 2.5, 6.5, 6.8, 7.5, 10.0]))
    assert got.tolist() == [1, 2, 3, 7, 7, 8, 10]


def bin_frame(pairs: list[tuple[float, float]]) -> pd.DataFrame:
    rows = []
    for i, (ref, judge) in enumerate(pairs):
        rows.append(row(question_id=str(i), evaluator="gold-human", score=ref))
        rows.append(row(question_id=str(i), evaluator="gpt-4", score=judge))
    return frame(rows)


def test_calibration_interval_matches_the_t_formula() -> None:
    # bin 7 holds judge scores 4, 6, 8: mean 6, s = 2, half-width t_{.975,2} * 2 / sqrt(3)
    table = calibration(bin_frame([(7.0, 4.0), (6.5, 6.0), (7.0, 8.0), (3.0, 5.0)]))
    assert tuple(table.columns) == EXPORT_COLUMNS["calibration"]
    seven = table[table["bin"] == 7].iloc[0]
    half = T_975_DF2 * 2 / np.sqrt(3)
    assert seven["n"] == 3 and seven["mean"] == pytest.approx(6.0)
    assert seven["ci_low"] == pytest.approx(6 - half, abs=1e-5)
    assert 6 + half > 10 and seven["ci_high"] == 10.0  # cut to the scale


def test_calibration_interval_is_cut_to_the_scale() -> None:
    # bin 9 holds judge scores 9, 10, 10: mean 9.67, s = 0.577, t limits 8.23 and 11.1
    nine = calibration(bin_frame([(9.0, 9.0), (9.0, 10.0), (9.0, 10.0)])).iloc[0]
    half = T_975_DF2 * np.std([9.0, 10.0, 10.0], ddof=1) / np.sqrt(3)
    assert 29 / 3 + half > 10
    assert nine["ci_low"] == pytest.approx(29 / 3 - half, abs=1e-5)
    assert nine["ci_high"] == 10.0


def test_single_response_bin_has_an_undefined_interval() -> None:
    table = calibration(bin_frame([(3.0, 5.0), (7.0, 4.0), (7.0, 8.0)]))
    three = table[table["bin"] == 3].iloc[0]
    assert three["n"] == 1 and three["mean"] == 5.0
    assert three["ci_low"] is pd.NA and three["ci_high"] is pd.NA
    assert three["note"] == "1 response in this bin: no interval"
    csv = pd.read_csv(io.StringIO(table.to_csv(index=False)), keep_default_na=False)
    assert csv.loc[csv["bin"] == 3, "ci_low"].item() == ""


def test_constant_bin_gets_a_note_not_a_zero_width_interval() -> None:
    # the t formula gives mean +/- t * 0 / sqrt(2): a zero-width interval
    assert T_975_DF2 * np.std([8.0, 8.0], ddof=1) / np.sqrt(2) == 0
    seven = calibration(bin_frame([(7.0, 8.0), (7.0, 8.0)])).iloc[0]
    assert seven["mean"] == 8.0 and seven["ci_low"] is pd.NA and seven["ci_high"] is pd.NA
    assert seven["note"].startswith("all 2 scores in this bin are 8:")


def test_calibration_errors() -> None:
    df = bin_frame([(7.0, 4.0), (7.0, 8.0)])
    with pytest.raises(UserError, match="reference evaluator 'silver-human'"):
        calibration(df, "silver-human")
    with pytest.raises(UserError, match="confidence"):
        calibration(df, confidence=1.0)
    with pytest.raises(UserError, match="have no score"):
        calibration(df, evaluators=["prometheus"])
    alone = frame([row(evaluator="gold-human")])
    with pytest.raises(DegenerateDataError, match="no other evaluator"):
        calibration(alone)
    with pytest.raises(UserError, match="1..10"):
        calibration(bin_frame([(0.2, 4.0)]))


# ---- bundled ELITR-Bench data -------------------------------------------------------------

def test_bundled_comparison_holds_390_responses_with_four_evaluators() -> None:
    means = evaluator_means(bundled())
    assert set(means["evaluator"]) == set(BUNDLED_EVALUATORS)
    assert means.groupby("evaluator")["n_common"].sum().eq(390).all()
    common = means[means["n_common"] > 0]
    assert set(common["model"]) == {"GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"}
    # the judges keep every response they scored (all 11 models), with its n
    assert means.loc[means["evaluator"] == "gpt-4", "n"].sum() > 390


def test_bundled_paper_level_evaluator_means() -> None:
    means = evaluator_means(paper_cell(bundled())).set_index(["model", "evaluator"])["mean"]
    assert 1 <= means[("GPT-4", "gold-human")] <= 10
    for evaluator in BUNDLED_EVALUATORS:
        for weaker in ("Vicuna-13B-v1.5", "LongAlpaca-7B"):
            assert means[(weaker, evaluator)] < means[("GPT-4", evaluator)]


def test_bundled_calibration_bins() -> None:
    table = calibration(paper_cell(bundled()))
    assert table.groupby("evaluator")["n"].sum().eq(390).all()
    assert set(table["bin"]) == set(range(1, 11))
    # every interval is defined (no bin of one) and brackets its mean
    assert (table["ci_low"] <= table["mean"]).all() and (table["mean"] <= table["ci_high"]).all()
    # silver humans follow gold: their mean rises from the low bins to the high ones
    silver = table[table["evaluator"] == "silver-human"].set_index("bin")["mean"]
    assert silver[10] - silver[1] > 5
