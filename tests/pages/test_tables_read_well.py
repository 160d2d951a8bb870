"""Every table on every page and tab reads well: no "None", "nan", negative zero ("-0.00",
"[-0.30, -0.00]") or a number with more decimals than its kind allows
(``elitr_core.export.display``), as the browser would show it, and no raw column name as a
heading."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from elitr_core.export.column_labels import COLUMN_LABELS
from elitr_core.export.display import DECIMALS, number_kind
from tests.pages.analysis_support import analysis_app
from tests.pages.test_battles import judge_all
from ui.navigation import researcher_page_files

#: the tabs of each page with tabs: their session key (``ui.state.open_tab``)
SECTION_KEYS = {"pages/leaderboard.py": "leaderboard.section",
                "pages/agreement.py": "agreement.section",
                "pages/drilldown.py": "drilldown.section", "pages/judge_audit.py": "audit.section"}
UNREADABLE = {"None", "nan", "NaN", "<NA>", "NaT", "inf", "-inf"}
NUMBER = re.compile(r"^-?[\d,]*\.(\d+)$")
#: "-0", "-0.00", alone or as an interval's bound
NEGATIVE_ZERO = re.compile(r"(^|[\[\s])-0(\.0*)?($|[,\]\s])")


def _printf(fmt: str | None, value: Any, placeholder: str = "None") -> str:
    """What the grid shows for a raw cell with this printf format (None: no format)."""
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return placeholder  # the grid writes a null as its placeholder, "None" by default
    if fmt is None:
        return str(value)
    if fmt == "localized":  # the browser's locale (en-US in the tests): 1,300
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,}"
    return fmt % value


def shown_cells(element: Any) -> Iterator[tuple[str, str, str]]:
    """(column, kind of number, text as shown) for every cell of a dataframe element."""
    raw: pd.DataFrame = element.value
    proto = element.proto
    config = json.loads(proto.columns or "{}")
    display = None
    placeholder = proto.placeholder if proto.HasField("placeholder") else "None"
    if proto.arrow_data.HasField("styler"):
        display = convert_arrow_bytes_to_pandas_df(proto.arrow_data.styler.display_values)
    for position, column in enumerate(raw.columns):
        kind = number_kind(column, raw[column], list(raw.columns))
        fmt = config.get(str(column), {}).get("type_config", {}).get("format")
        for row, value in enumerate(raw[column].tolist()):
            text = None
            if display is not None:
                text = display.iat[row, position]
            if not text:
                text = _printf(fmt, value, placeholder)
            yield str(column), kind, str(text)


def problems(at: AppTest, where: str) -> list[str]:
    """The unreadable cells of every table the page shows."""
    found = []
    for element in at.dataframe:
        for column, kind, text in shown_cells(element):
            decimals = NUMBER.match(text)
            if text in UNREADABLE or NEGATIVE_ZERO.search(text) or (
                    kind in DECIMALS and decimals and len(decimals.group(1)) > DECIMALS[kind]):
                found.append(f"{where}: {column} ({kind}) shows {text!r}")
    return found


def headings(at: AppTest, where: str) -> list[str]:
    """Column headings that are raw names (issue 43: ``rank_ppi++``, ``n_labelled``): a
    heading with an underscore, or an export column's name where it has a display name."""
    found = []
    for element in at.dataframe:
        config = json.loads(element.proto.columns or "{}")
        shown = list(element.proto.column_order) or list(map(str, element.value.columns))
        for column in shown:  # the columns drawn (a table keeps others for its downloads)
            settings = config.get(column, {})
            if settings.get("hidden"):
                continue
            heading = settings.get("label") or column
            if "_" in heading or (heading == column and COLUMN_LABELS.get(column, column)
                                  != column):
                found.append(f"{where}: a column headed {heading!r}")
    return found


def undownloadable(at: AppTest, where: str) -> list[str]:
    """Tables without their "as shown" downloads (every table exports as it is shown)."""
    shown_csv = [b for b in at.get("download_button") if str(b.key).endswith(".shown.csv")]
    if len(shown_csv) < len(at.dataframe):
        return [f"{where}: {len(at.dataframe)} table(s), {len(shown_csv)} CSV download(s) "
                "as shown"]
    return []


def wording(at: AppTest, where: str) -> list[str]:
    """Captions and messages that read badly: a double space (a command put together from an
    empty part) or an invisible U+2060 (it broke a copied address)."""
    found = []
    for kind in ("caption", "markdown", "error", "warning", "info", "success"):
        for element in getattr(at, kind):
            text = str(element.value)
            if "  " in text.strip() or "\u2060" in text:
                found.append(f"{where}: {kind} {text[:120]!r}")
    return found


def walk(at: AppTest) -> Iterator[tuple[str, AppTest]]:
    """Every researcher page and each of its tabs, drawn."""
    for file in researcher_page_files():
        at.switch_page(file).run()
        assert not at.exception, (file, at.exception)
        yield file, at
        key = SECTION_KEYS.get(file)
        for tab in [t.label for t in at.tabs][1:] if key else []:
            at.session_state[key] = tab
            at.run()
            assert not at.exception, (file, tab, at.exception)
            yield f"{file} / {tab}", at


def test_every_table_on_every_page_reads_well(bundled_sqlite: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    judge_all(bundled_sqlite)  # the Battles page's tables too
    at = analysis_app(bundled_sqlite, monkeypatch)
    at.run()
    seen, found = 0, []
    for where, page in walk(at):
        seen += len(page.dataframe)
        found += problems(page, where) + wording(page, where) + headings(page, where) \
            + undownloadable(page, where)
    assert seen >= 25, seen  # the walk reached the pages' tables
    assert not found, "\n".join(found[:40])


def test_the_check_catches_raw_floats_and_nulls(tmp_path: Path) -> None:
    script = tmp_path / "page.py"
    script.write_text(
        "import pandas as pd, streamlit as st\n"
        "st.dataframe(pd.DataFrame({'mean': [8.5248, None], 'model': ['a', None]}))\n")
    at = AppTest.from_file(str(script)).run()
    assert problems(at, "raw") == ["raw: mean (score) shows '8.5248'",
                                   "raw: mean (score) shows 'None'",
                                   "raw: model (text) shows 'None'"]


def test_the_check_catches_a_negative_zero(tmp_path: Path) -> None:
    script = tmp_path / "page.py"
    script.write_text(
        "import pandas as pd, streamlit as st\n"
        "st.dataframe(pd.DataFrame({'ci': ['[-0.30, -0.00]', '[-0.30, 0.00]', '-0', '-0.05'],"
        " 'mean': [-0.001, 0.0, -0.0, -0.2]}),"
        " column_config={'mean': st.column_config.NumberColumn(format='%.2f')})\n")
    at = AppTest.from_file(str(script)).run()
    assert problems(at, "raw") == ["raw: ci (text) shows '[-0.30, -0.00]'",
                                   "raw: ci (text) shows '-0'",
                                   "raw: mean (score) shows '-0.00'",
                                   "raw: mean (score) shows '-0.00'"]  # -0.001, -0.0
