"""ICC (pingouin, mapped to Shrout & Fleiss names) and Krippendorff's alpha.

References: the Shrout & Fleiss (1979) 6 targets x 4 judges table (published values to two
decimals, tolerance 0.005); mean squares computed by hand with numpy (1e-10); Krippendorff's
(2011) worked example and the krippendorff package's docstring example (1e-3 / 1e-6);
degenerate tables (constant raters, perfect agreement, constant offsets) against the hand
ANOVA's mean squares: which are zero names the note, and the ICCs that stay defined equal the
hand formulas (1e-10).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.icc import (
    ICC_COLUMNS,
    ICC_TYPES,
    annotator_icc_overall,
    annotator_icc_per_meeting,
    degenerate_note,
    evaluator_icc,
    icc_table,
    koo_li_reading,
    krippendorff_alpha,
    with_reading,
)
from tests.elitr_core.stats.synthetic_b2 import make_scores, wide_to_long

SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
                 [6, 2, 4, 7]]
PUBLISHED = {"ICC(1)": 0.17, "ICC(2)": 0.29, "ICC(3)": 0.71, "ICC(1,k)": 0.44,
             "ICC(2,k)": 0.62, "ICC(3,k)": 0.91}
NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units
KRIPPENDORFF_2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                     [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


def long_table(table: list[list[float]]) -> pd.DataFrame:
    return pd.DataFrame([(t, r, v) for t, row in enumerate(table) for r, v in enumerate(row)],
                        columns=["item", "judge", "score"])


def hand_icc(table: np.ndarray) -> dict[str, float]:
    """Shrout & Fleiss formulas from two-way ANOVA mean squares."""
    n, k = table.shape
    grand = table.mean()
    ss_rows = k * ((table.mean(1) - grand) ** 2).sum()
    ss_cols = n * ((table.mean(0) - grand) ** 2).sum()
    ss_total = ((table - grand) ** 2).sum()
    bms, jms = ss_rows / (n - 1), ss_cols / (k - 1)
    wms = (ss_total - ss_rows) / (n * (k - 1))
    ems = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
    return {"ICC(1)": (bms - wms) / (bms + (k - 1) * wms),
            "ICC(2)": (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n),
            "ICC(3)": (bms - ems) / (bms + (k - 1) * ems),
            "ICC(1,k)": (bms - wms) / bms,
            "ICC(2,k)": (bms - ems) / (bms + (jms - ems) / n),
            "ICC(3,k)": (bms - ems) / bms}


def test_shrout_fleiss_published_values() -> None:
    table = icc_table(long_table(SHROUT_FLEISS), "item", "judge", "score")
    assert tuple(table.columns) == ICC_COLUMNS
    assert list(table["icc_type"]) == list(ICC_TYPES)
    assert (table["group"] == "all").all()
    assert (table["n_targets"] == 6).all() and (table["n_raters"] == 4).all()
    for row in table.itertuples():
        assert row.icc == pytest.approx(PUBLISHED[row.icc_type], abs=0.005)
        assert row.icc == pytest.approx(hand_icc(np.array(SHROUT_FLEISS, float))[row.icc_type],
                                        abs=1e-10)
        assert row.ci_low < row.icc < row.ci_high
    # the CI is not pingouin's 2-decimal rounding
    assert table["ci_low"].iloc[0] == pytest.approx(-0.1329, abs=1e-4)
    assert table.attrs["dropped_targets"] == {"all": 0}


def test_readings_follow_koo_and_li() -> None:
    cases = {0.49: "poor", 0.5: "moderate", 0.74: "moderate", 0.75: "good", 0.9: "good",
             0.91: "excellent", -0.2: "poor"}
    for value, reading in cases.items():
        assert koo_li_reading(value) == reading
    table = with_reading(icc_table(long_table(SHROUT_FLEISS), "item", "judge", "score"))
    assert list(table["reading"]) == ["poor", "poor", "moderate", "poor", "moderate",
                                      "excellent"]
    with pytest.raises(DegenerateDataError):
        koo_li_reading(float("nan"))


def test_missing_ratings_raise_or_are_dropped_and_counted() -> None:
    ratings = long_table(SHROUT_FLEISS + [[5, 5, 5, 5]])
    ratings.loc[len(ratings) - 1, "score"] = np.nan  # target 6 lacks judge 3
    with pytest.raises(UserError, match="1 of 7 targets lack a rating"):
        icc_table(ratings, "item", "judge", "score")
    kept = icc_table(ratings, "item", "judge", "score", nan_policy="omit", forms=["ICC(2,k)"])
    assert kept.attrs["dropped_targets"] == {"all": 1}
    assert kept["n_targets"].iloc[0] == 6
    assert kept["icc"].iloc[0] == pytest.approx(0.62, abs=0.005)


def test_groups_and_input_checks() -> None:
    first = long_table(SHROUT_FLEISS).assign(meeting="m1")
    second = long_table([[r[0], r[1], r[0], r[1]] for r in SHROUT_FLEISS]).assign(meeting="m2")
    table = icc_table(pd.concat([first, second]), "item", "judge", "score", group="meeting",
                      forms=["ICC(3,k)"])
    assert list(table["group"]) == ["m1", "m2"]
    assert table["icc"].iloc[0] == pytest.approx(0.91, abs=0.005)
    with pytest.raises(UserError, match="unknown ICC form"):
        icc_table(first, "item", "judge", "score", forms=["ICC(A,k)"])
    with pytest.raises(UserError, match="nan_policy"):
        icc_table(first, "item", "judge", "score", nan_policy="drop")
    with pytest.raises(UserError, match="lacks column"):
        icc_table(first, "item", "rater", "score")
    with pytest.raises(DegenerateDataError, match="no scores"):
        icc_table(first.iloc[:0], "item", "judge", "score")
    with pytest.raises(UserError, match="rated twice"):
        icc_table(pd.concat([first, first.iloc[:1]]), "item", "judge", "score")
    with pytest.raises(DegenerateDataError, match="2 raters"):
        icc_table(first[first["judge"] == 0], "item", "judge", "score")
    with pytest.raises(DegenerateDataError, match="same"):
        icc_table(first.assign(score=3.0), "item", "judge", "score")


def test_annotator_icc_per_meeting() -> None:
    data = pd.concat([wide_to_long(SHROUT_FLEISS, meeting="meeting_en_dev_001"),
                      wide_to_long(np.array(SHROUT_FLEISS)[:, :3].tolist(),
                                   meeting="meeting_en_dev_002")])
    # an aggregate row and another evaluator must be ignored
    extra = data.iloc[:2].assign(annotator=None, score=1.0)
    judge = data.iloc[:2].assign(evaluator="gpt-4", annotator=None)
    table = annotator_icc_per_meeting(pd.concat([data, extra, judge]))
    assert list(table["group"]) == ["meeting_en_dev_001", "meeting_en_dev_002"]
    assert list(table["icc_type"]) == ["ICC(2,k)", "ICC(2,k)"]
    assert list(table["n_raters"]) == [4, 3]
    expected = hand_icc(np.array(SHROUT_FLEISS, float)[:, :3])["ICC(2,k)"]
    assert table["icc"].iloc[0] == pytest.approx(0.62, abs=0.005)
    assert table["icc"].iloc[1] == pytest.approx(expected, abs=1e-10)


def test_annotator_icc_overall_uses_rater_slots() -> None:
    other = [[5, 6, 4, 6], [2, 3, 3, 1], [8, 9, 7, 9]]
    data = pd.concat([wide_to_long(SHROUT_FLEISS, meeting="meeting_en_dev_001"),
                      wide_to_long(other, meeting="meeting_en_dev_002")])
    table = annotator_icc_overall(data)
    assert list(table["icc_type"]) == ["ICC(1,k)"] and table["group"].iloc[0] == "all"
    assert table["n_targets"].iloc[0] == 9 and table["n_raters"].iloc[0] == 4
    stacked = np.array(SHROUT_FLEISS + other, float)
    assert table["icc"].iloc[0] == pytest.approx(hand_icc(stacked)["ICC(1,k)"], abs=1e-10)


def test_individual_annotators_are_required() -> None:
    aggregate_only = make_scores(n_meetings=1, questions_per_meeting=3)
    aggregate_only = aggregate_only[aggregate_only["annotator"].isna()]
    with pytest.raises(DegenerateDataError, match="no individual annotator score"):
        annotator_icc_per_meeting(aggregate_only)
    one = wide_to_long([[v[0]] for v in SHROUT_FLEISS])
    with pytest.raises(DegenerateDataError, match="1 rater"):
        annotator_icc_per_meeting(one)
    with pytest.raises(DegenerateDataError, match="at least 2 raters"):
        krippendorff_alpha(one)


def test_evaluator_icc_against_hand_anova() -> None:
    scores = make_scores(n_meetings=2, questions_per_meeting=6, judge_samples=2, seed=9)
    table = evaluator_icc(scores)
    base = scores[scores["annotator"].isna()]
    wide = base.groupby(["meeting", "question_id", "model", "evaluator"])["score"].mean()
    matrix = wide.unstack("evaluator").to_numpy(float)
    expected = hand_icc(matrix)
    assert list(table["icc_type"]) == list(ICC_TYPES)
    assert (table["n_targets"] == 36).all() and (table["n_raters"] == 4).all()
    for row in table.itertuples():
        assert row.icc == pytest.approx(expected[row.icc_type], abs=1e-10)
    two = evaluator_icc(scores, ["gpt-4", "gold-human"], forms=["ICC(3)"])
    assert two["n_raters"].iloc[0] == 2


def test_krippendorff_published_examples() -> None:
    units = np.array(KRIPPENDORFF_2011).T.tolist()
    data = wide_to_long(units)
    data = data[data["score"].notna()]
    assert krippendorff_alpha(data, level="interval") == pytest.approx(0.849, abs=1e-3)
    assert krippendorff_alpha(data, level="ordinal") == pytest.approx(0.815, abs=1e-3)
    docs = [[NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
            [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
            [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4]]
    docs_data = wide_to_long(np.array(docs).T.tolist())
    # NaN cells are missing ratings: the function drops them itself
    assert krippendorff_alpha(docs_data, level="interval") == pytest.approx(0.810845, abs=1e-6)
    with pytest.raises(UserError, match="level"):
        krippendorff_alpha(data, level="cardinal")
    with pytest.raises(DegenerateDataError, match="same"):
        krippendorff_alpha(data.assign(score=4.0))


def test_krippendorff_across_meetings_with_different_annotators() -> None:
    scores = make_scores(n_meetings=3, questions_per_meeting=5, annotators=4, seed=2)
    alpha = krippendorff_alpha(scores)
    assert 0.5 < alpha < 1.0  # annotators share the latent quality, noise sd 1
    per_meeting = annotator_icc_per_meeting(scores, forms=None)
    assert len(per_meeting) == 3 * 6 and set(per_meeting["n_targets"]) == {15}


def no_runtime_warning(build):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        return build()


@pytest.mark.parametrize("table", [
    [[1, 10]] * 36,  # one annotator always 1, the other always 10
    [[p, 11 - p] for p in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) * 3],  # P and 11 - P
], ids=["1-and-10", "p-and-11-p"])
def test_complete_disagreement_is_the_negative_icc_it_is(table: list[list[int]]) -> None:
    """Every target's mean is 5.5 while the raters differ on each: the between-target mean
    square is 0 (hand ANOVA), so ICC(1) = -1/(k-1) = -1 (hand formula, 1e-10) and
    Krippendorff's alpha is -(n-1)/n (krippendorff package, 1e-10): far below chance, not
    "no data". The mean-of-k forms (-inf) and the collapsed F intervals are left empty."""
    matrix = np.array(table, float)
    out = no_runtime_warning(lambda: icc_table(long_table(table), "item", "judge", "score"))
    assert list(out.columns) == list(ICC_COLUMNS)
    got = out.set_index("icc_type")["icc"]
    with np.errstate(all="ignore"):
        hand = hand_icc(matrix)
    assert got["ICC(1)"] == pytest.approx(-1.0, abs=1e-10)
    for form in ("ICC(1)", "ICC(2)", "ICC(3)"):
        if np.isfinite(hand[form]):
            assert got[form] == pytest.approx(hand[form], abs=1e-10)
    assert got[["ICC(1,k)", "ICC(2,k)", "ICC(3,k)"]].isna().all()
    assert out[["ci_low", "ci_high"]].isna().all().all()
    assert out["note"].str.startswith("complete disagreement").all()
    assert with_reading(out).set_index("icc_type").loc["ICC(1)", "reading"] == "poor"
    import krippendorff

    alpha = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="interval")
    assert alpha == pytest.approx(-(len(table) - 1) / len(table), abs=1e-10)  # -0.972


def test_two_constant_raters_say_so() -> None:
    """Rater 0 always gives 5, rater 1 always 7: complete disagreement too (ICC(1) = -1)."""
    out = no_runtime_warning(lambda: icc_table(long_table([[5, 7]] * 6), "item", "judge",
                                               "score"))
    assert out.set_index("icc_type").loc["ICC(1)", "icc"] == pytest.approx(-1.0, abs=1e-12)


def test_perfect_agreement_and_constant_offsets() -> None:
    perfect = [[v, v, v] for v in (1, 4, 2, 9, 7)]
    out = no_runtime_warning(lambda: icc_table(long_table(perfect), "item", "judge", "score"))
    assert out["icc"].eq(1.0).all() and out["note"].str.startswith("perfect agreement").all()
    assert not np.isinf(out[["ci_low", "ci_high"]].to_numpy(float)).any()
    offset = [[v, v + 1, v + 3] for v in (1, 4, 2, 6, 5)]
    out = no_runtime_warning(lambda: icc_table(long_table(offset), "item", "judge", "score"))
    hand = hand_icc(np.array(offset, float))
    assert out.set_index("icc_type")["icc"].to_dict() == pytest.approx(hand, abs=1e-10)
    assert out["note"].str.startswith("no residual variance").all()
    assert degenerate_note(pd.DataFrame(SHROUT_FLEISS)) == ""


def test_a_degenerate_meeting_gets_note_rows_and_the_others_their_icc() -> None:
    good = long_table(SHROUT_FLEISS).assign(meeting="m1")
    flat = long_table([[3, 3, 3, 3]] * 4).assign(meeting="m2")
    lone = long_table([[r[0]] for r in SHROUT_FLEISS]).assign(meeting="m3")
    out = icc_table(pd.concat([good, flat, lone]), "item", "judge", "score", group="meeting",
                    forms=["ICC(2,k)"])
    assert out["group"].tolist() == ["m1", "m2", "m3"]
    assert out["icc"].iloc[0] == pytest.approx(0.62, abs=0.005) and out["note"].iloc[0] == ""
    assert pd.isna(out["icc"].iloc[1]) and "every rating is the same" in out["note"].iloc[1]
    assert pd.isna(out["icc"].iloc[2]) and "1 rater(s)" in out["note"].iloc[2]
    assert out["n_raters"].tolist() == [4, 4, 1]
    with pytest.raises(DegenerateDataError, match="every rating is the same"):
        icc_table(pd.concat([flat]), "item", "judge", "score", group="meeting")


def test_interval_alpha_equals_the_package_and_stays_small_on_many_distinct_values() -> None:
    """The interval alpha is computed from sums of squares (the package's units x values x
    values array was ~100 GiB on means of judge samples); it equals the krippendorff package
    to 1e-12 on random incomplete tables, and a table of 3,000 units with ~9,000 distinct
    values is computed at all (on main it raised MemoryError)."""
    import krippendorff

    from elitr_core.stats.alpha import _interval_alpha

    rng = np.random.default_rng(7)
    for _ in range(20):
        raters, units = rng.integers(2, 6), rng.integers(3, 40)
        matrix = rng.integers(1, 11, size=(raters, units)).astype(float)
        matrix += rng.normal(0, 0.3, size=matrix.shape) * rng.integers(0, 2)
        matrix[rng.random(matrix.shape) < 0.3] = np.nan
        if (np.isfinite(matrix).sum(axis=0) >= 2).sum() == 0:
            continue
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
        assert _interval_alpha(matrix) == pytest.approx(expected, abs=1e-12)
    units = 3000
    truth = rng.uniform(1, 10, units)
    rows = pd.DataFrame({"unit": np.repeat(np.arange(units), 3),
                         "coder": np.tile(["a", "b", "c"], units),
                         "value": np.repeat(truth, 3) + rng.normal(0, 0.5, 3 * units)})
    from elitr_core.stats.alpha import alpha_of
    assert 0.9 < alpha_of(rows, "unit", "coder", "value") < 1.0
