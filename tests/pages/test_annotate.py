"""AppTest: the annotation flow (score, revise, resume, end screen) and every refusal."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from db.transaction import writing
from elitr_core.annotation.admin import add_annotator, close_study
from elitr_core.annotation.quality import exclude_annotator
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import MODELS, build

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PID, STUDY, SESSION = "a" * 24, "b" * 24, "c" * 24


@pytest.fixture
def study(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A 3-item study (one question, three models) for 2 annotators, and a token."""
    build(sqlite_url, questions=1, meetings=("meeting_en_test2_901",))
    monkeypatch.setenv("DATABASE_URL", sqlite_url)
    with writing(open_database(sqlite_url)) as session:
        create_study(session, StudySpec(name="s", per_item=2, prolific_code="DONE42",
                                        max_concurrent=1))
        token = add_annotator(session, "ann", "silver")
    return sqlite_url, token


def _first_page(**params: str) -> AppTest:
    app = AppTest.from_file(APP, default_timeout=60)
    for key, value in params.items():
        app.query_params[key] = value
    return app.run()


def _app(**params: str) -> AppTest:
    """The page after entering; a first entry's walkthrough closed (the item is drawn then)."""
    app = _first_page(**params)
    tour = [b for b in app.button if b.key == "annotate-tour-done"]
    return tour[0].click().run() if tour else app


def item_button(app: AppTest, key: str):  # type: ignore[no-untyped-def]
    """The button ``key`` of the item on screen (its key ends in ``-at-<position>``)."""
    [button] = [b for b in app.button if (b.key or "").startswith(f"{key}-at-")]
    return button


def _pick(app: AppTest, value: int) -> AppTest:
    return item_button(app, f"annotate-pick-{value}").click().run()


def _picked(app: AppTest) -> int | None:
    """The score the page shows as picked (the one primary button of the scale)."""
    chosen = [v for v in range(1, 11) if item_button(app, f"annotate-pick-{v}").proto.type
              == "primary"]
    assert len(chosen) <= 1
    return chosen[0] if chosen else None


def _score(app: AppTest, value: int) -> AppTest:
    return item_button(_pick(app, value), "annotate-submit").click().run()


def _page_text(app: AppTest) -> str:
    parts = [str(getattr(e, "value", "")) for e in (
        *app.markdown, *app.caption, *app.title, *app.success, *app.error, *app.info, *app.text)]
    return "\n".join(parts)


def test_score_revise_resume_and_end_screen(study: tuple[str, str]) -> None:
    _url, token = study
    app = _app(token=token)
    assert not app.exception and not app.error
    assert "Item 1 of 3" in _page_text(app) and "Perfect match" in _page_text(app)
    assert "9: The response to evaluate includes" in _page_text(app)  # rubric at hand
    assert "[Does the response" not in _page_text(app)  # as clean text, no prompt brackets
    app = _score(app, 7)
    assert "Item 2 of 3" in _page_text(app)
    item_button(app, "annotate-back").click().run()  # revise item 1
    assert "Item 1 of 3" in _page_text(app) and _picked(app) == 7
    app = _score(app, 3)
    assert "Item 2 of 3" in _page_text(app)
    resumed = _app(token=token)  # a reload, or days later: resume at item 2
    assert "Item 2 of 3" in _page_text(resumed)
    resumed = _score(_score(resumed, 10), 1)
    text = _page_text(resumed)
    # a token annotator did not come from Prolific: no completion code, no "Back to Prolific"
    assert "All 3 items are scored" in text and "DONE42" not in text
    assert not resumed.get("link_button")
    [b for b in resumed.button if b.label == "Review my answers"][0].click().run()
    assert _picked(resumed) == 3


def test_first_entry_shows_the_walkthrough_and_the_item_once_it_closes(
        study: tuple[str, str]) -> None:
    _url, token = study
    app = _first_page(token=token)
    assert "Scoring with the keyboard" in str(app.main) or \
        "Start scoring" in [b.label for b in app.button]
    assert "Item 1 of" not in _page_text(app)  # nothing read or drawn behind the walkthrough
    app = [b for b in app.button if b.key == "annotate-tour-done"][0].click().run()
    assert not app.exception and "Item 1 of 3" in _page_text(app)
    assert not [b for b in app.button if b.key == "annotate-tour-done"]
    app = _first_page(token=token)  # the link again: no walkthrough, the item at once
    assert "Item 1 of 3" in _page_text(app)


def test_no_model_name_or_other_score_reaches_the_annotator(study: tuple[str, str]) -> None:
    _url, token = study
    app = _app(token=token)
    for _ in range(3):
        page = str(app._tree) + _page_text(app)
        assert not any(model in page for model in MODELS)
        assert "gold-human" not in page
        app = _score(app, 5)


def test_prolific_entry_and_cap(study: tuple[str, str]) -> None:
    app = _app(study="s", PROLIFIC_PID=PID, STUDY_ID=STUDY, SESSION_ID=SESSION)
    assert not app.error and "Item 1 of 3" in _page_text(app)
    other = _app(study="s", PROLIFIC_PID="d" * 24, STUDY_ID=STUDY, SESSION_ID="e" * 24)
    # cap of 1 concurrent participant: a neutral end state with the way back to Prolific
    assert not other.error and "full right now" in other.info[0].value
    [back] = other.get("link_button")
    assert back.proto.url == "https://app.prolific.com/" and "Item" not in _page_text(other)
    done = _score(_score(_score(app, 5), 6), 7)  # a Prolific participant gets the way back
    assert "DONE42" in _page_text(done)
    assert done.get("link_button")[0].proto.url.endswith("complete?cc=DONE42")


