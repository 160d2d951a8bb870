"""`export icc`, `evaluator-correlation` and `evaluator-means` in the states a live study passes
through, on SQLite and PostgreSQL (``tests.live_study`` on top of ``tests.small_db``).

References: the ICCs against the hand ANOVA formulas of ``test_icc.hand_icc`` on the tables
built here from the planted formulas (``small_db.silver``), CSV rounding 1e-6; the other pairs'
rows against the export without the odd evaluator (byte for byte); evaluator means against the
planted gold formula (1e-6).
"""

from __future__ import annotations

import io
from statistics import mean

import numpy as np
import pandas as pd
import pytest

from elitr_core.cli.main import main
from tests import small_db
from tests.elitr_core.stats.test_icc import hand_icc
from tests.live_study import DEV, TEST2, add_scores, first_items
from tests.small_db import MODELS, QUESTIONS, SETTING_MODES, silver

SETTINGS = [s for s, _ in SETTING_MODES]


def export(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> pd.DataFrame:
    """The table ``export`` prints, which must exit 0 with nothing on stderr."""
    code = main(["export", *args, "--db", url])
    out, err = capsys.readouterr()
    assert code == 0, err
    return pd.read_csv(io.StringIO(out), keep_default_na=False, na_values=[""])


def silver_table(meetings: list[str], annotators: tuple[str, ...] = ("ann1", "ann2")
                 ) -> np.ndarray:
    """Targets x annotators table of the planted silver scores."""
    return np.array([[silver(a, m, meeting, n, s) for a in annotators]
                     for meeting in meetings for m in MODELS for s in SETTINGS
                     for n in range(1, QUESTIONS + 1)], float)


@pytest.fixture
def url(db_url: str) -> str:
    small_db.build(db_url)
    return db_url


def _pool(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["raters"] == "silver-human annotators"].set_index("group")


def test_a_late_annotator_with_three_items_is_left_out_not_the_targets(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """ann1 and ann2 score all 72 responses; E scores 3 items of the test2 meeting."""
    pick = first_items(TEST2, 3)
    assert add_scores(url, "silver-human", lambda *k: 5.0 if pick(*k) else None,
                      annotator="E", kind="human") == 3
    pool = _pool(export(capsys, url, "icc"))
    test2 = pool.loc[TEST2]
    assert (test2["n_targets"], test2["n_raters"]) == (36, 2)
    assert test2["icc"] == pytest.approx(hand_icc(silver_table([TEST2]))["ICC(2,k)"], abs=1e-6)
    assert "left out rater(s) E (rated 3 of 36 targets)" in test2["note"]
    assert pool.loc[DEV, "note"] == "" or pd.isna(pool.loc[DEV, "note"])
    overall = pool.loc["all"]
    assert (overall["n_targets"], overall["n_raters"]) == (72, 2)
    both = silver_table([DEV, TEST2])
    assert overall["icc"] == pytest.approx(hand_icc(both)["ICC(1,k)"], abs=1e-6)
    assert "E (rated 3 of 36 targets)" in overall["note"] and TEST2 in overall["note"]


def test_an_annotator_excluded_in_one_meeting_keeps_its_targets_in_the_overall_icc(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """k = 3 in the dev meeting; in test2 the third annotator was excluded, not replaced."""
    for meeting, status in ((DEV, "ok"), (TEST2, "excluded")):
        add_scores(url, "silver-human",
                   lambda m, at, n, s, meeting=meeting: silver("ann2", m, at, n, s) + 0.5
                   if at == meeting else None, annotator="ann3", kind="human", status=status)
    pool = _pool(export(capsys, url, "icc"))
    assert pool.loc[DEV, "n_raters"] == 3 and pool.loc[TEST2, "n_raters"] == 2
    overall = pool.loc["all"]
    assert (overall["n_targets"], overall["n_raters"]) == (72, 2)  # not 36: test2 kept
    assert overall["icc"] == pytest.approx(
        hand_icc(silver_table([DEV, TEST2]))["ICC(1,k)"], abs=1e-6)
    assert f"{DEV}: annotator(s) ann3 left out of the overall ICC" in overall["note"]


def test_early_annotators_who_never_overlap_leave_the_rest_intact(
        db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Gold and the judge score everything; three crowd annotators each got their own unit."""
    small_db.build(db_url, scores=False)
    add_scores(db_url, "gold-human", lambda *k: small_db.gold(*k), kind="human")
    add_scores(db_url, "gpt-4", lambda *k: small_db.judge(*k))
    units = {"P1": first_items(DEV, 3), "P2": first_items(TEST2, 3),
             "P3": first_items(TEST2, 3, offset=3)}
    for name, pick in units.items():
        add_scores(db_url, "crowd", lambda *k, pick=pick: 4.0 if pick(*k) else None,
                   annotator=name, kind="human")
    table = export(capsys, db_url, "icc")
    evaluators = table[table["raters"] == "evaluators"].set_index("icc_type")
    two = export(capsys, db_url, "icc", "--evaluator", "gold-human", "--evaluator", "gpt-4")
    pd.testing.assert_series_equal(evaluators["icc"], two.set_index("icc_type")["icc"])
    assert set(evaluators["n_targets"]) == {72} and set(evaluators["n_raters"]) == {2}
    assert evaluators["note"].str.contains("left out rater(s) crowd (rated 9 of 72",
                                           regex=False).all()
    crowd = table[table["raters"] == "crowd annotators"].set_index("group")
    assert crowd["icc"].isna().all()
    assert "1 rater(s)" in crowd.loc[DEV, "note"] and "0 target(s)" in crowd.loc[TEST2, "note"]
    assert "no response has two annotator ratings" in crowd.loc["all", "note"]
    means = export(capsys, db_url, "evaluator-means").set_index(["model", "evaluator"])
    gold_a = means.loc[("A", "gold-human")]
    assert gold_a["n"] == 2 * len(SETTINGS) * QUESTIONS  # its own 24 responses, not 3
    assert gold_a["mean"] == pytest.approx(mean(
        small_db.gold("A", meeting, n, s) for meeting in (DEV, TEST2) for s in SETTINGS
        for n in range(1, QUESTIONS + 1)), abs=1e-6)
    assert gold_a["n_common"] == 9  # the responses of A every evaluator scored, stated


def test_a_constant_judge_empties_only_its_own_pairs(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    add_scores(url, "broken", lambda *k: 7.0)
    table = export(capsys, url, "evaluator-correlation")
    own = (table["evaluator_a"] == "broken") | (table["evaluator_b"] == "broken")
    assert own.sum() == 3 * 3  # three pairs, three methods
    assert table.loc[own, ["r", "ci_low", "ci_high", "p"]].isna().all().all()
    assert table.loc[own, "note"].str.contains("broken gives the same score (7)",
                                               regex=False).all()
    rest = export(capsys, url, "evaluator-correlation", "--evaluator", "gold-human",
                  "--evaluator", "gpt-4", "--evaluator", "silver-human")
    pd.testing.assert_frame_equal(table[~own].reset_index(drop=True), rest, check_dtype=False)
    assert table.loc[~own, "note"].isna().all()


def test_judges_of_one_split_empty_only_their_own_pairs(
        url: str, capsys: pytest.CaptureFixture[str]) -> None:
    add_scores(url, "dev-judge", lambda m, at, n, s: small_db.judge(m, at, n, s)
               if at == DEV else None)
    add_scores(url, "test2-judge", lambda m, at, n, s: small_db.gold(m, at, n, s)
               if at == TEST2 else None)
    table = export(capsys, url, "evaluator-correlation", "--evaluator", "dev-judge",
                   "--evaluator", "test2-judge", "--evaluator", "gold-human")
    pairs = table.set_index(["evaluator_a", "evaluator_b"])
    apart = pairs.loc[("dev-judge", "test2-judge")]
    assert (apart["n"] == 0).all() and apart["r"].isna().all()
    assert apart["note"].str.contains("dev-judge and test2-judge scored 0 response(s) in "
                                      "common", regex=False).all()
    assert pairs.loc[("dev-judge", "gold-human"), "r"].notna().all()
    icc = export(capsys, url, "icc").query("raters == 'evaluators'")
    assert set(icc["n_targets"]) == {72} and set(icc["n_raters"]) == {3}
    assert icc["note"].str.contains("dev-judge (rated 36 of 72 targets)", regex=False).all()
    assert icc["note"].str.contains("test2-judge (rated 36 of 72 targets)", regex=False).all()


@pytest.mark.parametrize("second", ["ten", "mirror"])
def test_complete_disagreement_is_a_negative_icc(
        url: str, capsys: pytest.CaptureFixture[str], second: str) -> None:
    """Always 1 against always 10, or P against 11 - P: ICC(1) = -1 (hand formula)."""
    if second == "ten":
        add_scores(url, "one", lambda *k: 1.0)
        add_scores(url, "ten", lambda *k: 10.0)
        first = "one"
    else:
        add_scores(url, "mirror", lambda *k: 11.0 - small_db.gold(*k))
        first = "gold-human"
    table = export(capsys, url, "icc", "--evaluator", first, "--evaluator", second)
    forms = table.set_index("icc_type")
    assert forms.loc["ICC(1)", "icc"] == pytest.approx(-1.0, abs=1e-6)
    assert forms.loc["ICC(1)", "n_targets"] == 72
    assert forms["note"].str.startswith("complete disagreement").all()
