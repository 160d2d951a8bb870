"""Display formatting of the pages' tables: one precision per kind of number.

- p-values: the APA style, three decimals without the leading zero (``.056``, ``.003``) and
  ``< .001`` below that (:func:`format_p`; :func:`p_text` for prose: ``p = .056``);
- correlations, kappas, ICCs, alphas, taus and their CI bounds: 3 decimals;
- scores, means, standard deviations, differences, MAE and the like: 2 decimals;
- counts: integers with thousands separators;
- a missing cell: an en dash (the grid's placeholder: the cell stays empty in the grid's own
  CSV download);
- a ``note`` column without a note: not shown;
- an interval (``ci_low`` and ``ci_high``, or ``X_ci_low`` and ``X_ci_high``): one text column
  ``[low, high]`` (:func:`with_interval_texts`) shown instead of both bounds, so a table with
  intervals stays narrow enough for a 1366 px screen and the grid's CSV holds both bounds;
- no negative zero: a number that rounds to zero shows as ``0.00``, never ``-0.00``;
- each column as wide as its longest shown text and its header (:func:`column_widths`): the
  grid would size it from its first rows only and cut a longer value further down.

Only what the page shows changes; the exported bytes come from the unformatted frame
(``export/formats.render``), so downloads stay identical to the CLI (CSV and JSON keep the exact
digits; LaTeX, read by a person, writes p-values as :func:`format_p` does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pandas.io.formats.style import Styler

MISSING = "\u2013"  # en dash
P_COLUMNS = frozenset({"p", "p_value", "pvalue", "p_adjusted", "p_holm"})
AGREEMENT_COLUMNS = frozenset({"r", "rho", "tau", "kendall_tau", "pearson", "spearman",
                               "kendall", "qwk", "kappa", "icc", "alpha", "krippendorff_alpha",
                               "lambda"})
COUNT_PREFIXES = ("n_", "n ")
COUNT_COLUMNS = frozenset({"n", "count", "items", "seeds", "rank", "answered", "checks",
                           "responses", "questions", "meetings"})
# Display strings travel as a second copy of the changed cells: above this many cells the frame
# goes as is and the browser applies PRINTF (no en dash, p-values to three decimals then).
STYLE_CELL_LIMIT = 20_000

NOTE_COLUMNS = frozenset({"note"})
ID_COLUMNS = frozenset({"seed", "sample", "question_id", "order_seed", "turn", "score_bin",
                        "bin", "year"})

_FORMATS: dict[str, str] = {"agreement": "{:.3f}", "score": "{:.2f}", "count": "{:,.0f}",
                            "id": "{:.0f}"}
#: what the browser applies when a table has no display strings; counts "localized" (1,300),
#: as the display strings write them (a table's numbers read the same either way)
PRINTF: dict[str, str] = {"p": "%.3f", "agreement": "%.3f", "score": "%.2f",
                          "count": "localized", "id": "%d"}
#: decimals a shown number of each kind may have
DECIMALS: dict[str, int] = {"p": 3, "agreement": 3, "score": 2, "count": 0, "id": 0}


def format_p(value: Any) -> str:
    """A p-value as a person reads it (APA): ``.056``, ``.003``, ``< .001``, ``> .999``; an en
    dash when missing."""
    if _missing(value) or pd.isna(value):
        return MISSING
    p = float(value)
    if p < 0.001:
        return "< .001"
    if p >= 0.9995:
        return "> .999"
    return f"{p:.3f}".removeprefix("0")


def p_text(value: Any) -> str:
    """``p = .056`` or ``p < .001`` (for a sentence)."""
    shown = format_p(value)
    return f"p {shown}" if shown[0] in "<>" else f"p = {shown}"


def is_p_column(column: Any) -> bool:
    """Whether a column holds p-values (``p``, ``p_holm``, ``p_naive``, ``wilcoxon_p``...)."""
    name = str(column).lower()
    return name in P_COLUMNS or name.startswith("p_") or name.endswith("_p")


def number_kind(column: str, series: pd.Series, frame_columns: Sequence[str] = ()) -> str:
    """``p``, ``agreement``, ``score``, ``count``, ``id`` or ``text`` for one column."""
    name = str(column).lower()
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        return "text"
    if name in ID_COLUMNS or name.endswith("_id"):
        return "id"
    if is_p_column(name):
        return "p"
    if name in COUNT_COLUMNS or name.startswith(COUNT_PREFIXES) or \
            pd.api.types.is_integer_dtype(series):
        return "count"
    if name in AGREEMENT_COLUMNS:
        return "agreement"
    if name.startswith("ci_") and AGREEMENT_COLUMNS & {str(c).lower() for c in frame_columns}:
        return "agreement"
    return "score"


def formatters(frame: pd.DataFrame) -> dict[Any, Callable[[Any], str]]:
    """A formatter per numeric column of ``frame`` (text columns get none)."""
    out: dict[Any, Callable[[Any], str]] = {}
    for column in frame.columns:
        kind = number_kind(column, frame[column], list(frame.columns))
        if kind == "p":
            out[column] = format_p
        elif kind != "text":
            out[column] = _formatter(_FORMATS[kind])
    return out


def _formatter(template: str) -> Callable[[Any], str]:
    def format_cell(value: Any) -> str:
        if pd.isna(value):
            return MISSING
        text = template.format(value)
        # -0.001 rounds to "-0.00": a zero has no sign
        return text[1:] if text.startswith("-") and not text.strip("-0.,") else text

    return format_cell


def without_negative_zero(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each negative number that its column's precision rounds to zero (and
    -0.0) set to 0.0 (a copy, only when there is one): printf would show it as ``-0.00``."""
    fixed = frame
    for column in frame.columns if frame.columns.is_unique else ():
        values = frame[column]
        kind = number_kind(column, values, list(frame.columns))
        if kind in ("text", "p") or not pd.api.types.is_float_dtype(values):
            continue
        zero = np.signbit(values) & values.gt(-0.5 * 10.0 ** -DECIMALS[kind])
        if zero.any():
            fixed = frame.copy() if fixed is frame else fixed
            fixed[column] = values.mask(zero, 0.0)
    return fixed


