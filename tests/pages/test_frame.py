"""AppTest: the frame of every page (issue 43, item 3): one chart theme and a trimmed toolbar
on every chart, the product's name and the page in the top bar, and the researcher's Log out
in the top bar's user menu, not in a sidebar of its own."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from elitr_core.export import figures
from elitr_core.export.theme import FONT, PALETTE, THEME
from tests.pages.analysis_support import analysis_app, open_page
from ui.figures import CHART_CONFIG
from ui.layout import PRODUCT, breadcrumb, tab_title

ROOT = Path(__file__).resolve().parents[2]

#: pages whose first view draws a chart on the bundled data
CHART_PAGES = ("leaderboard", "judge_audit", "agreement", "calibration", "drilldown")


@pytest.mark.parametrize("page", CHART_PAGES)
def test_every_chart_has_the_theme_and_the_trimmed_toolbar(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch, page: str) -> None:
    app = open_page(bundled_sqlite, monkeypatch, page)
    assert not app.exception
    charts = app.get("plotly_chart")
    assert charts, f"{page}: no chart drawn"
    for chart in charts:
        config = json.loads(chart.proto.config)
        assert config["displaylogo"] is False
        assert {"toImage", "lasso2d", "select2d"} <= set(config["modeBarButtonsToRemove"])
        assert chart.proto.theme == ""  # the figure's own template, not Streamlit's theme
        layout = json.loads(chart.proto.spec)["layout"]
        assert layout["template"]["layout"]["colorway"] == list(PALETTE)
        assert layout["template"]["layout"]["font"]["family"] == FONT


def test_a_figure_for_download_has_the_same_theme_as_on_the_page() -> None:
    """The PNG/SVG downloads and the CLI's figures are the same ``go.Figure``: the theme is
    in the figure (``figures._layout``), not added by the page."""
    import pandas as pd

    board = pd.DataFrame({"model": ["a", "b"], "split": "test2", "setting": "qa", "mode": "st",
                          "evaluator": "gpt-4", "mean": [5.0, 6.0], "std": [None, None],
                          "n": [3, 3], "n_seeds": [1, 1]})
    fig = figures.leaderboard_bars(board, "gpt-4", "test2")
    assert fig.layout.template.layout.colorway == PALETTE
    assert fig.layout.template.layout.font.family == FONT
    assert figures.TEMPLATE == THEME


def test_every_chart_is_drawn_through_the_one_helper() -> None:
    """``st.plotly_chart`` is called in ``ui/figures.py`` only (its ``plot``), so that no page
    draws a chart without the theme and the toolbar (``ui/preload.py`` draws an empty one to
    load the chart code ahead)."""
    offenders = []
    for path in [*ROOT.glob("pages/*.py"), *ROOT.glob("ui/**/*.py"), ROOT / "app.py"]:
        if path.name in ("figures.py", "preload.py") and path.parent.name == "ui":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "plotly_chart":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, offenders
    assert CHART_CONFIG["displaylogo"] is False


def test_the_top_bar_names_the_product_and_the_page() -> None:
    svg = breadcrumb("Judge audit")
    assert svg.startswith("<svg ") and PRODUCT in svg and "Judge audit" in svg
    assert tab_title("Judge audit") == "Judge audit · ELITR-Bench"
    assert "&lt;b&gt;" in breadcrumb("<b>")  # a title is text in the SVG, never markup


def test_log_out_is_in_the_user_menu_not_a_sidebar(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a password set and the researcher logged in, Home (a page without filters) has
    no sidebar; Log out is in the popover of the user menu. (AppTest runs ``app.py`` on its
    first run only: ``switch_page`` runs the page's script alone.)"""
    from ui.state import ROLE_KEY

    monkeypatch.setenv("ELITR_ADMIN_PASSWORD", "pw")
    app: AppTest = analysis_app(bundled_sqlite, monkeypatch)
    app.session_state[ROLE_KEY] = "researcher"  # logged in
    app.run()
    assert not app.exception
    assert not list(app.sidebar.children.values()), "no sidebar: nothing is drawn in it"
    (menu,) = [block for block in _blocks(app.main) if block.type == "popover"
               and block.proto.popover.label == "Researcher"]
    assert [b.label for b in menu.get("button")] == ["Log out"]


def _blocks(node: object) -> list[object]:
    """Every block under ``node`` (AppTest's ``get`` finds elements, not blocks)."""
    children = list(getattr(node, "children", {}).values())
    return [child for child in children if type(child).__name__ == "Block"] + \
        [block for child in children for block in _blocks(child)]
