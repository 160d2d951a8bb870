"""The export contract: every table as CSV, JSON or a booktabs LaTeX table.

The CLI (``python -m elitr_core export``) and the pages' download buttons both call
:func:`render`, so a page's CSV is byte-identical to the CLI's.
"""

from __future__ import annotations

import csv
import io
import json
import math
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pandas as pd

from elitr_core.errors import UserError, os_message
from elitr_core.vocab import EXPORT_COLUMNS

FORMATS = ("csv", "json", "latex", "parquet")


#: First characters that make a spreadsheet read a cell as a formula (OWASP CSV injection).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _format_number(value: Any) -> str:
    """A cell's text: empty when missing; a float as :func:`shortest_float`."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return shortest_float(value)
    return str(value)


def shortest_float(value: float) -> str:
    """The shortest text that reads back as exactly ``value`` (Python's ``repr``), with a
    whole number written without its ``.0`` (``7``, ``-0``); ``float(text) == value`` always.

    Exports must lose nothing: a silver mean 2.5555555555555554 written to 6 significant
    digits came back from an export -> import round trip as 2.55556. The pages' display
    formatting (``export/display.py``) is separate and unchanged.
    """
    text = repr(float(value))  # float(): numpy 2 spells its scalars np.float64(...)
    return text[:-2] if text.endswith(".0") else text


def _csv_cell(value: Any) -> str:
    """A CSV cell; a text cell that a spreadsheet would run as a formula gets a leading ``'``.

    Only text is escaped (a model name ``=HYPERLINK(...)``); numbers such as ``-0.5`` are
    written as they are.
    """
    # NFKC: a full-width or small form (＝SUM(A1), ﹢, ＠) is read as its ASCII twin
    if isinstance(value, str) and unicodedata.normalize("NFKC", value[:1]).startswith(
            FORMULA_STARTS):
        return "'" + value
    return _format_number(value)


def to_csv(frame: pd.DataFrame) -> str:
    """CSV with floats at full precision (:func:`shortest_float`), empty cells for missing
    values, text cells that start like a formula neutralised (:func:`_csv_cell`); lines end with
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


#: Every character LaTeX reads as markup, and its text command (one pass: a replacement is
#: never escaped again, so ``\\`` is ``\textbackslash{}``, not ``\textbackslash\{\}``).
#: ``<``, ``>``, ``|`` and ``"`` are markup-free but drawn as other glyphs in the default
#: OT1 encoding; line breaks and tabs would end a paragraph (an error inside a table).
_LATEX = str.maketrans({
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    '"': r"\texttt{\char34}", "\n": " ", "\r": " ", "\t": " ",
    # ligatures and quote glyphs: TeX joins -- and --- into dashes, `` '' ,, << >> into
    # quotes, !` ?` into inverted marks, and draws ` ' as curly quotes; an empty group after
    # each character (or its text command) keeps every one of them as written
    "-": "-{}", ",": ",{}", "!": "!{}", "?": "?{}", "`": r"\textasciigrave{}",
    "'": r"\textquotesingle{}",
    **{chr(c): None for c in [*range(0x20), 0x7F] if chr(c) not in "\n\r\t"},
})


def _latex_escape(text: str) -> str:
    """``text`` as LaTeX that prints it: every special character as its text command."""
    return text.translate(_LATEX)


def to_latex(frame: pd.DataFrame, *, caption: str | None = None, label: str | None = None,
             texts: list[list[str]] | None = None) -> str:
    """A booktabs table (needs ``\\usepackage{booktabs}``; names in scripts other than Latin
    need XeLaTeX, see docs/security.md); numbers to 2 decimals, t to 3, p-values in the APA
    style (``.056``, ``< .001``: ``display.format_p``). ``texts``: each cell's text as a page
    shows it (row by row), written instead, so that a table's LaTeX has the page's rounding
    (a number column stays right-aligned)."""
    from elitr_core.export.display import format_p, is_p_column

    def cell(column: str, value: Any) -> str:
        if isinstance(value, float) and not math.isnan(value):
            if is_p_column(column):
                return format_p(value).replace("< ", "$<$ ").replace("> ", "$>$ ")
            return f"{value:.3f}" if column == "t" else f"{value:.2f}"
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
    if texts is not None:
        lines += [" & ".join(_latex_text(t) for t in row) + r" \\" for row in texts]
    for row in frame.itertuples(index=False) if texts is None else ():
        lines.append(
            " & ".join(cell(c, v) for c, v in zip(frame.columns, row, strict=True)) + r" \\"
        )
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [rf"\label{{{label}}}"] if label else []
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def _latex_text(text: str) -> str:
    """A shown cell's text in LaTeX: escaped, ``<`` and ``>`` of a p-value in math mode."""
    if text.startswith(("< ", "> ")):
        return f"${text[0]}$ {_latex_escape(text[2:])}"
    return _latex_escape(text)


def arrow_table(frame: pd.DataFrame) -> Any:
    """``frame`` as a pyarrow table whose types say what the JSON export writes: an integer
    column (nullable ``Int64`` too) stays int64, a float column float64 with NaN and
    infinities as null (JSON's null), a text column string; missing values are nulls."""
    import pyarrow as pa

    arrays, fields = [], []
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column.dtype):
            kind = pa.bool_()
        elif pd.api.types.is_integer_dtype(column.dtype):
            kind = pa.int64()
        elif pd.api.types.is_float_dtype(column.dtype):
            kind = pa.float64()
            column = column.where(np.isfinite(column.astype("float64")), np.nan)
        else:
            values = column.astype(object).where(column.notna(), None)
            kinds = {type(v) for v in values if v is not None}
            kind = pa.string() if kinds <= {str} else None
            column = values
        array = pa.array(column, type=kind, from_pandas=True)
        arrays.append(array)
        fields.append(pa.field(str(name), array.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def to_parquet(frame: pd.DataFrame, table: str | None = None) -> bytes:
    """The table as one Parquet file (zstd-compressed), typed by export table ``table``'s
    declared schema (``export/schema.py``: an empty table typed like a full one), or by
    :func:`arrow_table` for a frame of no declared table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from elitr_core.export.schema import declared, typed_table

    sink = pa.BufferOutputStream()
    typed = typed_table(frame, table) if table and declared(table) else arrow_table(frame)
    pq.write_table(typed, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


RENDERERS: dict[str, Callable[[pd.DataFrame], str | bytes]] = {
    "csv": to_csv,
    "json": to_json,
    "latex": to_latex,
    "parquet": to_parquet,
}


def render(frame: pd.DataFrame, fmt: str, table: str | None = None) -> Any:
    """Render a table in one of :data:`FORMATS`, checking the contract's columns."""
    if fmt not in RENDERERS:
        raise UserError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if table in EXPORT_COLUMNS and tuple(frame.columns) != EXPORT_COLUMNS[table]:
        raise UserError(f"internal: table {table} has columns {list(frame.columns)}")
    if fmt == "parquet":
        return to_parquet(frame, table)
    return RENDERERS[fmt](frame)


def write(text: str | bytes, out: str | None) -> None:
    """Write to a file, or to stdout when ``out`` is None or ``-`` (text only: a Parquet
    file's bytes need ``--out``).

    A file is written whole or not at all: into a temporary file next to it, then renamed
    over it, so a full disk leaves an existing file as it was. A target that is not a regular
    file (``/dev/stdout``, a pipe) is written directly.

    Raises
    ------
    UserError
        ``out`` is a folder, its folder is missing, or the file cannot be written.
    """
    import os
    import sys
    import tempfile

    binary = isinstance(text, bytes)
    if out in (None, "-") and binary:
        raise UserError("--format parquet writes a binary file: give it with --out FILE")
    if out in (None, "-"):
        assert isinstance(text, str)
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader stopped early: the CLI ends quietly
            raise
        except OSError as exc:
            exc.filename = "the standard output"
            raise UserError(os_message(exc, "cannot write")) from None
        return
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    path = os.path.abspath(out)
    if os.path.isdir(path):
        raise UserError(f"--out {out} is a folder: give a file name, e.g. {out}/table.csv")
    if os.path.exists(path) and not os.path.isfile(path):
        with _writing_error(out), open(path, "wb") as handle:
            handle.write(data)
        return
    with _writing_error(out):
        descriptor, temporary = tempfile.mkstemp(prefix=".export-", dir=os.path.dirname(path))
        umask = os.umask(0o022)
        os.umask(umask)
        try:
            os.fchmod(descriptor, 0o666 & ~umask)  # as open() would make it, not mkstemp's 0600
            with os.fdopen(descriptor, "wb") as stream:
                stream.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise


@contextmanager
def _writing_error(out: str) -> Iterator[None]:
    """An ``OSError`` while writing ``out`` as a :class:`UserError` saying what to do."""
    try:
        yield
    except OSError as exc:
        exc.filename = out
        raise UserError(os_message(exc, "cannot write --out")) from None


__all__ = ["FORMATS", "render", "write"]