def printf_formats(frame: pd.DataFrame) -> dict[str, str]:
    """A printf-style format per numeric column (what the browser applies to a large table)."""
    kinds = {str(c): number_kind(c, frame[c], list(frame.columns)) for c in frame.columns}
    return {c: PRINTF[k] for c, k in kinds.items() if k != "text"}


def interval_columns(frame: pd.DataFrame) -> dict[str, str]:
    """``{low: high}`` for every interval of ``frame`` with numbers in both bounds: ``ci_low``
    with ``ci_high``, ``X_ci_low`` with ``X_ci_high``."""
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        return {}
    pairs = {low: low.removesuffix("low") + "high" for low in names
             if low == "ci_low" or low.endswith("_ci_low")}
    return {low: high for low, high in pairs.items() if high in names and all(
        pd.api.types.is_numeric_dtype(frame[c]) for c in (low, high))}


def empty_notes(frame: pd.DataFrame) -> list[str]:
    """The ``note`` column of a table with rows when no row has a note (missing or empty
    text): nothing to read there. Other empty columns say something (no ``flags``: nobody
    flagged) and stay."""
    if frame.empty or not frame.columns.is_unique:
        return []
    return [str(c) for c in frame.columns if str(c) in NOTE_COLUMNS
            and frame[c].fillna("").astype(str).str.strip().eq("").all()]


def interval_label(low: str) -> str:
    """The header of an interval shown in one column: ``ci``, ``human_ci`` (its low column's
    name without ``_low``)."""
    return low.removesuffix("_low")


def _column_strings(frame: pd.DataFrame, column: Any,
                    formats: dict[Any, Callable[[Any], str]]) -> list[str]:
    fmt = formats.get(column)
    return [fmt(v) if fmt else (MISSING if _missing(v) else str(v))
            for v in frame[column].tolist()]