def test_finished_participant_of_a_closed_study_gets_the_code_back(
        study: tuple[str, str]) -> None:
    url, _token = study
    link = {"study": "s", "PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": SESSION}
    _score(_score(_score(_app(**link), 5), 6), 7)
    with writing(open_database(url)) as session:
        close_study(session, "s")
    back = _app(**link)  # finished, then the study closed: the code is still theirs
    assert not back.error and "finished your task" in back.info[0].value
    assert back.get("link_button")[0].proto.url.endswith("complete?cc=DONE42")
    late = _app(study="s", PROLIFIC_PID="d" * 24, STUDY_ID=STUDY, SESSION_ID="e" * 24)
    assert not late.error and "closed" in late.info[0].value  # never started: no code
    assert "DONE42" not in _page_text(late) + str(late._tree)
    assert late.get("link_button")[0].proto.url == "https://app.prolific.com/"


@pytest.mark.parametrize("params, message", [
    ({"token": "x" * 43}, "not valid"),
    ({"token": "short"}, "not valid"),
    ({"study": "s", "PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": "<b>"}, "not valid"),
    ({"PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": SESSION}, "does not name a study"),
    ({"study": "nope", "PROLIFIC_PID": PID, "STUDY_ID": STUDY, "SESSION_ID": SESSION},
     "does not exist"),
])
def test_bad_links_are_refused(study: tuple[str, str], params: dict[str, str],
                               message: str) -> None:
    app = _app(**params)
    assert not app.exception
    assert message in app.error[0].value
    assert not app.button and "Reference answer" not in _page_text(app)


def test_reused_prolific_link_with_another_session_is_refused(study: tuple[str, str]) -> None:
    _app(study="s", PROLIFIC_PID=PID, STUDY_ID=STUDY, SESSION_ID=SESSION)
    app = _app(study="s", PROLIFIC_PID=PID, STUDY_ID=STUDY, SESSION_ID="f" * 24)
    assert "session does not match" in app.error[0].value


def test_closed_study_and_excluded_annotator_are_refused(study: tuple[str, str]) -> None:
    url, token = study
    app = _app(token=token)
    _score(app, 4)
    with writing(open_database(url)) as session:
        exclude_annotator(session, "s", "ann")
    # end states are neutral messages, not errors; a token annotator gets no Prolific link
    again = _app(token=token)
    assert not again.error and "no longer valid" in again.info[0].value
    assert not again.get("link_button")
    item_button(_pick(app, 5), "annotate-submit").click().run()  # the open tab cannot write either
    assert not app.error and "no longer valid" in app.info[0].value
    assert "Reference answer" not in _page_text(app) and not app.button  # no item behind it
    with writing(open_database(url)) as session:
        close_study(session, "s")
    closed = _app(token=token)
    assert not closed.error and "closed" in closed.info[0].value


def test_annotator_cannot_open_researcher_pages(study: tuple[str, str]) -> None:
    _url, token = study
    app = _first_page(token=token)
    # the navigation registers the annotation page only: other pages do not exist for them
    with pytest.raises(ValueError, match=r"Known pages: \['[^']*annotate.py'\]"):
        app.switch_page("pages/studies.py")
    # and a researcher page run in an annotator's session refuses on its own (server side)
    page = AppTest.from_file(str(Path(APP).parent / "pages" / "studies.py"), default_timeout=60)
    page.session_state["auth.role"] = "annotator"
    page.run()
    assert "You do not have access to this page." in page.error[0].value
    assert not page.dataframe and not page.text_input


HOSTILE = ("Martin will send it. ![pixel](http://127.0.0.1:9/track.png) "
           "<img src='http://127.0.0.1:9/raw.png'> <script>alert(1)</script> $5 and $6")


def test_responses_are_plain_text_never_markdown_or_html(study: tuple[str, str]) -> None:
    from sqlalchemy import text

    url, token = study
    with writing(open_database(url)) as session:
        session.execute(text("UPDATE response SET text = :t"), {"t": HOSTILE})
    app = _app(token=token)
    assert HOSTILE in [t.value for t in app.text]  # shown verbatim, as text
    for element in (*app.markdown, *app.caption):  # and nowhere through Markdown
        assert "track.png" not in element.value and "raw.png" not in element.value


def test_picked_score_is_marked_and_explained(study: tuple[str, str]) -> None:
    _url, token = study
    app = _app(token=token)
    assert _picked(app) is None and "No score picked yet." in _page_text(app)
    assert item_button(app, "annotate-pick-10").label == "**10** · key 0"  # hotkey on the choice
    app = _pick(app, 9)
    assert _picked(app) == 9
    assert "Your score: 9" in _page_text(app) and "more verbose" in _page_text(app)
    assert "Worked examples" in _page_text(app) and "Score: 9." in _page_text(app)
