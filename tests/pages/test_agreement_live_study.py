"""AppTest: the Agreement page in the states a live study passes through (``tests.live_study``
on ``tests.small_db``, SQLite and PostgreSQL). A constant judge, two judges that never share a
response, early annotators who never overlap: each tab keeps every other pair's figures, and the
odd evaluator's cells are empty with a note naming it. The tables equal the CLI's export."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from elitr_core.export.display import MISSING
from tests import small_db
from tests.live_study import DEV, TEST2, add_scores, first_items
from tests.pages.analysis_support import cli_export, messages, open_page, open_tab

SECTION = "agreement.section"


def _frame(at: AppTest, column: str) -> pd.DataFrame:
    """The one table with this column; an empty cell (the grid's -inf under the en dash
    shown, ``elitr_core.export.display.styled``) as NaN."""
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, [list(d.value.columns) for d in at.dataframe]
    return found[0].replace([float("-inf"), MISSING], float("nan"))


def _clean(at: AppTest) -> None:
    assert not at.exception
    assert messages(at) == {"error": [], "warning": [], "info": []}


@pytest.fixture
def live(db_url: str) -> str:
    """Gold, the judge and two silver annotators everywhere; a judge that gives 7 to
    everything, another that does too (their kappa is undefined), and judges of one split."""
    small_db.build(db_url)
    add_scores(db_url, "broken", lambda *k: 7.0)
    add_scores(db_url, "broken-too", lambda *k: 7.0)
    add_scores(db_url, "dev-judge", lambda m, at, n, s: small_db.judge(m, at, n, s)
               if at == DEV else None)
    add_scores(db_url, "test2-judge", lambda m, at, n, s: small_db.gold(m, at, n, s)
               if at == TEST2 else None)
    pick = first_items(TEST2, 3)
    add_scores(db_url, "silver-human", lambda *k: 5.0 if pick(*k) else None, annotator="E",
               kind="human")
    return db_url


def test_every_tab_keeps_the_other_pairs(live: str, monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    at = open_page(live, monkeypatch, "agreement")
    _clean(at)
    corr = _frame(at, "method")
    odd = corr["evaluator_a"].str.startswith("broken") | corr["evaluator_b"].str.startswith(
        "broken")
    assert corr.loc[odd, "r"].isna().all()
    assert corr.loc[odd, "note"].str.contains("gives the same score (7)", regex=False).all()
    fine = corr[~odd & (corr["evaluator_a"] == "gold-human") & (corr["evaluator_b"] == "gpt-4")]
    assert fine["r"].notna().all() and len(fine) == 1
    apart = corr[(corr["evaluator_a"] == "dev-judge") & (corr["evaluator_b"] == "test2-judge")]
    assert apart["note"].str.contains("scored 0 response(s) in common", regex=False).all()

    _clean(open_tab(at, SECTION, "MAE and kappa"))
    mae = _frame(at, "qwk").set_index(["evaluator_a", "evaluator_b"])
    both = mae.loc[("broken", "broken-too")]
    assert pd.isna(both["qwk"]) and both["mae"] == 0
    assert both["note"].startswith("kappa is undefined: broken and broken-too both give")
    assert pd.isna(mae.loc[("dev-judge", "test2-judge"), "mae"])
    assert mae.drop([("broken", "broken-too"), ("dev-judge", "test2-judge")])["qwk"].notna().all()

    _clean(open_tab(at, SECTION, "Intraclass correlation"))
    icc = _frame(at, "icc_type")
    written = pd.read_csv(io.BytesIO(cli_export(live, "icc", tmp_path / "icc.csv")))
    assert len(icc) == len(written)
    pool = icc[icc["raters"] == "silver-human annotators"].set_index("group")
    assert pool.loc[TEST2, "n_targets"] == 36 and "left out rater(s) E" in pool.loc[TEST2, "note"]
    evaluators = icc[icc["raters"] == "evaluators"]
    assert evaluators["icc"].notna().any()
    assert evaluators["note"].str.contains("dev-judge (rated 36 of 72", regex=False).all()


def test_early_annotators_leave_the_evaluators_icc_on_the_page(
        db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three crowd annotators each on their own unit (they never overlap): the ICC tab keeps
    gold-human and gpt-4's ICC over all 72 responses, the crowd's rows say why they have none
    (on the old code the tab showed one error instead)."""
    small_db.build(db_url, scores=False)
    add_scores(db_url, "gold-human", lambda *k: small_db.gold(*k), kind="human")
    add_scores(db_url, "gpt-4", lambda *k: small_db.judge(*k))
    for name, pick in {"P1": first_items(DEV, 3), "P2": first_items(TEST2, 3),
                       "P3": first_items(TEST2, 3, offset=3)}.items():
        add_scores(db_url, "crowd", lambda *k, pick=pick: 4.0 if pick(*k) else None,
                   annotator=name, kind="human")
    monkeypatch.setenv("ELITR_MIN_SCORES", "0")  # the crowd's 9 scores enter the analyses
    at = open_page(db_url, monkeypatch, "agreement")
    _clean(open_tab(at, SECTION, "Intraclass correlation"))
    icc = _frame(at, "icc_type")
    assert "crowd annotators" in set(icc["raters"])
    evaluators = icc[icc["raters"] == "evaluators"]
    assert len(evaluators) == 6 and evaluators["icc"].notna().all()
    assert set(evaluators["n_targets"]) == {72}
    crowd = icc[icc["raters"] == "crowd annotators"]
    assert crowd["icc"].isna().all() and (crowd["note"].str.len() > 0).all()
    texts = " ".join(t.value for t in at.text)
    assert "left out rater(s) crowd (rated 9 of 72 targets)" in texts
