"""Every page-level choice stays across navigation, as the sidebar filters do."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.analysis_support import analysis_app, open_tab

#: (page, widget kind, key, a value other than the default)
CHOICES: list[tuple[str, str, str, Any]] = [
    ("leaderboard", "selectbox", "leaderboard.evaluator", "prometheus"),
    ("leaderboard", "selectbox", "leaderboard.rank_by", "QA-mt mean"),
    ("calibration", "selectbox", "calibration.reference", "gpt-4"),
    ("drilldown", "selectbox", "drilldown.model", "LongAlpaca-7B"),
    ("judge_audit", "selectbox", "audit.judge", "prometheus"),
    ("judge_audit", "number_input", "audit.half_width", 0.25),  # in the Budget planner tab
    ("judge_audit", "number_input", "audit.budget", 50),  # in the Sampling designs tab
    ("agreement", "radio", "agreement.method", "spearman"),
    ("meeting", "select_slider", "meeting.question", 3),
]


#: the tab that draws a widget which is not above the page's tabs (``ui.state.open_tab``)
TABS = {"audit.half_width": ("audit.section", "Budget planner"),
        "audit.budget": ("audit.section", "Sampling designs")}


def _widget(at: AppTest, kind: str, key: str) -> Any:
    """The widget, or a failure that says what the page drew instead (its exception, errors,
    warnings and notes): a page stopped early draws none of its controls."""
    try:
        return getattr(at, kind)(key=key)
    except KeyError:
        drawn = [f"{e.type}: {getattr(e, 'value', '')}" for e in
                 [*at.exception, *at.error, *at.warning, *at.info, *at.title]]
        pytest.fail(f"no {kind} {key!r} on the page; it drew {drawn}")


@pytest.mark.parametrize(("page", "kind", "key", "value"), CHOICES,
                         ids=[key for _, _, key, _ in CHOICES])
def test_a_choice_survives_a_visit_to_another_page(bundled_sqlite: str,
                                                   monkeypatch: pytest.MonkeyPatch, page: str,
                                                   kind: str, key: str, value: Any) -> None:
    at = analysis_app(bundled_sqlite, monkeypatch)
    at.run()
    assert not at.exception, at.exception
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    if key in TABS:
        open_tab(at, *TABS[key])
    assert _widget(at, kind, key).value != value  # the default is another value
    _widget(at, kind, key).set_value(value).run()
    assert not at.exception and _widget(at, kind, key).value == value
    at.switch_page("pages/home.py").run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    assert _widget(at, kind, key).value == value


def test_the_open_tab_survives_a_visit_to_another_page(bundled_sqlite: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    at = analysis_app(bundled_sqlite, monkeypatch)
    at.run()
    at.switch_page("pages/leaderboard.py").run()
    open_tab(at, "leaderboard.section", "Long table")
    assert any("Long table (export contract)" in c.value for c in at.caption)
    at.switch_page("pages/home.py").run()
    at.switch_page("pages/leaderboard.py").run()
    assert not at.exception
    assert any("Long table (export contract)" in c.value for c in at.caption)
