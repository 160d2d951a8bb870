"""The export contract: every table as CSV, JSON or a booktabs LaTeX table.

The CLI (``python -m elitr_core export``) and the pages' download buttons both call
:func:`render`, so a page's CSV is byte-identical to the CLI's.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from db.models import NO_SEED
from db.queries import ScoreFilter, score_records, score_rows
from elitr_core.errors import UserError
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_COLUMNS

FORMATS = ("csv", "json", "latex")


def _take(values: pd.Series, position: np.ndarray) -> pd.Series | np.ndarray:
    """``values[position]`` with -1 meaning missing. Text columns become categoricals with
    sorted categories: a million-row table then groups and sorts on small integer codes."""
    if pd.api.types.is_numeric_dtype(values):
        taken = values.to_numpy()[np.clip(position, 0, None)] if len(values) else \
            np.zeros(len(position))
        return pd.Series(taken).where(position >= 0).to_numpy()
    categories = sorted(values.dropna().unique())
    codes = pd.Categorical(values, categories=categories).codes
    picked = np.where(position >= 0, codes[np.clip(position, 0, None)] if len(codes) else -1, -1)
    return pd.Categorical.from_codes(picked, categories=categories)


def scores_table(session: Session, flt: ScoreFilter) -> pd.DataFrame:
    """The long-format ``scores`` table (scored rows only) for the filters.

    Rows are ordered by split, setting, mode, model, meeting, question, evaluator, annotator,
    sample, seed, so the CSV is byte-identical on SQLite and PostgreSQL.
    """
    parts = score_records(session, flt)
    frame = pd.DataFrame.from_records(parts["scores"], columns=[
        "run_id", "question_row", "evaluator_id", "annotator_id", "sample", "score"])
    dims = (
        ("run_id", ["split", "setting", "mode", "seed", "model"], parts["runs"]),
        ("question_row", ["meeting", "question_id", "question_type", "answer_position"],
         parts["questions"]),
        ("evaluator_id", ["evaluator"], parts["evaluators"]),
        ("annotator_id", ["annotator"], parts["annotators"]),
    )
    keep = pd.Series(True, index=frame.index)
    for key, columns, records in dims:
        table = pd.DataFrame.from_records(records, columns=[key, *columns]).set_index(key)
        position = table.index.get_indexer(frame[key])
        if key != "annotator_id":  # the filters act on runs and evaluators
            keep &= position >= 0
        for column in columns:
            frame[column] = _take(table[column], position)
    frame = frame[keep.to_numpy()].reindex(columns=list(SCORE_COLUMNS))
    frame["seed"] = frame["seed"].astype("Int64").mask(frame["seed"] == NO_SEED)
    frame["question_id"] = frame["question_id"].astype("int64")
    frame["sample"] = frame["sample"].astype("int64")
    frame["score"] = frame["score"].astype("float64")
    order = ["split", "setting", "mode", "model", "meeting", "question_id", "evaluator",
             "annotator", "sample", "seed"]
    return frame.sort_values(order, kind="stable", na_position="first").reset_index(drop=True)


def unscored_table(session: Session, flt: ScoreFilter) -> pd.DataFrame:
    """Judge outputs with no parsable score: the keys of ``scores`` plus the reason."""
    unparsed = ScoreFilter(**{**flt.__dict__, "status": "unparsed"})
    columns = [c for c in SCORE_COLUMNS if c != "score"] + ["reason"]
    return pd.DataFrame(score_rows(session, unparsed), columns=[*columns])[columns]


#: First characters that make a spreadsheet read a cell as a formula (OWASP CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _format_number(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.6e}"
    return str(value)


def _csv_cell(value: Any) -> str:
    """A CSV cell; a text cell that a spreadsheet would run as a formula gets a leading ``'``.

    Only text is escaped (a model name ``=HYPERLINK(...)``); numbers such as ``-0.5`` are
    written as they are.
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return _format_number(value)


def to_csv(frame: pd.DataFrame) -> str:
    """CSV with a fixed number format (6 significant digits), empty cells for missing values,
    and text cells that start like a formula neutralised (:func:`_csv_cell`); lines end with
    ``\n`` and a cell holding a line break (``\n`` or a bare ``\r``) is quoted."""
    cells = frame.map(_csv_cell)
    text = cells.to_csv(index=False, lineterminator="\n")
    if "\r" not in text:
        return text
    # Python 3.11's csv writer quotes a cell for the characters of its line terminator only,
    # so with "\n" a bare CR went out unquoted and readers took it for the end of the line.
    # Each row is written with "\r\n" (which quotes such cells) and its end turned into "\n".
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    lines = []
    for row in [list(cells.columns), *cells.itertuples(index=False, name=None)]:
        writer.writerow(row)
        lines.append(buffer.getvalue()[:-2] + "\n")
        buffer.seek(0)
        buffer.truncate()
    return "".join(lines)


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def to_json(frame: pd.DataFrame) -> str:
    """JSON records; missing values as null; floats at full precision (``repr``, so a float
    read back equals the one written)."""
    finite = frame.notna() & ~frame.isin([math.inf, -math.inf])
    records = frame.astype(object).where(finite, None).to_dict(orient="records")
    return json.dumps(records, indent=1, ensure_ascii=False, default=_json_value,
                      allow_nan=False) + "\n"


def _latex_escape(text: str) -> str:
    for raw, escaped in (
        ("\\", r"\textbackslash{}"),
        ("&", r"\&"),
        ("%", r"\%"),
        ("$", r"\$"),
        ("#", r"\#"),
        ("_", r"\_"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("~", r"\textasciitilde{}"),
        ("^", r"\textasciicircum{}"),
    ):
        text = text.replace(raw, escaped)
    return text


def to_latex(frame: pd.DataFrame, *, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``); numbers to 2 decimals, p to 3."""

    def cell(column: str, value: Any) -> str:
        if isinstance(value, float) and not math.isnan(value):
            return f"{value:.3f}" if column in ("p", "t") else f"{value:.2f}"
        return _latex_escape(_format_number(value))

    align = "".join("r" if pd.api.types.is_numeric_dtype(frame[c]) else "l" for c in frame.columns)
    lines = [r"\begin{table}[t]", r"\centering"]
    lines += [rf"\caption{{{_latex_escape(caption)}}}"] if caption else []
    lines += [
        rf"\begin{{tabular}}{{{align}}}",
        r"\toprule",
        " & ".join(_latex_escape(str(c)) for c in frame.columns) + r" \\",
        r"\midrule",
    ]
    for row in frame.itertuples(index=False):
        lines.append(
            " & ".join(cell(c, v) for c, v in zip(frame.columns, row, strict=True)) + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [rf"\label{{{label}}}"] if label else []
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[pd.DataFrame], str]] = {
    "csv": to_csv,
    "json": to_json,
    "latex": to_latex,
}


def render(frame: pd.DataFrame, fmt: str, table: str | None = None) -> str:
    """Render a table in one of :data:`FORMATS`, checking the contract's columns."""
    if fmt not in RENDERERS:
        raise UserError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if table in EXPORT_COLUMNS and tuple(frame.columns) != EXPORT_COLUMNS[table]:
        raise UserError(f"internal: table {table} has columns {list(frame.columns)}")
    return RENDERERS[fmt](frame)


def write(text: str, out: str | None) -> None:
    """Write to a file, or to stdout when ``out`` is None or ``-``."""
    if out in (None, "-"):
        import sys

        sys.stdout.write(text)
        return
    with open(out, "w", encoding="utf-8", newline="") as handle:
        handle.write(text)


__all__ = ["FORMATS", "render", "scores_table", "unscored_table", "write"]
