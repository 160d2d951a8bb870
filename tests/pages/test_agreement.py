"""AppTest: the agreement page on the paper's comparison (test2, QA-st, 390 responses)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from streamlit.testing.v1 import AppTest

from tests.pages.analysis_support import (
    cli_export,
    download_bytes,
    messages,
    open_page,
    open_tab,
    set_filters,
)

SECTION = "agreement.section"


def _paper_page(url: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    at = open_page(url, monkeypatch, "agreement")
    return set_filters(at, split="test2", setting="qa", mode="st")


@pytest.fixture
def app(shared_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The page on the module's shared database (its reads cached across the tests)."""
    return _paper_page(shared_sqlite, monkeypatch)


def _tables(at: AppTest) -> dict[str, object]:
    """The page's tables, recognised by their columns."""
    found = {}
    for frame in (d.value for d in at.dataframe):
        cols = set(frame.columns)
        name = ("corr" if "method" in cols else "icc" if "icc_type" in cols else
                "mae" if "qwk" in cols else "bias" if "bias" in cols else
                "ranks" if "tau" in cols else "?")
        found[name] = frame
    return found


def _all_tables(at: AppTest) -> dict[str, object]:
    """The tables of every tab, each tab opened in turn."""
    found = {}
    for label in ("Correlation between evaluators", "MAE and kappa", "Intraclass correlation",
                  "Two evaluators", "Ranking agreement"):
        open_tab(at, SECTION, label)
        assert not at.exception and not at.error, label
        found.update(_tables(at))
    return found


def test_opens_on_the_correlation_alone(app: AppTest) -> None:
    assert not app.exception
    assert messages(app) == {"error": [], "warning": [], "info": []}
    assert [t.label for t in app.tabs] == [
        "Correlation between evaluators", "MAE and kappa", "Intraclass correlation",
        "Two evaluators", "Ranking agreement"]
    assert set(_tables(app)) == {"corr"}  # the other tabs' tables are drawn on a click
    assert len(app.get("plotly_chart")) == 1


def test_paper_comparison(app: AppTest) -> None:
    tables = _all_tables(app)
    corr = tables["corr"]
    # the method shown: 6 pairs (Kendall's costly bootstrap only when picked)
    assert set(corr["n"]) == {390} and len(corr) == 6 and set(corr["method"]) == {"pearson"}
    open_tab(app, SECTION, "Two evaluators")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Responses both scored"] == "390"
    # r of gpt-4 vs gold-human against scipy on the pairs the scatter shows
    pearson = corr[(corr["method"] == "pearson") & (corr["evaluator_a"] == "gpt-4")
                   & (corr["evaluator_b"] == "gold-human")].iloc[0]
    assert pearson["ci_low"] < pearson["r"] < pearson["ci_high"]
    scatter = next(c for c in app.get("plotly_chart") if "jittered" in c.proto.spec)
    assert scatter is not None
    icc = tables["icc"]
    assert set(icc["icc_type"]) == {"ICC(1)", "ICC(2)", "ICC(3)", "ICC(1,k)", "ICC(2,k)",
                                    "ICC(3,k)"}
    assert set(icc["reading"]) <= {"poor", "moderate", "good", "excellent"}
    bias = tables["bias"]
    assert list(bias["model"]) == ["GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"]
    assert (bias["ci_low"] <= bias["bias"]).all() and (bias["bias"] <= bias["ci_high"]).all()
    assert set(tables["ranks"]["n_models"]) == {3}


def test_pearson_against_scipy(app: AppTest, shared_sqlite: str) -> None:
    from db.runs import ScoreFilter
    from db.transaction import reading
    from elitr_core.data.database import open_database
    from elitr_core.data.scores import scores_table

    with reading(open_database(shared_sqlite)) as session:
        scores = scores_table(session, ScoreFilter(split="test2", setting="qa", mode="st"))
    wide = scores.pivot_table(index=["meeting", "question_id", "model"], columns="evaluator",
                              values="score").dropna(subset=["gpt-4", "gold-human"])
    assert len(wide) == 390
    expected = stats.pearsonr(wide["gpt-4"], wide["gold-human"]).statistic
    corr = _tables(app)["corr"]
    shown = corr[(corr["method"] == "pearson") & (corr["evaluator_a"] == "gpt-4")
                 & (corr["evaluator_b"] == "gold-human")]["r"].iloc[0]
    assert shown == pytest.approx(expected, abs=1e-12)
    mae = _tables(open_tab(app, SECTION, "MAE and kappa"))["mae"]
    row = mae[(mae["evaluator_a"] == "gpt-4") & (mae["evaluator_b"] == "gold-human")].iloc[0]
    assert row["mae"] == pytest.approx(np.mean(np.abs(wide["gpt-4"] - wide["gold-human"])))


