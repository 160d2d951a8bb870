"""A table as a page shows it renders its "as shown" downloads: the shown columns in their
order under their display names, the index first, LaTeX cells at the page's rounding."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd

from elitr_core.export.display import STYLE_CELL_LIMIT, with_interval_texts
from elitr_core.export.shown_table import ShownTable


def _agreement() -> pd.DataFrame:
    return pd.DataFrame({"evaluator_a": ["gpt-4", "gpt-4"], "evaluator_b": ["gold", "silver"],
                         "r": [0.81234, -0.0004], "ci_low": [0.7, np.nan],
                         "ci_high": [0.9, np.nan], "n": [1300, 12], "p": [0.00001, 0.0561],
                         "note": ["", ""]})


def test_the_shown_columns_in_order_under_their_display_names() -> None:
    data, _ = with_interval_texts(_agreement())
    table = ShownTable(data, ("evaluator_b", "r", "ci", "p"))
    frame = table.frame()
    assert list(frame.columns) == ["Evaluator B", "r", "95% CI", "p"]
    assert frame["r"].tolist() == [0.81234, -0.0004]  # full precision for CSV and JSON
    assert table.texts() == [["gold", "0.812", "[0.700, 0.900]", "< .001"],
                             ["silver", "0.000", "\u2013", ".056"]]
    csv = pd.read_csv(io.StringIO(table.render("csv")))
    assert list(csv.columns) == ["Evaluator B", "r", "95% CI", "p"] and len(csv) == 2
    assert list(json.loads(table.render("json"))[0]) == ["Evaluator B", "r", "95% CI", "p"]
    latex = table.render("latex")
    assert "Evaluator B & r & 95\\% CI & p \\\\" in latex
    # the page's 3 decimals (the export's LaTeX writes r to 2) and its APA p
    assert "gold & 0.812 & [0.700,{} 0.900] & $<$ .001 \\\\" in latex
    assert "silver & 0.000 & \u2013 & .056 \\\\" in latex


def test_an_index_shown_is_the_first_column() -> None:
    data = pd.DataFrame({"rank": [1, 2], "QA-st mean": [7.256, 6.5]},
                        index=pd.Index(["GPT-4", "Vicuna"], name="model"))
    table = ShownTable(data, ("rank", "QA-st mean"), index=True)
    assert list(table.frame().columns) == ["Model", "Rank", "QA-st mean"]
    assert table.frame()["Model"].tolist() == ["GPT-4", "Vicuna"]
    assert table.texts() == [["GPT-4", "1", "7.26"], ["Vicuna", "2", "6.50"]]


def test_a_large_table_is_written_as_the_browser_formats_it() -> None:
    rows = STYLE_CELL_LIMIT // 2 + 1
    data = pd.DataFrame({"p": np.full(rows, 0.0004), "mean": np.full(rows, 2.345)})
    texts = ShownTable(data, ("p", "mean")).texts()
    assert texts[0] == ["0.000", "2.35"] and len(texts) == rows  # printf: no APA past the limit


def test_given_labels_win() -> None:
    data = pd.DataFrame({"progress": [0.5]})
    assert list(ShownTable(data, ("progress",), given_labels={"progress": "Done"}).frame()
                .columns) == ["Done"]
