"""Paired difference of two runs, the meeting as the unit.

References (tests/elitr_core/stats/cluster_references.py): the interval against every
bootstrap replicate rebuilt by repeating the drawn meetings' questions (same draws, 1e-12);
``p`` against all 2^M whole-meeting sign flips enumerated with itertools (exact, 1e-12);
``p_naive`` against ``scipy.stats.wilcoxon`` and, without ties, all 2^n signed-rank flips
(1e-12). A simulation for the coverage (rates and their Monte Carlo error in the test); the
bundled data and the CLI for the shape of the export.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from elitr_core.cli.main import main
from elitr_core.errors import DegenerateDataError
from elitr_core.stats.agreement import cluster_weights
from elitr_core.stats.paired import (
    DIFFERENCE_COLUMNS,
    model_difference,
    paired_by_meeting,
    signed_rank_test,
)
from tests.elitr_core.stats.cluster_references import (
    exact_sign_flip_p,
    exact_wilcoxon_p,
    explicit_cluster_bootstrap,
)
from tests.elitr_core.stats.synthetic import bundled, frame, paper_cell, questions_frame, row


def meetings_frame(scores: dict[str, dict[int, list[float]]]) -> pd.DataFrame:
    """Model -> meeting number -> its questions' scores (NaN: no answer to that question)."""
    return frame([row(meeting=f"meeting_en_test2_{m:03d}", question_id=str(q + 1), model=model,
                      score=score)
                  for model, meetings in scores.items() for m, values in meetings.items()
                  for q, score in enumerate(values) if not np.isnan(score)])


A = {1: [5.0, 6.0, 7.0], 2: [4.0, 8.0], 3: [6.0, 6.0, 2.0, 9.0], 4: [7.0, 3.0]}
B = {1: [6.0, 6.0, 9.5], 2: [7.0, 8.5], 3: [4.5, 8.0, 3.75, 9.25], 4: [7.75, 3.0]}


def test_against_explicit_resampling_and_enumerated_tests() -> None:
    table = model_difference(meetings_frame({"M": A, "M (bm25)": B}), n_bootstrap=400, seed=3)
    assert tuple(table.columns) == DIFFERENCE_COLUMNS
    got = table.iloc[0]
    a, b = np.concatenate(list(A.values())), np.concatenate(list(B.values()))
    diff = b - a
    meetings = np.repeat([1, 2, 3, 4], [len(v) for v in A.values()])
    assert (got["model_a"], got["model_b"], got["n"], got["n_meetings"]) == (
        "M", "M (bm25)", 11, 4)
    assert (got["mean_a"], got["mean_b"], got["difference"]) == pytest.approx(
        (a.mean(), b.mean(), diff.mean()), abs=1e-12)
    nonzero = diff[diff != 0]
    assert np.unique(np.abs(nonzero)).size == nonzero.size  # no ties: scipy's exact test
    assert got["p_naive"] == pytest.approx(exact_wilcoxon_p(nonzero), abs=1e-12)
    assert (got["wilcoxon"], got["p_naive"]) == pytest.approx(
        (stats.wilcoxon(diff).statistic, stats.wilcoxon(diff).pvalue), abs=1e-12)
    sums = np.array([diff[meetings == m].sum() for m in (1, 2, 3, 4)])
    assert got["p"] == pytest.approx(exact_sign_flip_p(sums), abs=1e-12)
    reps = explicit_cluster_bootstrap(meetings, lambda i: diff[i].mean(),
                                      ("M", "M (bm25)", "qa", "st", "gpt-4"), 400, seed=3)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(
        tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-12)
    assert got["note"] == ("with 4 meetings the sign-flip test cannot go below p = 0.125: no "
                           "difference can reach p < 0.05")


@pytest.mark.parametrize("values", ["small integers", "halves", "one decimal", "continuous"])
def test_signed_rank_test_equals_scipy_with_ties_zeros_and_without(values: str) -> None:
    """``p_naive`` is scipy.stats.wilcoxon's, to 1e-12, on both of its paths: the exact
    sign-flip test with ties or zeros (n <= 13, enumerated here by one matrix product) and
    everything else (scipy's own call). The samples are a paired benchmark's: scores on a
    10-point scale and their means, so ties and zeros are the rule."""
    rng = np.random.default_rng(["small integers", "halves", "one decimal",
                                 "continuous"].index(values))
    draw = {"small integers": lambda n: rng.integers(-3, 4, n).astype(float),
            "halves": lambda n: rng.integers(-10, 11, n) / 2,
            "one decimal": lambda n: rng.normal(size=n).round(1),
            "continuous": lambda n: rng.normal(size=n)}[values]
    checked = 0
    for n in [*range(1, 12), 13, 14, 20]:
        diff = draw(n)
        if not np.any(diff):
            continue
        with warnings.catch_warnings():  # scipy: too few differences for its normal approximation
            warnings.simplefilter("ignore")
            expected = stats.wilcoxon(diff)
        got = signed_rank_test(diff)
        assert got == pytest.approx((expected.statistic, expected.pvalue), abs=1e-12,
                                    nan_ok=True), diff
        checked += 1
    assert checked >= 10


