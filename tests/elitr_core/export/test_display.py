"""Display formats of the pages' tables: one precision per kind of number, en dashes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from elitr_core.export.display import (
    CELL_PADDING_PX,
    MISSING,
    STYLE_CELL_LIMIT,
    column_width_px,
    column_widths,
    display_strings,
    empty_notes,
    format_p,
    interval_columns,
    interval_label,
    interval_strings,
    number_kind,
    ordered_columns,
    p_text,
    printf_formats,
    styled,
    text_width_px,
    with_interval_texts,
)
from elitr_core.export.formats import render, to_latex


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "evaluator_a": ["gpt-4", "gpt-4"], "r": [0.61234, np.nan], "ci_low": [0.5, 0.1],
        "p": [1.23456e-9, 0.04], "n": [390, 1200], "seed": [2023, 2024],
        "mean": [7.456, 8.0], "model": ["GPT-4", None],
    })


def test_each_kind_of_number_has_one_precision() -> None:
    frame = _frame()
    kinds = {c: number_kind(c, frame[c], list(frame.columns)) for c in frame.columns}
    assert kinds == {"evaluator_a": "text", "r": "agreement", "ci_low": "agreement", "p": "p",
                     "n": "count", "seed": "id", "mean": "score", "model": "text"}
    # a CI next to a mean (no correlation in the table) is a score
    assert number_kind("ci_low", frame["ci_low"], ["mean", "ci_low"]) == "score"
    assert printf_formats(frame)["p"] == "%.3f"


def test_styled_cells_read_as_the_page_shows_them() -> None:
    frame = _frame()
    html = " ".join(" ".join(row) for row in display_strings(frame))
    for text in ("0.612", "< .001", ".040", "1,200", "2023", "7.46", MISSING):
        assert text in html, text
    assert "None" not in html and "nan" not in html
    assert frame.loc[0, "p"] == 1.23456e-9  # the frame itself (what downloads use) is untouched
    # what Streamlit reads from the Styler: the same strings, cell by cell
    body = styled(frame)._translate(False, False)["body"]  # type: ignore[union-attr]
    cells = {cell["id"]: cell["display_value"] for row in body for cell in row}
    assert cells["row1_col1"] == MISSING and cells["row0_col3"] == "< .001"
    assert "row0_col0" not in cells  # text shown as is needs no display value
    # a null stays a null (the grid shows its placeholder, the en dash, and its own CSV
    # download writes an empty cell): never -inf, which that download wrote as "-Infinity"
    data = styled(frame).data  # type: ignore[union-attr]
    assert data.loc[[1], ["r", "model"]].isna().all(axis=None)
    assert not np.isinf(data.select_dtypes("number").to_numpy()).any()


def test_large_frames_go_unstyled_and_key_columns_come_first() -> None:
    big = pd.DataFrame({"x": np.arange(STYLE_CELL_LIMIT + 1, dtype=float)})
    big.loc[0, "x"] = np.nan
    assert styled(big) is big
    complete = _frame().dropna().drop(columns="p")
    assert styled(complete) is complete  # no p-value: the browser formats the numbers
    with_p = _frame().dropna()
    assert styled(with_p) is not with_p  # "< .001" is no printf format: display strings
    assert ordered_columns(_frame(), ["mean", "nope", "r"]) == (
        ["mean", "r"], ["evaluator_a", "ci_low", "p", "n", "seed", "model"])
    assert ordered_columns(_frame(), [])[0] == list(_frame().columns)


def test_p_values_read_in_the_apa_style() -> None:
    # the journal convention: no leading zero, three decimals, "< .001" below that
    assert [format_p(p) for p in (0.056, 0.0034, 0.00099, 1e-12, 0.5, 0.99999, np.nan)] == \
        [".056", ".003", "< .001", "< .001", ".500", "> .999", MISSING]
    assert [p_text(p) for p in (0.056, 0.003, 2e-9)] == ["p = .056", "p = .003", "p < .001"]
    assert [number_kind(c, pd.Series([0.1])) for c in ("p", "p_naive", "wilcoxon_p", "pearson")] \
        == ["p", "p", "p", "agreement"]


def test_latex_writes_p_values_in_the_apa_style_and_csv_keeps_the_digits() -> None:
    frame = pd.DataFrame({"model": ["a", "b", "c"], "p": [0.0563, 2e-9, 0.003],
                          "p_naive": [0.9999, 0.2, 0.01]})
    latex = to_latex(frame)
    assert "a & .056 & $>$ .999" in latex and "b & $<$ .001 & .200" in latex
    assert "0.000" not in latex and "0.056" not in latex
    assert "2e-09" in render(frame, "csv") and "0.0563" in render(frame, "csv")


def test_an_interval_reads_as_one_cell_with_its_bounds_precision() -> None:
    frame = pd.DataFrame({
        "model": ["GPT-4", "LongAlpaca-7B", "Vicuna-13B-v1.5"],
        "human_mean": [7.456, 5.0, np.nan], "human_ci_low": [6.999, 4.0, np.nan],
        "human_ci_high": [8.1234, 6.0, np.nan], "r": [0.5, 0.6, 0.7],
        "ci_low": [0.41234, np.nan, 0.5], "ci_high": [0.61234, 0.9, 0.8],
        "mean_a_ci_low": [1.0, 2.0, 3.0], "note": ["", None, " "], "flags": ["", "", ""],
    })
    # an interval needs both bounds; a low column alone stays a number
    assert interval_columns(frame) == {"human_ci_low": "human_ci_high", "ci_low": "ci_high"}
    assert interval_strings(frame) == {
        "human_ci_low": ["[7.00, 8.12]", "[4.00, 6.00]", MISSING],  # a score's 2 decimals
        "ci_low": ["[0.412, 0.612]", MISSING, "[0.500, 0.800]"],  # next to r: 3 decimals
    }
    rows = display_strings(frame)
    assert rows[0][2] == "[7.00, 8.12]" and rows[0][3] == "8.12"  # the high column as before
    complete = frame.drop(columns="note").dropna()
    assert len(complete) == 1 and styled(complete) is complete  # intervals: text columns
    shown, labels = with_interval_texts(frame)
    assert labels == {"human_ci": ("human_ci_low", "human_ci_high"), "ci": ("ci_low", "ci_high")}
    # the grid's own CSV writes a column's data: the interval whole, a missing one empty
    assert shown["human_ci"].fillna("").tolist() == ["[7.00, 8.12]", "[4.00, 6.00]", ""]
    assert shown["ci"].fillna("").tolist() == ["[0.412, 0.612]", "", "[0.500, 0.800]"]
    assert frame.columns.isin(shown.columns).all()  # both bounds stay (downloads read them)
    assert with_interval_texts(frame.assign(ci="taken"))[1].keys() == {"human_ci"}
    assert interval_label("human_ci_low") == "human_ci" and interval_label("ci_low") == "ci"
    assert empty_notes(frame) == ["note"]  # no flags says something: that column stays
    assert empty_notes(frame.assign(note=["", "", "one bin"])) == []
    assert empty_notes(frame.iloc[:0]) == []  # a table without rows keeps its headers
    text_bounds = frame.assign(ci_low=frame["ci_low"].astype(str))
    assert "ci_low" not in interval_columns(text_bounds)


#: canvas measureText in Chromium, font "400 14px Source Sans" (the grid's), in px
CHROMIUM_PX = {"completeness": 81.244, "[-0.30, -0.00]": 72.198, "LongAlpaca-7B": 87.589,
               "Vicuna-13B-v1.5": 94.061, "WMW mean_b_ci": 99.627,
               "position_consistency": 123.441, "gold-human:half": 97.514,
               "Mixtral-8x7B-Instruct-v0.1": 149.452, "AV To Ya Te": 63.487,
               "1,234,567.89": 73.08}


def test_text_widths_are_the_grids_never_narrower() -> None:
    for text, px in CHROMIUM_PX.items():
        # the sum of glyph advances rounded up to 0.1 px; the browser kerns ("AV", "To"),
        # which only narrows: within 6% above
        assert px <= text_width_px(text) <= px * 1.06, text
    assert text_width_px("\u4e2d\u6587") == 28  # any other character: a full em


def test_a_column_is_as_wide_as_its_widest_text_not_its_first_rows() -> None:
    texts = ["verdict"] * 50 + ["completeness"]
    assert column_width_px("criterion", texts) == math.ceil(
        text_width_px("completeness") + CELL_PADDING_PX)
    # a few wide glyphs beat many narrow ones; the pruning (longest first) keeps them
    rng = np.random.default_rng(7)
    for _ in range(200):
        texts = ["".join(rng.choice(list("iIl.WMm@ 0"), rng.integers(0, 12)))
                 for _ in range(rng.integers(1, 8))]
        widest = max([text_width_px("h"), *map(text_width_px, texts)])
        assert column_width_px("h", texts) == math.ceil(widest + CELL_PADDING_PX)
    assert column_width_px("a_long_header_name", ["1"]) > column_width_px("n", ["1"])
    assert column_width_px("note", ["word " * 200]) == 400  # a free text stops at the cap


def test_column_widths_measure_the_shown_texts() -> None:
    frame = pd.DataFrame({"criterion": ["verdict", "verdict", "completeness"],
                          "mean": [1.5, -12345.678, None], "n": [3, 2_000_000, 1],
                          "ci_low": [-0.3, 0.1, 0.2], "ci_high": [-0.001, 0.5, 0.6]})
    widths = column_widths(frame, ["criterion", "mean", "n", "ci_low"])
    assert widths["criterion"] == column_width_px("criterion", ["completeness"])
    assert widths["mean"] == column_width_px("mean", ["-12345.68"])
    assert widths["n"] == column_width_px("n", ["2,000,000"])
    assert widths["ci_low"] == column_width_px("ci", ["[-0.30, 0.00]"])
    assert column_widths(frame, ["ci_low"], intervals=False) == {
        "ci_low": column_width_px("ci_low", ["-0.30"])}


def test_no_number_shows_as_a_negative_zero() -> None:
    frame = pd.DataFrame({"model": ["a", "b"], "mean": [-0.001, -0.3], "r": [-0.0004, 0.5],
                          "n_pairs": [-0.2, 4.0], "mean_ci_low": [-0.3, -0.2],
                          "mean_ci_high": [-0.004, 0.1], "p": [0.2, None]})
    assert display_strings(frame) == [
        ["a", "0.00", "0.000", "0", "[-0.30, 0.00]", "0.00", ".200"],
        ["b", "-0.30", "0.500", "4", "[-0.20, 0.10]", "0.10", MISSING]]
    # without a missing cell, p-value or interval the browser formats (printf): the values
    # that would read "-0.00" go as 0.0
    plain = frame[["model", "mean", "r"]].assign(r=[-0.0, 0.5])
    shown = styled(plain)
    assert isinstance(shown, pd.DataFrame)
    formats = printf_formats(plain)
    assert [formats[c] % v for c in ("mean", "r") for v in shown[c]] == [
        "0.00", "-0.30", "0.000", "0.500"]
    # the download keeps the exact values
    assert render(plain, "csv").splitlines()[1] == "a,-0.001,-0"