def interval_strings(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Per interval (keyed by its low column): each row's ``[low, high]`` with the bounds'
    precision, an en dash when a bound is missing."""
    formats = formatters(frame)
    out = {}
    for low, high in interval_columns(frame).items():
        bounds = zip(_column_strings(frame, low, formats), _column_strings(frame, high, formats),
                     strict=True)
        out[low] = [MISSING if MISSING in (a, b) else f"[{a}, {b}]" for a, b in bounds]
    return out


def display_strings(frame: pd.DataFrame) -> list[list[str]]:
    """Every cell of ``frame`` as the page shows it (row by row); the low column of an
    interval shows the whole interval (:func:`interval_strings`)."""
    formats = formatters(frame)
    intervals = interval_strings(frame)
    columns = [intervals.get(str(c)) or _column_strings(frame, c, formats)
               for c in frame.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def shown_texts(frame: pd.DataFrame) -> list[list[str]]:
    """Every cell of ``frame`` as the grid shows it (row by row): :func:`display_strings`
    where :func:`styled` sends them, else what the browser's printf formats write
    (:data:`PRINTF`: a p-value to three decimals, no interval merged), a missing cell the en
    dash."""
    if frame.size <= STYLE_CELL_LIMIT and frame.columns.is_unique:
        return display_strings(frame)
    printf = {c: _formatter("{:.3f}") for c in frame.columns if is_p_column(c)
              and pd.api.types.is_numeric_dtype(frame[c])}
    formats = {**formatters(frame), **printf}
    columns = [_column_strings(frame, c, formats) for c in frame.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def with_interval_texts(frame: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """``frame`` with one text column per interval, ``[low, high]`` (:func:`interval_strings`),
    named :func:`interval_label` (``ci``, ``human_ci``), and ``{label: (low, high)}``.

    The grid's own "Download as CSV" writes each shown column's data, not its display text: a
    number column showing ``[low, high]`` would export the low bound alone. A missing
    interval is a null (the grid shows its placeholder, the en dash, and exports nothing).
    An interval whose label is already a column of ``frame`` is left out."""
    labels = {interval_label(low): (low, high) for low, high in interval_columns(frame).items()
              if interval_label(low) not in frame.columns}
    if not labels:
        return frame, {}
    texts = interval_strings(frame)
    added = {label: [None if text == MISSING else text for text in texts[low]]
             for label, (low, _high) in labels.items()}
    return frame.assign(**added), labels


def display_styler(frame: pd.DataFrame) -> Styler:
    """A pandas Styler of ``frame`` that carries precomputed display strings.

    Streamlit reads a Styler's display values through its ``_compute`` and ``_translate``
    (and recognises a Styler by its exact class, so this one is not a subclass); pandas' own
    methods render every cell to HTML first (35-55 ms for even a 150-cell table), so these two
    are replaced on the instance by a lookup in :func:`display_strings`.
    """
    shown = display_strings(frame)
    # nulls stay nulls: the grid shows its placeholder (the en dash, ``placeholder=MISSING``)
    # and its own CSV download writes an empty cell, not -Infinity
    styler = Styler(frame)
    plain = frame.astype(str).to_numpy()

    def translate(*args: Any, **kwargs: Any) -> dict[str, Any]:
        # only the cells whose text differs from str(value): Streamlit starts from those
        return {"body": [[{"id": f"row{r}_col{c}", "display_value": value}
                          for c, value in enumerate(row) if value != plain[r, c]]
                         for r, row in enumerate(shown)]}

    styler._compute = lambda: styler  # type: ignore[method-assign]
    styler._translate = translate  # type: ignore[method-assign]
    return styler


def styled(frame: pd.DataFrame) -> Styler | pd.DataFrame:
    """``frame`` with its display strings (a Styler) when it has a p-value column (``< .001``
    is no printf format), else the frame itself (shown with :func:`printf_formats`; a missing
    cell is the grid's placeholder, :data:`MISSING`)."""
    if frame.size > STYLE_CELL_LIMIT or not frame.columns.is_unique or not any(
            is_p_column(c) and pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns):
        # the browser applies PRINTF: Streamlit's Styler path (2 ms a column) is not worth
        # paying
        return without_negative_zero(frame)
    return display_styler(frame)


def ordered_columns(frame: pd.DataFrame, keys: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(first, rest)``: the key columns present in ``frame`` in the order given, then the
    others in the frame's order (all of them first when no keys are given)."""
    columns = [str(c) for c in frame.columns]
    first = [k for k in keys if k in columns] or ([] if keys else columns)
    return first, [c for c in columns if c not in first]


# The grid draws its cells in Source Sans, 400 14px, on a canvas. These are that font's glyph
# advances in px (canvas measureText in Chromium, rounded up to 0.1 px), so that a column's
# width can be set from its texts on the server: no Python library reads the woff2 font
# Streamlit ships, and the grid itself measures only its first rows.
_GLYPHS_PX: dict[float, str] = {
    2.8: " ", 3.4: "|", 3.5: "',.:;ij", 3.6: "l", 3.7: "I", 4.1: "!f", 4.3: "()[]{}",
    4.4: "-", 4.8: "t", 4.9: "/\\r", 5.9: "*s", 6.0: "\"?z", 6.3: "x", 6.4: "c",
    6.6: "vy", 6.7: "Y", 6.8: "JL\u2013", 7.0: "0123456789#$+<=>^~_ekF", 7.1: "ag", 7.2: "X",
    7.3: "V", 7.4: "E", 7.5: "ST", 7.6: "A`oZ", 7.7: "hnu", 7.8: "bdpq", 8.0: "CPR", 8.2: "K",
    8.3: "B", 8.6: "&", 8.7: "DG", 9.1: "NU", 9.2: "H", 9.3: "OQ", 10.1: "w", 10.2: "M",
    11.0: "W", 11.6: "%", 11.7: "m", 11.9: "@",
}
GLYPH_PX = {char: px for px, chars in _GLYPHS_PX.items() for char in chars}
#: any other character (an accented letter, CJK): a full em, never narrower than drawn
OTHER_GLYPH_PX = 14.0
WIDEST_GLYPH_PX = max(OTHER_GLYPH_PX, *GLYPH_PX.values())
#: the cell's padding, 8 px a side (as the grid's own sizing: the header's menu opens over it)
CELL_PADDING_PX = 16
#: the widest a column gets from its texts: a longer free text (a note) is cut there
MAX_COLUMN_PX = 400


def text_width_px(text: str) -> float:
    """How wide the grid draws ``text`` (px)."""
    return sum(GLYPH_PX.get(char, OTHER_GLYPH_PX) for char in text)


def column_width_px(header: str, texts: Iterator[str] | Sequence[str], *,
                    cap: int = MAX_COLUMN_PX) -> int:
    """The width (px) at which a column shows ``header`` and every text of ``texts`` whole,
    at most ``cap``. The texts are measured longest first, and only while one could still be
    wider than the widest so far."""
    widest = text_width_px(header)
    for text in sorted(set(texts), key=len, reverse=True):
        if len(text) * WIDEST_GLYPH_PX <= widest or widest >= cap:
            break
        widest = max(widest, text_width_px(text))
    return min(cap, math.ceil(widest + CELL_PADDING_PX))


def _widest_candidates(frame: pd.DataFrame, column: Any,
                       formats: dict[Any, Callable[[Any], str]]) -> list[str]:
    """The texts of a column among which its widest shown text is: a number column's smallest
    and largest (the most digits, and a minus sign; every digit is as wide), every distinct
    text of another."""
    values = frame[column]
    missing = [MISSING] if values.isna().any() else []
    fmt = formats.get(column)
    if fmt is None:
        return [*values.dropna().astype(str).unique(), *missing]
    numbers = values.dropna()
    return [fmt(v) for v in (numbers.min(), numbers.max())] * (not numbers.empty) + missing


def column_widths(frame: pd.DataFrame, columns: Sequence[str], *, intervals: bool = True,
                  cap: int = MAX_COLUMN_PX,
                  headers: dict[str, str] | None = None) -> dict[str, int]:
    """Per column of ``columns`` (names of ``frame``), the width (px) that shows its header and
    its widest shown text whole (:func:`column_width_px`); with ``intervals``, the low column
    of an interval is measured as the interval it shows (its header :func:`interval_label`).
    ``headers``: the heading shown for a column, where it is not the column's name."""
    if not frame.columns.is_unique:
        return {}
    formats = formatters(frame)
    shown = interval_strings(frame) if intervals else {}
    intervals_shown = {low: texts for low, texts in shown.items() if low in columns}
    headers = headers or {}
    return {column: column_width_px(headers.get(column, interval_label(column)),
                                    intervals_shown[column], cap=cap)
            if column in intervals_shown
            else column_width_px(headers.get(column, column),
                                 _widest_candidates(frame, column, formats), cap=cap)
            for column in columns if column in frame.columns}
