"""What a page shows in a table, and whether a download holds the same table.

Reused by the page tests (``tests/pages/test_downloads_as_shown.py``) and the browser
walkthrough: :func:`shown_table` reads a Streamlit dataframe element as the grid draws it
(its headings, the columns in their order, each cell's text); :func:`assert_download_equals`
checks a downloaded CSV, JSON or LaTeX against it: the same headings in the same order, the
same rows in the same order, each CSV/JSON number the shown text at the shown rounding, and
each LaTeX cell the very text shown (the page's rounding, not the export's).
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import pandas as pd
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

#: the grid's placeholder of a missing cell on the pages (``ui.tables``: the en dash)
MISSING = "\u2013"
_NUMBER = re.compile(r"^(?P<sign>-?)(?P<whole>[\d,]*)(?:\.(?P<decimals>\d+))?$")


@dataclass(frozen=True)
class Shown:
    """A table as the page shows it: its headings, and each row's cell texts; ``bars``: the
    positions of columns drawn as a bar (a progress column), whose cells hold the value."""

    headings: list[str]
    rows: list[list[str]]
    bars: frozenset[int] = frozenset()


def _printf(fmt: str | None, value: Any, placeholder: str) -> str:
    """What the grid writes for a raw cell under a printf format (None: no format)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return placeholder
    if fmt is None:
        return str(value)
    if fmt == "localized":  # the browser's locale (en-US in the tests): 1,300
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
    return str(fmt % value)


def shown_table(element: Any) -> Shown:
    """The table a dataframe element (``at.dataframe[i]``) draws: the columns of its
    ``column_order`` (all when none), the index first unless hidden, each under its heading
    (the column config's label, else its name), each cell as the grid writes it (the
    Styler's display text, else the number format applied to the value)."""
    raw: pd.DataFrame = element.value
    proto = element.proto
    config = json.loads(proto.columns or "{}")
    placeholder = proto.placeholder if proto.HasField("placeholder") else "None"
    display = None
    if proto.arrow_data.HasField("styler"):
        display = convert_arrow_bytes_to_pandas_df(proto.arrow_data.styler.display_values)
    order = list(proto.column_order) or [str(c) for c in raw.columns]
    names = [str(c) for c in raw.columns]
    headings, columns, bars = [], [], set()
    if not config.get("_index", {}).get("hidden", False):
        index = config.get("_index", {})
        headings.append(index.get("label") or str(raw.index.name or ""))
        columns.append([str(v) for v in raw.index])
    for name in order:
        position = names.index(name)
        settings = config.get(name, {})
        headings.append(settings.get("label") or name)
        fmt = settings.get("type_config", {}).get("format")
        if settings.get("type_config", {}).get("type") == "progress":
            bars.add(len(columns))  # a bar, not a text: its value
            fmt = None
        texts = []
        for row, value in enumerate(raw.iloc[:, position].tolist()):
            text = display.iat[row, position] if display is not None else None
            texts.append(str(text) if text else _printf(fmt, value, placeholder))
        columns.append(texts)
    return Shown(headings, [list(row) for row in zip(*columns, strict=True)], frozenset(bars))


_LATEX_TEXTS = [
    (r"\textbackslash{}", "\\"), (r"\textasciitilde{}", "~"), (r"\textasciicircum{}", "^"),
    (r"\textless{}", "<"), (r"\textgreater{}", ">"), (r"\textbar{}", "|"),
    (r"\texttt{\char34}", '"'), (r"\textasciigrave{}", "`"), (r"\textquotesingle{}", "'"),
    ("$<$", "<"), ("$>$", ">"), ("-{}", "-"), (",{}", ","), ("!{}", "!"), ("?{}", "?"),
    (r"\&", "&"), (r"\%", "%"), (r"\$", "$"), (r"\#", "#"), (r"\_", "_"), (r"\{", "{"),
    (r"\}", "}"),
]


def _latex_cell(text: str) -> str:
    for escaped, plain in _LATEX_TEXTS:
        text = text.replace(escaped, plain)
    return text


#: what LaTeX cannot hold in a table cell: a line break or tab is a space, a control
#: character is left out (``elitr_core.export.formats``)
_LATEX_SAFE = str.maketrans({"\n": " ", "\r": " ", "\t": " ",
                             **{chr(c): None for c in [*range(0x20), 0x7F]
                                if chr(c) not in "\n\r\t"}})


def latex_text(text: str) -> str:
    """A shown text as a LaTeX table can hold it: line breaks and tabs as spaces."""
    return text.translate(_LATEX_SAFE)


