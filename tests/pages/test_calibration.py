"""AppTest: the calibration page reproduces the paper's score-bin figure as a table."""

from __future__ import annotations

import base64
import json
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
    set_filters,
)


def _array(value: object) -> list[float]:
    """A Plotly JSON array: a list, or numpy bytes (``{"dtype": ..., "bdata": base64}``)."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).tolist()
    return list(value)  # type: ignore[call-overload]


PAPER = {"split": "test2", "setting": "qa", "mode": "st"}


@pytest.fixture
def app(bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    at = open_page(bundled_sqlite, monkeypatch, "calibration")
    return set_filters(at, **PAPER)


def test_ten_gold_human_bins(app: AppTest, bundled_sqlite: str) -> None:
    assert not app.exception
    assert messages(app) == {"error": [], "warning": [], "info": []}
    assert app.selectbox(key="calibration.reference").value == "gold-human"
    table = app.dataframe[0].value
    assert set(table["evaluator"]) == {"gpt-4", "prometheus", "silver-human"}
    gpt4 = table[table["evaluator"] == "gpt-4"]
    assert list(gpt4["bin"]) == list(range(1, 11))
    assert gpt4["n"].sum() == 390
    # one bin by hand: the t interval of gpt-4's scores where gold-human gave 9
    from db.runs import ScoreFilter
    from db.transaction import reading
    from elitr_core.data.database import open_database
    from elitr_core.data.scores import scores_table

    with reading(open_database(bundled_sqlite)) as session:
        scores = scores_table(session, ScoreFilter(**PAPER))
    wide = scores.pivot_table(index=["meeting", "question_id", "model"], columns="evaluator",
                              values="score").dropna(subset=["gold-human"])
    values = wide.loc[wide["gold-human"] == 9, "gpt-4"].to_numpy()
    half = stats.t.ppf(0.975, len(values) - 1) * values.std(ddof=1) / np.sqrt(len(values))
    row = gpt4[gpt4["bin"] == 9].iloc[0]
    assert row["n"] == len(values)
    assert row["mean"] == pytest.approx(values.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        (values.mean() - half, values.mean() + half))
    chart = app.get("plotly_chart")[0].proto.spec
    assert "n=126" in chart  # bin size written under bin 9


def test_csv_is_byte_identical_to_cli(app: AppTest, bundled_sqlite: str, tmp_path: Path) -> None:
    page_bytes = download_bytes(app, "download.calibration.csv")
    cli = cli_export(bundled_sqlite, "calibration", tmp_path / "c.csv", "--split", "test2",
                     "--setting", "qa", "--mode", "st")
    assert page_bytes == cli


def test_reference_is_selectable(app: AppTest, bundled_sqlite: str, tmp_path: Path) -> None:
    app.selectbox(key="calibration.reference").set_value("silver-human").run()
    assert not app.exception
    table = app.dataframe[0].value
    assert set(table["reference"]) == {"silver-human"}
    assert set(table["evaluator"]) == {"gpt-4", "prometheus", "gold-human"}
    cli = cli_export(bundled_sqlite, "calibration", tmp_path / "c.csv", "--split", "test2",
                     "--setting", "qa", "--mode", "st", "--reference", "silver-human")
    assert download_bytes(app, "download.calibration.csv") == cli


def test_reference_without_partner_warns(app: AppTest) -> None:
    set_filters(app, evaluators=["gold-human"])
    assert not app.exception
    assert messages(app)["warning"], "a message says no evaluator shares a response"
    assert not app.dataframe


def test_empty_filter_result_is_a_message(app: AppTest) -> None:
    set_filters(app, setting="conv", mode="st")
    assert not app.exception
    assert any("Setting = Conv, Mode = single-turn (st): change" in i
               for i in messages(app)["info"])


def test_small_bins_show_their_mean_without_an_interval_and_sizes_per_evaluator(
        app: AppTest) -> None:
    set_filters(app, models=["LongAlpaca-7B"])  # 130 responses: some bins hold a few
    assert not app.exception
    table = app.dataframe[0].value
    small = table[table["n"] < 5]
    assert not small.empty  # the bundled data has bins of fewer than 5 responses
    # shown as an en dash (the grid's frame holds -inf there, so it sorts last)
    for column in ("ci_low", "ci_high"):
        assert not np.isfinite(small[column].astype(float)).any()
    assert np.isfinite(table.loc[table["n"] >= 5, "ci_low"].astype(float)).all()
    figure = json.loads(app.get("plotly_chart")[0].proto.spec)
    for trace in figure["data"]:
        if trace["name"] not in set(table["evaluator"]):
            continue  # the diagonal
        rows = table[table["evaluator"] == trace["name"]]
        # each evaluator's bin sizes, at least 11 px: beside its own points, or once under
        # each bin when every evaluator has the same
        if "text" in trace:
            assert list(trace["text"]) == [f"n={n}" for n in rows["n"]]
            assert trace["textfont"]["size"] >= 11
        else:
            ticks = figure["layout"]["xaxis"]
            assert ticks["ticktext"] == [f"{b}<br>n={n}" for b, n in zip(rows["bin"], rows["n"],
                                                                          strict=True)]
            assert ticks["tickfont"]["size"] >= 11
        for n, up, down in zip(rows["n"], _array(trace["error_y"]["array"]),
                               _array(trace["error_y"]["arrayminus"]), strict=True):
            if n < 5:
                assert up == down == 0  # no interval drawn
