"""ui.messages: a user error raised in a guarded block is a message, the rest of the block is
skipped, and the block's outcome says so; anything else stays a traceback."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    import streamlit as st

    from elitr_core.errors import DegenerateDataError, UserError
    from ui.messages import guarded, shown

    fail = st.session_state.get("fail")
    with guarded() as call:
        if fail == "user":
            raise UserError("no such study: add it first")
        st.text("guarded block ran to its end")
    st.text(f"failed: {call.failed}")
    with shown():
        if fail == "degenerate":
            raise DegenerateDataError("one model only: pick two")
        st.text("shown block ran to its end")
    with shown(stop=True):
        if fail == "stop":
            raise UserError("nothing to show: widen the filters")
    st.text("after the stopping block")
    with guarded():
        if fail == "bug":
            raise ValueError("a bug")


def _run(fail: str | None) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=60)
    at.session_state["fail"] = fail
    return at.run()


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_a_block_without_an_error_runs_to_its_end() -> None:
    at = _run(None)
    assert not at.error and not at.warning and not at.exception
    assert _texts(at) == ["guarded block ran to its end", "failed: False",
                          "shown block ran to its end", "after the stopping block"]


def test_a_user_error_is_a_message_and_skips_the_rest_of_its_block() -> None:
    at = _run("user")
    assert [e.value for e in at.error] == ["no such study: add it first"]
    assert _texts(at) == ["failed: True", "shown block ran to its end",
                          "after the stopping block"]


def test_shown_warns_of_data_a_statistic_cannot_use() -> None:
    at = _run("degenerate")
    assert [w.value for w in at.warning] == ["one model only: pick two"] and not at.error
    assert "shown block ran to its end" not in _texts(at)
    assert "after the stopping block" in _texts(at)


def test_stop_ends_the_page_run_after_the_message() -> None:
    at = _run("stop")
    assert [e.value for e in at.error] == ["nothing to show: widen the filters"]
    assert "after the stopping block" not in _texts(at) and not at.exception


def test_any_other_error_stays_a_traceback() -> None:
    at = _run("bug")
    assert at.exception and not at.error  # the server logs it (details are redacted)