def latex_rows(latex: str) -> tuple[list[str], list[list[str]]]:
    """A booktabs table's headings and rows, each cell as the text it prints."""
    lines = latex.splitlines()
    top, middle, bottom = (lines.index(r"\toprule"), lines.index(r"\midrule"),
                           lines.index(r"\bottomrule"))
    assert middle == top + 2, "one heading line"

    def cells(line: str) -> list[str]:
        assert line.endswith(r" \\"), line
        return [_latex_cell(c) for c in line[:-3].split(" & ")]

    return cells(lines[top + 1]), [cells(line) for line in lines[middle + 1:bottom]]


def _same_number(shown: str, value: str) -> bool:
    """Whether the shown text is ``value`` (a CSV cell: the number at full precision) at the
    shown rounding: ``0.123`` for 0.12345, ``1,300`` for 1300, ``.056`` or ``< .001`` for a
    p-value."""
    try:
        number = float(value)
    except ValueError:
        return False
    if shown.startswith(("< ", "> ")):
        bound = float(shown[2:])
        return number < bound if shown[0] == "<" else number > bound
    match = _NUMBER.match(shown)
    if not match:
        return False
    decimals = len(match.group("decimals") or "")
    text = f"{number:,.{decimals}f}"
    if "," not in shown:
        text = text.replace(",", "")  # printf's "%.2f" has no thousands separator
    if text.startswith("-") and not text.strip("-0.,"):
        text = text[1:]  # the page shows no negative zero
    if match.group("whole") == "" and text.startswith(("0.", "-0.")):
        text = text.replace("0.", ".", 1)  # a p-value in the APA style: no leading zero
    return text == shown


def _same_cell(shown: str, value: str) -> bool:
    if shown in (MISSING, "None"):
        return value == ""
    if value.startswith("'") and value[1:2] in ("=", "+", "-", "@"):
        value = value[1:]  # a formula-like text, neutralised for spreadsheets
    return shown == value or _same_number(shown, value)


def assert_download_equals(shown: Shown, data: bytes, fmt: str) -> None:
    """``data`` (a CSV, JSON or LaTeX download) is the table ``shown``: its headings in their
    order, its rows in their order, each cell the one shown (a number at the shown rounding
    in CSV and JSON, the very text shown in LaTeX)."""
    text = data.decode("utf-8")
    if fmt == "latex":
        headings, rows = latex_rows(text)
        assert headings == [latex_text(h) for h in shown.headings]
        want = [[latex_text(t) for t in row] for row in shown.rows]
        assert len(rows) == len(want)
        for number, (got, cells) in enumerate(zip(rows, want, strict=True)):
            # a bar's cell is its value, at any rounding
            bars = [i for i in shown.bars if not _same_number(got[i], cells[i])]
            assert [g for i, g in enumerate(got) if i not in shown.bars] == [
                c for i, c in enumerate(cells) if i not in shown.bars] and not bars, \
                f"row {number}: every LaTeX cell is the text the page shows"
        return
    if fmt == "csv":
        headings, *rows = list(csv.reader(io.StringIO(text)))
    elif fmt == "json":
        records = json.loads(text)
        headings = list(records[0]) if records else list(shown.headings)
        rows = [["" if v is None else str(v) for v in r.values()] for r in records]
    else:
        raise ValueError(f"no such format {fmt!r}")
    assert headings == shown.headings
    assert len(rows) == len(shown.rows)
    for number, (got, want) in enumerate(zip(rows, shown.rows, strict=True)):
        wrong = [(h, w, g) for h, w, g in zip(shown.headings, want, got, strict=True)
                 if not _same_cell(w, g)]
        assert not wrong, f"row {number}: (heading, shown, downloaded) {wrong}"


def _walk(node: Any) -> Any:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def table_above(at: Any, key: str) -> Any:
    """The dataframe element drawn last before the download button ``{key}.shown.csv`` (the
    table that button downloads) in the AppTest ``at``."""
    from streamlit.testing.v1.element_tree import Dataframe, DownloadButton

    last = None
    for node in _walk(at._tree):
        if isinstance(node, Dataframe):
            last = node
        elif isinstance(node, DownloadButton) and node.key == f"{key}.shown.csv":
            assert last is not None, f"no table above {key}"
            return last
    raise AssertionError(f"no download button {key}.shown.csv on the page")


def assert_downloads_as_shown(at: Any, key: str) -> Shown:
    """The "as shown" CSV, JSON and LaTeX under a table of the AppTest ``at`` (download key
    ``key``) are the table above them as shown (:func:`assert_download_equals`)."""
    from tests.pages.analysis_support import download_bytes

    shown = shown_table(table_above(at, key))
    for fmt in ("csv", "json", "latex"):
        assert_download_equals(shown, download_bytes(at, f"{key}.shown.{fmt}"), fmt)
    return shown