def test_a_pair_sharing_questions_in_some_meetings_resamples_those_meetings_only() -> None:
    """A has meetings 1-4 (one question of meeting 3 unanswered), B meetings 2-4 and 5: the
    pair's clusters are meetings 2, 3 and 4 with the questions both answered."""
    partial_a = {**A, 3: [6.0, np.nan, 2.0, 9.0]}
    partial_b = {m: B[m] for m in (2, 3, 4)} | {5: [1.0, 2.0]}
    got = model_difference(meetings_frame({"A": partial_a, "B": partial_b}),
                           n_bootstrap=300).iloc[0]
    a = np.array([4.0, 8.0, 6.0, 2.0, 9.0, 7.0, 3.0])
    b = np.array([7.0, 8.5, 4.5, 3.75, 9.25, 7.75, 3.0])
    meetings = np.array([2, 2, 3, 3, 3, 4, 4])
    diff = b - a
    assert (got["n"], got["n_meetings"]) == (7, 3)
    assert got["difference"] == pytest.approx(diff.mean(), abs=1e-12)
    sums = np.array([diff[meetings == m].sum() for m in (2, 3, 4)])
    assert got["p"] == pytest.approx(exact_sign_flip_p(sums), abs=1e-12)
    reps = explicit_cluster_bootstrap(meetings, lambda i: diff[i].mean(),
                                      ("A", "B", "qa", "st", "gpt-4"), 300)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(
        tuple(np.quantile(reps, [0.025, 0.975])), abs=1e-12)


def test_only_common_questions_and_clear_errors() -> None:
    df = questions_frame({"A": [5.0, 6.0, 7.0], "B": [9.0, 9.0], "C": [1.0]})
    row_ab = model_difference(df, ("A", "B"), n_bootstrap=0).iloc[0]
    assert (row_ab["n"], row_ab["difference"]) == (2, 3.5)  # questions 1 and 2 only
    assert pd.isna(row_ab["ci_low"])
    every = model_difference(df, n_bootstrap=0)
    assert list(zip(every["model_a"], every["model_b"], every["n"], strict=True)) == [
        ("A", "B", 2), ("A", "C", 1), ("B", "C", 1)]
    with pytest.raises(DegenerateDataError, match="needs two models, the filters hold 1"):
        model_difference(questions_frame({"A": [5.0]}))
    with pytest.raises(DegenerateDataError, match="no two models answered a common question"):
        model_difference(questions_frame({"A": [5.0, np.nan], "B": [np.nan, 4.0]}))


def test_one_meeting_gets_no_cluster_interval_nor_test_and_says_so() -> None:
    got = model_difference(questions_frame({"A": [5.0, 6.0, 7.0, 8.0],
                                            "B": [6.0, 6.0, 9.0, 7.5]}), n_bootstrap=100).iloc[0]
    assert (got["n"], got["n_meetings"], got["difference"]) == (4, 1, 0.625)
    assert pd.isna(got["ci_low"]) and pd.isna(got["ci_high"]) and pd.isna(got["p"])
    assert got["p_naive"] == pytest.approx(stats.wilcoxon([1.0, 0.0, 2.0, -0.5]).pvalue)
    assert "one meeting only" in got["note"]


def test_all_differences_zero() -> None:
    same = {1: [5.0, 6.0], 2: [7.0, 3.0], 3: [4.0, 4.0]}
    got = model_difference(meetings_frame({"A": same, "B": same}), n_bootstrap=100).iloc[0]
    assert (got["difference"], got["n_meetings"], got["p"]) == (0.0, 3, 1.0)  # every flip ties
    assert pd.isna(got["ci_low"]) and pd.isna(got["wilcoxon"]) and pd.isna(got["p_naive"])
    assert got["note"] == "every difference is 0: A and B score the same on every question"


