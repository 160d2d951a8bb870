"""AppTest: the leaderboard page shows the paper's main table and exports what the CLI does."""

from __future__ import annotations

import csv
import io
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.analysis_support import (
    cli_export,
    download_bytes,
    messages,
    open_page,
    open_tab,
    set_filters,
)
from ui.filters import EVALUATORS_KEY, SPLIT_KEY

SECTION = "leaderboard.section"


@pytest.fixture
def app(shared_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    """The page on the module's shared database (its reads cached across the tests)."""
    return open_page(shared_sqlite, monkeypatch, "leaderboard")


def _sql_mean(db_url: str, model: str, split: str, setting: str, mode: str, slug: str) -> float:
    """Independent reference: the mean straight from SQLite."""
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        (value,) = conn.execute(
            "SELECT avg(s.value) FROM score s JOIN response r ON r.id = s.response_id "
            "JOIN run ON run.id = r.run_id JOIN evaluator e ON e.id = s.evaluator_id "
            "WHERE run.model = ? AND run.split = ? AND run.setting = ? AND run.mode = ? "
            "AND e.slug = ? AND s.status = 'ok'", (model, split, setting, mode, slug)).fetchone()
    return float(value)


def test_main_table_matches_cli_and_sql(app: AppTest, shared_sqlite: str, tmp_path: Path) -> None:
    assert not app.exception
    assert messages(app) == {"error": [], "warning": [], "info": []}
    main_table = app.dataframe[0].value
    assert list(main_table.columns) == [  # the means first: they fit 1366 px
        "rank", "QA-st mean", "QA-mt mean", "Conv-mt mean", "QA-st dev", "QA-st test2",
        "QA-mt dev", "QA-mt test2", "Conv-mt dev", "Conv-mt test2"]
    shown = float(main_table.loc["GPT-4", "QA-st test2"])
    exported = cli_export(shared_sqlite, "leaderboard", tmp_path / "lb.csv").decode()
    row = next(r for r in csv.DictReader(io.StringIO(exported))
               if (r["model"], r["setting"], r["mode"], r["split"], r["evaluator"])
               == ("GPT-4", "qa", "st", "test2", "gpt-4"))
    assert shown == pytest.approx(float(row["mean"]), abs=5e-6)  # CSV keeps 6 digits
    assert shown == pytest.approx(_sql_mean(shared_sqlite, "GPT-4", "test2", "qa", "st", "gpt-4"))
    assert row["n"] == "130" and row["n_seeds"] == "1" and row["std"] == ""
    # the paper's mean column is the unweighted mean of dev and test2
    assert float(main_table.loc["GPT-4", "QA-st mean"]) == pytest.approx(
        (float(main_table.loc["GPT-4", "QA-st dev"]) + shown) / 2)
    # GPT-3.5 was run in single-turn only
    # (a missing cell reaches the grid as a null: the grid shows its placeholder, an en dash,
    # and writes an empty cell in its own CSV, where -inf gave "-Infinity")
    assert pd.isna(main_table.loc["GPT-3.5", "QA-mt test2"])
    assert app.get("plotly_chart"), "the leaderboard figure is drawn"
    assert [t.label for t in app.tabs] == ["Figure", "Long table", "Model families",
                                           "Differentiating questions", "Two models"]
    assert len(app.dataframe) == 1  # the other tabs' tables are drawn on a click
    # ranked by QA-st mean, best first; a model not run in a setting has no rank there
    ranks = main_table["rank"].tolist()
    assert ranks[0] == 1 and main_table.index[0] == main_table["QA-st mean"].idxmax()
    assert main_table["QA-st mean"].is_monotonic_decreasing
    app.selectbox(key="leaderboard.rank_by").set_value("QA-mt mean").run()
    reranked = app.dataframe[0].value
    assert reranked.index[-1] == "GPT-3.5" and pd.isna(reranked.loc["GPT-3.5", "rank"])


def test_csv_download_is_byte_identical_to_cli(app: AppTest, shared_sqlite: str,
                                               tmp_path: Path) -> None:
    set_filters(app, split="test2", setting="qa", evaluators=["gpt-4", "gold-human"])
    open_tab(app, SECTION, "Long table")
    assert not app.exception
    page_bytes = download_bytes(app, "download.leaderboard.csv")
    cli = cli_export(shared_sqlite, "leaderboard", tmp_path / "lb.csv", "--split", "test2",
                     "--setting", "qa", "--evaluator", "gpt-4", "--evaluator", "gold-human")
    assert page_bytes == cli
    assert b"gold-human" in page_bytes and b"prometheus" not in page_bytes


def test_evaluator_choice_changes_the_main_table(app: AppTest) -> None:
    app.selectbox(key="leaderboard.evaluator").set_value("gold-human").run()
    table = app.dataframe[0].value
    # humans scored test2 QA-st of three models only
    assert list(table.columns) == ["rank", "QA-st test2"]
    assert sorted(table.index) == ["GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"]


def test_filters_persist_across_pages(app: AppTest) -> None:
    set_filters(app, split="test2", evaluators=["gpt-4"])
    app.switch_page("pages/home.py").run()  # a page without the filters
    app.switch_page("pages/calibration.py").run()
    assert app.selectbox(key=f"{SPLIT_KEY}.widget").value == "test2"
    assert app.multiselect(key=f"{EVALUATORS_KEY}.widget").value == ["gpt-4"]
    app.switch_page("pages/leaderboard.py").run()
    assert not app.exception
    assert list(app.dataframe[0].value.columns) == [
        "rank", "QA-st test2", "QA-mt test2", "Conv-mt test2"]


def test_empty_filter_result_is_a_message(app: AppTest) -> None:
    set_filters(app, setting="conv", models=["GPT-3.5"])  # GPT-3.5 has no Conv run
    assert not app.exception
    assert any("no scores match" in w for w in messages(app)["warning"])
    assert not app.dataframe


def test_model_families_and_differentiating_questions(app: AppTest, shared_sqlite: str,
                                                      tmp_path: Path) -> None:
    open_tab(app, SECTION, "Model families")
    assert not app.exception
    families = next(d.value for d in app.dataframe
                    if "model" in d.value.columns and "GPT" in set(d.value["model"]))
    assert set(families["model"]) == {"GPT", "LLaMA-2"}
    # the group mean pools the members' responses: check one cell against SQL
    gpt_who = families[(families["model"] == "GPT") & (families["evaluator"] == "gpt-4")
                       & (families["level"] == "who")].iloc[0]
    path = shared_sqlite.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        n, mean = conn.execute(
            "SELECT count(*), avg(s.value) FROM score s JOIN response r ON r.id = s.response_id "
            "JOIN run ON run.id = r.run_id JOIN question q ON q.id = r.question_id "
            "JOIN evaluator e ON e.id = s.evaluator_id WHERE run.model IN ('GPT-4', 'GPT-3.5') "
            "AND q.question_type = 'who' AND e.slug = 'gpt-4'").fetchone()
    assert int(gpt_who["n"]) == n and float(gpt_who["mean"]) == pytest.approx(mean)
    # differentiating questions: the CLI's bytes, 33 questions per model and setting-mode
    open_tab(app, SECTION, "Differentiating questions")
    page = download_bytes(app, "download.differentiating.csv")
    assert page == cli_export(shared_sqlite, "differentiating", tmp_path / "d.csv")
    rows = list(csv.DictReader(io.StringIO(page.decode())))
    gpt4 = {r["setting_mode"]: r for r in rows
            if (r["model"], r["evaluator"]) == ("GPT-4", "gpt-4")}
    assert set(gpt4) == {"QA-st", "QA-mt", "Conv-mt"} and {r["n"] for r in gpt4.values()} == {"33"}


def test_bad_group_spec_is_a_message(app: AppTest) -> None:
    open_tab(app, SECTION, "Model families")
    app.text_area(key="leaderboard.groups").set_value("GPT: GPT-4").run()
    assert not app.exception
    assert any("write NAME=MODEL,MODEL" in e.value for e in app.error)
    # the groups typed outlive a look at another tab (the text area is not drawn meanwhile)
    open_tab(app, SECTION, "Figure")
    open_tab(app, SECTION, "Model families")
    assert app.text_area(key="leaderboard.groups").value == "GPT: GPT-4"


def test_csv_download_escapes_formulas_like_the_cli(bundled_sqlite: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.elitr_core.export.test_formats import HOSTILE, import_hostile_model

    import_hostile_model(bundled_sqlite, tmp_path)
    app = open_page(bundled_sqlite, monkeypatch, "leaderboard")
    set_filters(app, split="dev", setting="qa", evaluators=["gpt-4"])
    open_tab(app, SECTION, "Long table")
    assert not app.exception
    page_bytes = download_bytes(app, "download.leaderboard.csv")
    cli = cli_export(bundled_sqlite, "leaderboard", tmp_path / "lb.csv", "--split", "dev",
                     "--setting", "qa", "--evaluator", "gpt-4")
    assert page_bytes == cli
    models = [r["model"] for r in csv.DictReader(io.StringIO(cli.decode()))]
    assert "'" + HOSTILE[0] in models and HOSTILE[0] not in models


def test_two_models_paired_difference_matches_the_cli(app: AppTest, shared_sqlite: str,
                                                      tmp_path: Path) -> None:
    open_tab(app, SECTION, "Two models")
    assert any("Pick exactly two models" in c.value for c in app.caption)
    app = set_filters(app, split="test2", setting="qa", mode="st",
                      models=["GPT-4", "Vicuna-13B-v1.5"])
    assert not app.exception and not app.error
    cli = cli_export(shared_sqlite, "model-difference", tmp_path / "diff.csv", "--split",
                     "test2", "--setting", "qa", "--mode", "st", "--model", "GPT-4", "--model",
                     "Vicuna-13B-v1.5")
    assert download_bytes(app, "download.model-difference.csv") == cli
    rows = list(csv.DictReader(io.StringIO(cli.decode())))
    gpt4 = next(r for r in rows if r["evaluator"] == "gpt-4")
    assert (gpt4["model_a"], gpt4["model_b"], gpt4["n"]) == ("GPT-4", "Vicuna-13B-v1.5", "130")
    assert float(gpt4["difference"]) < 0


def test_the_main_tables_means_come_first_so_they_fit_1366_px(shared_sqlite: str,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    from tests.pages.analysis_support import open_page

    app = open_page(shared_sqlite, monkeypatch, "leaderboard")
    columns = list(app.dataframe[0].value.columns)
    assert columns[:4] == ["rank", "QA-st mean", "QA-mt mean", "Conv-mt mean"], columns


def test_the_mean_column_is_explained_where_it_is_read(app: AppTest, shared_sqlite: str) -> None:
    """The mean column is the unweighted mean of the split means (GPT-3.5 QA-st by gpt-4:
    7.2597, pooled 7.2509): the page's caption and the long table's caption say so."""
    dev = _sql_mean(shared_sqlite, "GPT-3.5", "dev", "qa", "st", "gpt-4")
    test2 = _sql_mean(shared_sqlite, "GPT-3.5", "test2", "qa", "st", "gpt-4")
    board = app.dataframe[0].value
    assert board.loc["GPT-3.5", "QA-st mean"] == pytest.approx((dev + test2) / 2)
    explained = "the unweighted mean of the dev and test2 means"
    assert any(explained in c.value for c in app.caption)
    long = open_tab(app, SECTION, "Long table")
    assert sum(explained in c.value for c in long.caption) == 2


def test_main_table_has_its_export_command_and_downloads_in_rank_order(
        app: AppTest, shared_sqlite: str, tmp_path: Path) -> None:
    """The main table's caption gives ``export main-table``; its CSV is that command's bytes,
    the models in the rank order shown (they came alphabetically, with no command)."""
    captions = " ".join(c.value for c in app.caption)
    assert "python -m elitr_core export main-table --evaluator gpt-4 --rank-by 'QA-st mean'" \
        in captions
    page = download_bytes(app, "download.main.csv")
    cli = cli_export(shared_sqlite, "main-table", tmp_path / "main.csv",
                     "--evaluator", "gpt-4", "--rank-by", "QA-st mean")
    assert page == cli
    shown = app.dataframe[0].value.index.tolist()
    rows = list(csv.DictReader(io.StringIO(page.decode())))
    assert [r["model"] for r in rows] == shown and rows[0]["rank"] == "1"
    assert shown != sorted(shown)


def test_a_model_with_only_lapsed_scores_is_named(db_url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A study whose annotator lapsed holding all of one model's scores: the page names the
    model and why under the main table, where its cells are empty (issue 40)."""
    from tests.elitr_core.export.test_unusable import LOST, POOL, lose_first_annotator, study_db

    lose_first_annotator(study_db(db_url), "lapsed")
    at = open_page(db_url, monkeypatch, "leaderboard")
    at.selectbox(key="leaderboard.evaluator").set_value(POOL).run()
    assert not at.exception
    assert messages(at)["warning"] == [
        f"{LOST}: no usable score: 2 scores lapsed (idle past the study's lease); see export "
        "unscored"]
    main_table = at.dataframe[0].value
    assert LOST in main_table.index and set(main_table.index) == {"Alpha-7B", "Beta-13B", LOST}