def test_csv_downloads_are_byte_identical_to_cli(app: AppTest, shared_sqlite: str,
                                                 tmp_path: Path) -> None:
    options = ["--split", "test2", "--setting", "qa", "--mode", "st"]
    for table, tab in (("evaluator-correlation", "Correlation between evaluators"),
                       ("icc", "Intraclass correlation")):
        page_bytes = download_bytes(open_tab(app, SECTION, tab), f"download.{table}.csv")
        assert page_bytes == cli_export(shared_sqlite, table, tmp_path / f"{table}.csv",
                                        *options)


def test_method_choice_changes_the_heatmap(app: AppTest) -> None:
    app.radio(key="agreement.method").set_value("kendall").run()
    assert not app.exception
    assert any("Kendall correlation" in c.proto.spec for c in app.get("plotly_chart"))
    # the choice outlives a look at another tab (the radio is not drawn meanwhile)
    open_tab(app, SECTION, "Intraclass correlation")
    assert not app.get("plotly_chart")
    open_tab(app, SECTION, "Correlation between evaluators")
    assert app.radio(key="agreement.method").value == "kendall"
    assert any("Kendall correlation" in c.proto.spec for c in app.get("plotly_chart"))


def test_same_evaluator_twice_is_an_error_message(app: AppTest) -> None:
    open_tab(app, SECTION, "Two evaluators")
    app.selectbox(key="agreement.evaluator_b").set_value("gpt-4").run()
    assert not app.exception
    assert any("two different evaluators" in e for e in messages(app)["error"])


def test_one_model_warns_instead_of_ranking(app: AppTest) -> None:
    set_filters(app, models=["GPT-4"])
    assert not app.exception
    assert set(_tables(app)["corr"]["n"]) == {130}
    open_tab(app, SECTION, "Ranking agreement")
    assert any("ranking" in w for w in messages(app)["warning"])


def test_a_single_evaluator_is_an_info(app: AppTest) -> None:
    set_filters(app, evaluators=["gpt-4"])
    assert not app.exception
    assert any("needs two evaluators" in i for i in messages(app)["info"])


def test_empty_filter_result_is_a_message(app: AppTest) -> None:
    set_filters(app, setting="conv", mode="st")  # no Conv single-turn run exists
    assert not app.exception
    infos = messages(app)["info"]
    assert any("Setting = Conv, Mode = single-turn (st): change" in i for i in infos), \
        infos


def test_ngram_metrics_can_be_added_from_the_page(bundled_sqlite: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from ui import warm

    app = _paper_page(bundled_sqlite, monkeypatch)  # its own database: the page writes
    # the page asks for the default views anew (ui.warm.again, tested in test_warm.py); run
    # here, that background warm-up outlived the test and computed every page's views on the
    # databases of the tests after it in this process
    warmed: list[None] = []
    monkeypatch.setattr(warm, "again", lambda: warmed.append(None))
    app.button(key="agreement.compute_metrics").click().run()
    assert not app.exception
    assert warmed == [None]
    assert "rouge-l: 1170 new score(s); token-f1: 1170 new score(s)" in app.success[0].value
    exported = cli_export(bundled_sqlite, "evaluator-correlation", tmp_path / "c.csv",
                          "--split", "test2", "--setting", "qa", "--mode", "st").decode()
    assert "rouge-l,token-f1,pearson,1170," in exported
    page = download_bytes(app, "download.evaluator-correlation.csv")
    assert page.decode() == exported  # the page recomputed with the new evaluators


def test_the_shown_method_is_the_cli_tables_rows_of_that_method(app: AppTest) -> None:
    import io

    import pandas as pd

    app.radio(key="agreement.method").set_value("kendall").run()
    shown = _tables(app)["corr"].reset_index(drop=True)
    full = pd.read_csv(io.BytesIO(download_bytes(app, "download.evaluator-correlation.csv")))
    kendall = full[full["method"] == "kendall"].reset_index(drop=True)
    kendall["note"] = kendall["note"].astype(object).fillna("")  # empty CSV cells read as NaN
    assert len(full) == 3 * len(shown) and set(shown["method"]) == {"kendall"}
    pd.testing.assert_frame_equal(shown[list(kendall.columns)], kendall, check_dtype=False,
                                  rtol=1e-12)