def test_no_variation_between_meetings_leaves_the_interval_empty() -> None:
    """Resampling meetings whose mean differences are all d gives [d, d] (checked explicitly
    below); the table leaves it empty and says why."""
    weights = cluster_weights(3, 50, np.random.default_rng(0))
    assert {float(np.repeat([2.0, 2.0, 2.0], w).mean()) for w in weights} == {2.0}
    constant = {1: [7.0, 8.0], 2: [9.0, 5.0], 3: [6.0]}
    a = {m: [s - 2.0 for s in v] for m, v in constant.items()}
    got = model_difference(meetings_frame({"A": a, "B": constant}), n_bootstrap=50).iloc[0]
    assert got["difference"] == 2.0 and pd.isna(got["ci_low"]) and pd.isna(got["ci_high"])
    assert got["note"].startswith("every question's difference is 2: a zero-width interval")
    assert np.isfinite(got["p_naive"]) and got["p"] == 0.25  # 2 of 8 flips reach |10|
    varied = {1: [7.0, 8.0], 2: [9.0, 5.0], 3: [6.0, 6.0]}
    a = {1: [6.0, 5.0], 2: [7.0, 5.0], 3: [4.0, 6.0]}  # meeting means of b - a: 2, 1 and 1
    mixed = model_difference(meetings_frame({"A": a, "B": varied}), n_bootstrap=50).iloc[0]
    assert mixed["ci_low"] < mixed["ci_high"]
    a[1] = [6.0, 7.0]  # differences 1, 1, 2, 0, 2, 0: every meeting's mean is 1
    flat = model_difference(meetings_frame({"A": a, "B": varied}), n_bootstrap=50).iloc[0]
    assert pd.isna(flat["ci_low"]) and flat["note"].startswith(
        "every meeting's mean difference is 1: a zero-width interval")


def correlated_differences(rng: np.random.Generator, delta: float) -> tuple[np.ndarray, ...]:
    """18 meetings of 8 to 22 questions; each meeting shifts all its differences together
    (sd 1, as much as the questions' own noise): within-meeting correlation 0.5."""
    sizes = rng.integers(8, 23, 18)
    meetings = np.repeat(np.arange(18), sizes)
    diff = delta + rng.normal(0, 1, 18)[meetings] + rng.normal(0, 1, meetings.size)
    return diff, meetings


def test_question_intervals_under_cover_where_meeting_intervals_do_not() -> None:
    """Simulation, 300 data sets, true mean difference 0.5, 95% intervals. Over questions
    (the interval this table had: percentile bootstrap of the paired questions, B = 400) the
    interval is about a third as wide as the meetings' one (mean width 0.33 vs 0.93) and
    covers 0.5 in under half the data sets (seen 0.46); over meetings (B = 400) near the
    nominal rate (seen 0.94). Monte Carlo sd of a rate about 0.015, so the bounds below are
    far from chance. About 1.7 CPU s."""
    rng = np.random.default_rng(11)
    covered_questions = covered_meetings = 0
    for _ in range(300):
        diff, meetings = correlated_differences(rng, 0.5)
        weights = rng.multinomial(diff.size, np.full(diff.size, 1 / diff.size), 400)
        low, high = np.quantile(weights @ diff / diff.size, [0.025, 0.975])
        covered_questions += low <= 0.5 <= high
        got = paired_by_meeting(diff, meetings, ("sim",), n_bootstrap=400, seed=0,
                                confidence=0.95, same="")
        covered_meetings += got["ci_low"] <= 0.5 <= got["ci_high"]
    assert covered_questions / 300 < 0.65
    assert 0.89 <= covered_meetings / 300 <= 0.99


def test_bundled_difference_is_the_difference_of_the_means(
        capsys: pytest.CaptureFixture[str], bundled_sqlite: str) -> None:
    cell = paper_cell(bundled())
    cell = cell[cell["evaluator"] == "gpt-4"]
    got = model_difference(cell, ("GPT-4", "Vicuna-13B-v1.5")).iloc[0]  # as the CLI
    means = cell.groupby("model")["score"].mean()
    assert (got["n"], got["n_meetings"]) == (130, 8)
    assert got["difference"] == pytest.approx(means["Vicuna-13B-v1.5"] - means["GPT-4"])
    assert got["ci_low"] < got["difference"] < got["ci_high"] < 0  # GPT-4 is better
    wide = cell.pivot_table(index=["meeting", "question_id"], columns="model", values="score")
    sums = (wide["Vicuna-13B-v1.5"] - wide["GPT-4"]).groupby(level="meeting").sum()
    assert (sums < 0).sum() == 7  # 7 of the 8 meetings favour GPT-4: 4 of 256 flips as far
    assert got["p"] == pytest.approx(exact_sign_flip_p(sums.to_numpy()), abs=1e-12)
    assert got["p_naive"] < got["p"] and got["note"] == ""
    assert main(["export", "model-difference", "--model", "GPT-4", "--model",
                 "Vicuna-13B-v1.5", "--split", "test2", "--setting", "qa", "--mode", "st",
                 "--evaluator", "gpt-4", "--db", bundled_sqlite]) == 0
    exported = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert list(exported.columns) == list(DIFFERENCE_COLUMNS)
    assert exported[["difference", "ci_low", "ci_high", "p", "p_naive"]].iloc[0].tolist() == \
        pytest.approx([got[c] for c in ("difference", "ci_low", "ci_high", "p", "p_naive")],
                      rel=1e-5)
