"""Every table's "as shown" download is the table the page shows (issue 43 item 2): the same
headings (the columns' display names), columns, rows and order, CSV/JSON numbers at the
shown rounding, LaTeX cells the very texts shown; and where the export holds more, the "Full
table" download is the CLI's export byte for byte. Each page on both databases."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from elitr_core.export.column_labels import column_label
from tests.downloads import assert_downloads_as_shown
from tests.pages.analysis_support import (
    PAPER,
    PAPER_ARGS,
    cli_export,
    download_bytes,
    open_page,
    open_tab,
    set_filters,
)
from ui.analysis.agreement import ABSOLUTE, ICC, PAIR, RANKING
from ui.analysis.leaderboard import DIFFERENTIATING, FAMILIES, LONG, TWO_MODELS

TWO = ["GPT-4", "Vicuna-13B-v1.5"]


def assert_full_is_cli(at: AppTest, key: str, db_url: str, tmp_path: Path, table: str,
                       *options: str) -> bytes:
    """The "Full table" CSV and LaTeX under a table are ``export TABLE OPTIONS``'s bytes;
    returns the CSV (the export's default format: read once, not a third time)."""
    exported = {}
    for fmt in ("csv", "latex"):
        exported[fmt] = cli_export(db_url, table, tmp_path / f"{table}.{fmt}", *options,
                                   "--format", fmt)
        assert download_bytes(at, f"{key}.{fmt}") == exported[fmt], (table, fmt)
    return exported["csv"]


def _columns(data: bytes) -> list[str]:
    return next(csv.reader(io.StringIO(data.decode())))


def test_leaderboard_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    at = set_filters(open_page(bundled_db, monkeypatch, "leaderboard"), **PAPER, models=TWO)
    assert not at.exception
    # the example: the page shows the model, its rank and its QA-st test2 mean;
    # the export has 11 columns, most of them empty under these filters
    main = assert_downloads_as_shown(at, "download.main")
    assert main.headings == ["Model", "Rank", "QA-st test2"]
    assert [row[0] for row in main.rows] == ["GPT-4", "Vicuna-13B-v1.5"]
    full = assert_full_is_cli(at, "download.main", bundled_db, tmp_path, "main-table",
                              "--evaluator", "gpt-4", "--rank-by", "QA-st test2", *PAPER_ARGS,
                              "--model", TWO[0], "--model", TWO[1])
    assert len(_columns(full)) == 11
    args = (*PAPER_ARGS, "--model", TWO[0], "--model", TWO[1])
    for tab, key, table in ((LONG, "download.leaderboard", "leaderboard"),
                            (FAMILIES, "download.families", None),
                            (DIFFERENTIATING, "download.differentiating", "differentiating"),
                            (TWO_MODELS, "download.model-difference", "model-difference")):
        at = open_tab(at, "leaderboard.section", tab)
        assert not at.exception and not at.error, tab
        shown = assert_downloads_as_shown(at, key)
        assert shown.rows, tab
        if table:
            full = assert_full_is_cli(at, key, bundled_db, tmp_path, table, *args)
            assert len(_columns(full)) >= len(shown.headings) - (tab == DIFFERENTIATING)


def test_agreement_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    at = set_filters(open_page(bundled_db, monkeypatch, "agreement"), **PAPER)
    assert not at.exception
    # the example: one method's 6 rows shown (and downloaded), the CLI's 18 in full
    corr = assert_downloads_as_shown(at, "download.evaluator-correlation")
    assert len(corr.rows) == 6 and {r[corr.headings.index("Method")] for r in corr.rows} \
        == {"pearson"}
    full = assert_full_is_cli(at, "download.evaluator-correlation", bundled_db, tmp_path,
                              "evaluator-correlation", *PAPER_ARGS)
    assert len(full.decode().splitlines()) == 1 + 18
    for tab, key, table in ((ABSOLUTE, "download.agreement", None),
                            (ICC, "download.icc", "icc"), (PAIR, "download.bias", None),
                            (RANKING, "download.ranking", None)):
        at = open_tab(at, "agreement.section", tab)
        assert not at.exception, tab
        assert assert_downloads_as_shown(at, key).rows, tab
        if table:
            assert_full_is_cli(at, key, bundled_db, tmp_path, table, *PAPER_ARGS)


def test_calibration_download_is_the_table_shown(bundled_db: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    at = set_filters(open_page(bundled_db, monkeypatch, "calibration"), **PAPER)
    shown = assert_downloads_as_shown(at, "download.calibration")
    # the interval is one column, as shown; a bin under 5 responses shows no interval, and
    # neither does its download (the full table keeps it)
    assert shown.headings == ["Reference", "Evaluator", "Bin", "n", "Mean", "95% CI"]
    full = assert_full_is_cli(at, "download.calibration", bundled_db, tmp_path, "calibration",
                              *PAPER_ARGS)
    assert "ci_low" in _columns(full)
    latex = download_bytes(at, "download.calibration.shown.latex").decode()
    assert "& 2.73 & [2.08,{} 3.38]" in latex  # the page's 2 decimals, not the export's


def test_drilldown_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(bundled_db, monkeypatch, "drilldown")
    for tab, key, table in (("Breakdown", "download.breakdown-GPT-4", "breakdown"),
                            ("Lost in the middle", "download.lost-in-middle-GPT-4",
                             "lost-in-middle"),
                            ("Questions", "download.questions", None),
                            ("Largest disagreements", "download.worst", None)):
        at = open_tab(at, "drilldown.section", tab)
        assert not at.exception, tab
        shown = assert_downloads_as_shown(at, key)
        if table:
            assert_full_is_cli(at, key, bundled_db, tmp_path, table, "--model", "GPT-4")
        if table == "lost-in-middle":  # the effect column the page adds is downloaded too
            assert column_label("effect") in shown.headings
        if tab == "Questions":  # only the key columns are shown, and downloaded
            assert len(shown.rows) == 813 and "Meeting" not in shown.headings


def test_judge_audit_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pages.test_judge_audit import TABS

    at = set_filters(open_page(bundled_db, monkeypatch, "judge_audit"), **PAPER)
    for table in ("ppi", "ppi-budget", "ppi-designs", "recalibration", "judge-effects",
                  "length-controlled", "length-controlled-tau"):
        at = open_tab(at, "audit.section", TABS[table])
        assert not at.exception, table
        shown = assert_downloads_as_shown(at, f"download.{table}")
        assert_full_is_cli(at, f"download.{table}", bundled_db, tmp_path, table, *PAPER_ARGS,
                           "--judge", "gpt-4", "--human", "gold-human")
        if table == "ppi":  # raw export names no longer head the page's columns
            assert {"n labelled", "PPI++ 95% CI"} <= set(shown.headings) and not {
                "n_labelled", "ppipp_ci"} & set(shown.headings)
            # the ranking each estimate implies, under the table, downloads as shown too
            ranks = assert_downloads_as_shown(at, "download.ppi-rankings")
            assert ranks.headings[-4:] == ["Rank (judge)", "Rank (human)", "Rank (PPI)",
                                           "Rank (PPI++)"]
            assert sorted(r[3] for r in ranks.rows) == [  # the models with human scores
                "GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"]


def test_battles_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.pages.test_battles import judge_all

    judge_all(bundled_db)
    at = open_page(bundled_db, monkeypatch, "battles")
    assert not at.exception
    for key, table, options in (
            ("download.pairwise-verdict", "pairwise", ["--criterion", "verdict"]),
            ("download.elo-pairwise-verdict", "elo",
             ["--source", "pairwise", "--criterion", "verdict"]),
            ("download.bradley-terry-pairwise-verdict", "bradley-terry",
             ["--criterion", "verdict"]),
            ("download.winrate-verdict", "winrate",
             ["--baseline", "GPT-4", "--criterion", "verdict"]),
            ("download.pairwise-agreement-verdict", "pairwise-agreement",
             ["--reference", "gold-human", "--criterion", "verdict"])):
        assert assert_downloads_as_shown(at, key).rows, key
        assert_full_is_cli(at, key, bundled_db, tmp_path, table, *options)


def test_runs_download_is_the_table_shown(bundled_db: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    at = open_page(bundled_db, monkeypatch, "runs")
    assert not at.exception
    shown = assert_downloads_as_shown(at, "download.runs")
    assert len(shown.rows) == 50 and "Model" in shown.headings
    full = assert_full_is_cli(at, "download.runs", bundled_db, tmp_path, "runs")
    assert len(_columns(full)) > len(shown.headings)  # the run's settings, in full only


def test_studies_downloads_are_the_tables_shown(bundled_db: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The Studies page's budget plan downloads as shown and, in full, as ``export ppi-budget``
    writes it; a study's progress per annotator (what a crowd is paid from) and its units short
    of annotators download as shown (the CLI's ``study status`` prints them as text)."""
    from db.transaction import writing
    from elitr_core.annotation.admin import add_annotator
    from elitr_core.annotation.studies import StudySpec, create_study, enter_with_token
    from elitr_core.data.database import open_database

    with writing(open_database(bundled_db)) as session:
        create_study(session, StudySpec(name="paid", per_item=2))
        token = add_annotator(session, "ann <b>1</b>", "silver")
    enter_with_token(open_database(bundled_db), token)
    at = open_page(bundled_db, monkeypatch, "studies")
    assert not at.exception and not at.error
    plan = assert_downloads_as_shown(at, "download.ppi-budget")
    assert "GPT-4" in [row[plan.headings.index(column_label("model"))] for row in plan.rows]
    assert_full_is_cli(at, "download.ppi-budget", bundled_db, tmp_path, "ppi-budget",
                       *PAPER_ARGS, "--judge", "gpt-4", "--human", "gold-human",
                       "--half-width", "0.5")
    progress = assert_downloads_as_shown(at, "download.progress-paid")
    assert [row[progress.headings.index(column_label("annotator"))]
            for row in progress.rows] == ["ann <b>1</b>"]  # as written, not as markup
    short = assert_downloads_as_shown(at, "download.short-units-paid")
    assert short.rows  # one annotator of the two each item needs: every unit is short
    quality = assert_downloads_as_shown(at, "download.quality-paid")
    assert quality.headings[:2] == [column_label("annotator"), column_label("flags")]
