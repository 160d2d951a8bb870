"""AppTest: the researcher's Studies page and the login when a password is configured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import select
from streamlit.testing.v1 import AppTest

from db.models import Study
from db.transaction import writing
from elitr_core.annotation.admin import add_annotator, study_status
from elitr_core.annotation.auth import PASSWORD_ENV, PASSWORD_HASH_ENV, hash_password
from elitr_core.annotation.studies import StudySpec, create_study, enter_with_token, submit
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import build

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def url(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    build(sqlite_url, questions=2)
    monkeypatch.setenv("DATABASE_URL", sqlite_url)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_HASH_ENV, raising=False)
    return sqlite_url


def _studies_page() -> AppTest:
    app = AppTest.from_file(APP, default_timeout=60).run()
    return app.switch_page("pages/studies.py").run()


def test_create_study_and_add_annotator_from_the_page(url: str) -> None:
    app = _studies_page()
    assert not app.exception
    assert "No study yet" in app.info[0].value
    app.text_input[0].set_value("pilot")
    app.number_input[0].set_value(2)
    app.selectbox[0].set_value("test2")
    _button(app, "Create study").click().run()
    assert "Study pilot created: 12 items in 2 unit(s)" in app.success[0].value
    name_box = [t for t in app.text_input if t.label == "Annotator name"][0]
    name_box.set_value("ann")
    _button(app, "Add annotator").click().run()
    assert "/?token=" in app.code[-1].value and app.code[-1].value.endswith("&study=pilot")
    # the confirmation names the study the link opens and its pool
    assert "to study pilot (silver pool)" in app.success[-1].value


def _button(app: AppTest, label: str):  # type: ignore[no-untyped-def]
    return [b for b in app.button if b.label == label][0]


def test_links_are_full_urls_to_paste_with_a_copy_button(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ELITR_PUBLIC_URL", "https://elitr.example.org/")
    app = _studies_page()
    app.text_input[0].set_value("pilot")
    _button(app, "Create study").click().run()
    # st.code: shown verbatim, with Streamlit's copy-to-clipboard button
    assert app.code[0].value.startswith(
        "https://elitr.example.org/?study=pilot&PROLIFIC_PID={{%PROLIFIC_PID%}}")
    [t for t in app.text_input if t.label == "Annotator name"][0].set_value("ann")
    _button(app, "Add annotator").click().run()
    assert re.fullmatch(r"https://elitr\.example\.org/\?token=[\w-]{40,}&study=pilot",
                        app.code[-1].value)
    assert not app.warning  # a public address is set: nothing to warn about
    monkeypatch.delenv("ELITR_PUBLIC_URL")  # no setting: this server's own address
    [t for t in app.text_input if t.label == "Annotator name"][0].set_value("ann2")
    _button(app, "Add annotator").click().run()
    assert re.fullmatch(r"http://localhost:\d+/\?token=[\w-]{40,}&study=pilot", app.code[-1].value)
    # ... which only this computer opens: said above the link, with what to do
    said = [w.value.replace("\\", "") for w in app.warning]  # Markdown escapes
    assert any("ELITR_PUBLIC_URL is not set" in w and "cannot reach" in w for w in said)
    [t for t in app.text_input if t.label == "Name"][0].set_value("pilot2")
    _button(app, "Create study").click().run()
    assert not app.error, [e.value for e in app.error]
    assert app.code[0].value.startswith("http://localhost:")  # the Prolific URL: warned too
    assert any("participants cannot reach it" in w.value for w in app.warning)


def test_a_gold_study_gets_gold_defaults(url: str) -> None:
    app = _studies_page()
    app.radio(key="studies.create.pool").set_value("gold").run()
    per_item = [n for n in app.number_input if n.label == "Annotators per item"][0]
    assert 2 <= per_item.value <= 3
    labels = {w.label for w in (*app.text_input, *app.number_input)}
    assert "Prolific completion code" not in labels
    assert "Max concurrent participants (0 = no cap)" not in labels
    app.text_input[0].set_value("experts")
    _button(app, "Create study").click().run()
    assert "Study experts created" in app.success[0].value and not app.code
    with writing(open_database(url)) as session:
        status = study_status(session, "experts")
    assert status.summary["per_item"] == per_item.value and not status.summary["prolific_code"]


def test_closing_asks_first_and_units_at_work_are_not_short(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=1, meetings=("meeting_en_test2_901",)))
        token = add_annotator(session, "busy", "silver")
    enter_with_token(engine, token)  # claims the unit, answers nothing yet
    app = _studies_page()
    short = [d.value for d in app.dataframe if "annotators_needed" in d.value.columns][0]
    assert short.empty  # not "annotators_needed 0, items_short 6": the unit is at work
    _button(app, "Close the study").click().run()
    assert "Annotators can no longer answer" in app.warning[0].value
    with writing(engine) as session:
        assert study_status(session, "s").summary["status"] == "open"
    _button(app, "Cancel").click().run()
    assert not app.warning
    _button(app, "Close the study").click().run()
    _button(app, "Yes, close the study").click().run()
    assert not app.exception and "is closed" in app.success[0].value
    with writing(engine) as session:
        assert study_status(session, "s").summary["status"] == "closed"


def test_the_sidebar_counts_a_study_s_items_not_its_rows(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=2, meetings=("meeting_en_test2_901",),
                                        attention_rate=0.0))
        tokens = [add_annotator(session, n, "silver") for n in ("a", "b")]
    for token in tokens:  # 6 items, each scored by 2 annotators: 12 rows + 6 means
        entry = enter_with_token(engine, token)
        for position in range(6):
            submit(engine, entry, position, 5, seconds=10.0)
    app = AppTest.from_file(APP, default_timeout=60).run()
    app = app.switch_page("pages/leaderboard.py").run()
    captions = " ".join(c.value for c in app.sidebar.caption)
    assert "silver-human:s (6)" in captions, captions


def test_status_quality_and_exclusion(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=2, meetings=("meeting_en_test2_901",),
                                        attention_rate=0.0))
        tokens = [add_annotator(session, n, "silver") for n in ("good", "fast")]
    for token, seconds in zip(tokens, (20.0, 0.5), strict=True):
        entry = enter_with_token(engine, token)
        for position in range(6):
            submit(engine, entry, position, 1 + position, seconds=seconds)
    app = _studies_page()
    assert not app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Annotators"] == "2" and metrics["Scores"] == "12"
    report = app.dataframe[2].value
    assert report.set_index("annotator").loc["fast", "flags"].startswith("6 answer(s) under 5")
    assert app.selectbox(key="studies.exclude").options == ["good", "fast"]  # flagged first
    # nobody is chosen and no reason typed for the researcher: Exclude waits for both
    assert app.selectbox(key="studies.exclude").value is None
    assert app.text_input(key="studies.exclude-reason").value == ""
    assert app.button(key="studies.exclude-ask").disabled
    app.selectbox(key="studies.exclude").set_value("fast").run()
    assert app.button(key="studies.exclude-ask").disabled  # still no reason
    app.text_input(key="studies.exclude-reason").set_value("too fast").run()
    app.button(key="studies.exclude-ask").click().run()
    asked = next(w.value for w in app.warning if "Exclude fast" in w.value)
    assert "Exclude fast from study s?" in asked and "too fast" in asked  # asks, as Close does
    app.button(key="studies.exclude-cancel").click().run()
    assert not any("Exclude fast" in w.value for w in app.warning)
    assert _progress_status(engine) == {"good": "done", "fast": "done"}
    app.button(key="studies.exclude-ask").click().run()
    app.button(key="studies.exclude-yes").click().run()
    assert "fast excluded" in app.success[0].value
    assert _progress_status(engine)["fast"] == "excluded"
    assert app.dataframe[1].value["annotators_needed"].tolist() == [1]
    # the choice is cleared: the next exclusion starts from nobody again
    assert app.selectbox(key="studies.exclude").value is None
    assert app.text_input(key="studies.exclude-reason").value == ""


def _progress_status(engine) -> dict[str, str]:  # type: ignore[no-untyped-def]
    with writing(engine) as session:
        progress = study_status(session, "s").progress
    return dict(zip(progress["annotator"], progress["status"], strict=True))


def test_login_required_when_a_password_is_configured(url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PASSWORD_HASH_ENV, hash_password("letmein", iterations=1000))
    app = AppTest.from_file(APP, default_timeout=60).run()
    assert not app.exception and not app.metric  # the home page is not shown
    with pytest.raises(ValueError, match="Known pages"):
        app.switch_page("pages/home.py")
    app.text_input[0].set_value("wrong")
    app.button[0].click().run()
    assert "Wrong password." in app.error[0].value
    app.text_input[0].set_value("letmein")
    app.button[0].click().run()
    assert not app.error and app.session_state["auth.role"] == "researcher"
    app.switch_page("pages/home.py").run()  # the researcher's pages are registered now
    assert {m.label for m in app.metric} >= {"Meetings", "Responses"}


def test_wrong_passwords_are_limited_across_reloads(url: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_core.annotation.sessions import FREE_FAILURES

    monkeypatch.setenv(PASSWORD_HASH_ENV, hash_password("letmein", iterations=1000))
    for _ in range(FREE_FAILURES):
        app = AppTest.from_file(APP, default_timeout=60).run()  # a fresh session: a reload
        app.text_input[0].set_value("wrong")
        app.button[0].click().run()
        assert "Wrong password." in app.error[0].value
    app = AppTest.from_file(APP, default_timeout=60).run()
    app.text_input[0].set_value("letmein")  # even the right one waits now
    app.button[0].click().run()
    assert re.match(r"Too many wrong passwords: wait [1-3]?\d s", app.error[0].value)
    assert "auth.role" not in app.session_state



def test_an_empty_password_press_is_no_failed_login(url: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_core.annotation.sessions import FREE_FAILURES

    monkeypatch.setenv(PASSWORD_HASH_ENV, hash_password("letmein", iterations=1000))
    for _ in range(FREE_FAILURES + 2):  # more empty presses than the free failures
        app = AppTest.from_file(APP, default_timeout=60).run()
        app.button[0].click().run()
        assert not app.error and "Type the researcher password" in app.warning[0].value
    app = AppTest.from_file(APP, default_timeout=60).run()
    app.text_input[0].set_value("letmein")  # not locked out: it opens
    app.button[0].click().run()
    assert not app.error and app.session_state["auth.role"] == "researcher"


def test_budget_planner_and_an_active_study_on_the_bundled_data(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    monkeypatch.delenv(PASSWORD_HASH_ENV, raising=False)
    app = _studies_page()
    assert not app.exception
    plan = app.dataframe[0].value.set_index("model")  # the planner (no study yet)
    # test2 QA-st, gpt-4 vs gold-human, +-0.5 in 80% of studies: GPT-4 needs 83 human scores
    # alone, 48 with PPI++ (the normal-quantile plan of before said 70 and 32)
    assert (plan.loc["GPT-4", "n_human_only"], plan.loc["GPT-4", "n_ppi"]) == (83, 48)
    assert plan.loc["GPT-4", "assurance_ppi"] >= 0.8
    app.number_input(key="studies.plan.half_width").set_value(1.0).run()
    assert app.dataframe[0].value.set_index("model").loc["GPT-4", "n_human_only"] == 27
    app.text_input[0].set_value("active-pilot")
    [n for n in app.number_input if n.label.startswith("Sample")][0].set_value(40)
    [r for r in app.radio if r.label == "Selection"][0].set_value("active")
    app.multiselect[0].set_value(["GPT-4", "Vicuna-13B-v1.5", "LongAlpaca-7B"])
    app.button[0].click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "Study active-pilot created" in app.success[0].value
    from sqlalchemy import select

    from db.models import Study, StudyItem

    with writing(open_database(bundled_sqlite)) as session:
        study_id = session.execute(select(Study.id).where(Study.name == "active-pilot")
                                   ).scalar_one()
        probabilities = session.execute(select(StudyItem.probability).where(
            StudyItem.study_id == study_id)).scalars().all()
    assert probabilities and all(0 < p <= 1 for p in probabilities)
    assert len(set(probabilities)) > 1  # unequal: the judge's uncertainty drives them


def test_status_explains_attention_checks_in_the_counts(url: str) -> None:
    with writing(open_database(url)) as session:
        create_study(session, StudySpec(name="checked", attention_rate=0.3))
        token = add_annotator(session, "ann", "silver")
    enter_with_token(open_database(url), token)
    app = _studies_page()
    assert not app.exception
    note = " ".join(c.value for c in app.caption)
    assert "attention checks" in note and "about 30%" in note
    progress = app.dataframe[0].value
    assert progress.loc[0, "checks"] > 0
    # the queue = the unit's items (part of the study's count) + its checks
    unit_items = progress.loc[0, "items"] - progress.loc[0, "checks"]
    assert 0 < unit_items <= int(app.metric[1].value) < progress.loc[0, "items"] * 2


def test_worked_examples_are_saved_from_the_status_tab(url: str) -> None:
    from elitr_core.annotation.guidelines import DEFAULT_EXAMPLES, examples_of
    from elitr_core.data.database import reading

    with writing(open_database(url)) as session:
        create_study(session, StudySpec(name="guided"))
    app = _studies_page()
    assert "examples come from the paper's instructions" in " ".join(
        c.value for c in app.caption)
    app.button(key="studies.save-examples").click().run()
    assert not app.exception
    assert f"{len(DEFAULT_EXAMPLES)} worked example(s) saved." in app.success[0].value
    with reading(open_database(url)) as session:
        assert examples_of(session, "guided") == list(DEFAULT_EXAMPLES)


def test_analysis_pages_show_a_study_s_new_aggregate_at_once(url: str) -> None:
    """An open study's aggregate holds every answer as it arrives, here those of an annotator
    who has not finished their task (it used to wait for the task's end: the Leaderboard showed
    2s), and closing stores the same; excluding an annotator stores it without them. The
    Leaderboard, open in another session, shows the exclusion on its next run, not once its
    cached reads are five minutes old."""
    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=2, meetings=("meeting_en_test2_901",),
                                        attention_rate=0.0))
        tokens = [add_annotator(session, name, "silver") for name in ("first", "late")]
    for token, answers, value in zip(tokens, (6, 3), (2, 10), strict=True):
        entry = enter_with_token(engine, token)  # "first" finishes, "late" is half-way
        for position in range(answers):
            submit(engine, entry, position, value, seconds=10.0)
    board = AppTest.from_file(APP, default_timeout=60).run()
    board.switch_page("pages/leaderboard.py").run()
    board.multiselect(key="filters.evaluators.widget").set_value(["silver-human:s"]).run()

    def means() -> set[float]:
        assert not board.exception
        return set(board.dataframe[0].value["QA-st test2"])

    assert means() == {4.0}  # the 3 responses "late" answered: (2 + 10) / 2 per model
    studies = _studies_page()
    _button(studies, "Close the study").click().run()
    _button(studies, "Yes, close the study").click().run()
    assert "is closed" in studies.success[0].value
    board.run()
    assert means() == {4.0}  # closing stores the same means
    studies.selectbox(key="studies.exclude").set_value("late").run()
    studies.text_input(key="studies.exclude-reason").set_value("half-way").run()
    studies.button(key="studies.exclude-ask").click().run()
    studies.button(key="studies.exclude-yes").click().run()
    assert "late excluded" in studies.success[0].value
    board.run()
    assert means() == {2.0}


def test_quality_control_shows_each_annotator_s_reliability(
        url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Three annotators on the same six items: the quality control shows the silver
    aggregate's reliability table (one row per annotator; with six items the ranking itself
    means little, it is checked in the statistics tests) and its download is the CLI's."""
    from tests.pages.analysis_support import analysis_app, cli_export, download_bytes

    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="s", per_item=3, meetings=("meeting_en_test2_901",)))
        tokens = [add_annotator(session, n, "silver") for n in ("close", "near", "random")]
    answers = {"close": [2, 4, 6, 8, 9, 3], "near": [3, 4, 7, 8, 9, 2],
               "random": [9, 1, 2, 10, 3, 8]}
    for token, name in zip(tokens, answers, strict=True):
        entry = enter_with_token(engine, token)
        for position, value in enumerate(answers[name]):
            submit(engine, entry, position, value, seconds=20.0)
    with writing(engine) as session:
        slug = study_status(session, "s").summary["evaluator"]
    app = analysis_app(url, monkeypatch)
    app.run()
    app = app.switch_page("pages/studies.py").run()
    assert not app.exception
    table = next(t.value for t in app.dataframe if "noise_sd" in t.value.columns)
    assert sorted(table["annotator"]) == ["close", "near", "random"]
    assert (table["n"] == 6).all() and (table["method"] == "gaussian").all()
    assert table["weight"].mean() == pytest.approx(1.0) and (table["weight"] > 0).all()
    # six items each: the table says its order is mostly chance (the random scorer can top it)
    caveat = next(w.value for w in app.warning if "Few scores" in w.value)
    assert all(f"{name} (6)" in caveat for name in answers) and "mostly chance" in caveat
    assert download_bytes(app, "download.annotator-reliability-s.csv") == cli_export(
        url, "annotator-reliability", tmp_path / "r.csv", "--evaluator", slug)
    from tests.downloads import assert_downloads_as_shown

    shown = assert_downloads_as_shown(app, "download.annotator-reliability-s")
    assert len(shown.rows) == 3 and "Noise SD" in shown.headings


def test_monitor_tab_shows_the_exported_sequences_and_the_stop(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A study with a stopping rule, scored to its target: the Monitor tab's tables are the
    CLI's bytes, its figure is drawn, and both tabs say why nobody new is admitted."""
    from tests.pages.analysis_support import cli_export, download_bytes, open_page

    engine = open_database(url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="w", pool="gold", per_item=1, assignment="random",
                                        batch=12, stop_when=("half-width <= 3.7",)))
        token = add_annotator(session, "ann", "gold")
    entry = enter_with_token(engine, token, "w")
    view = None
    for position in range(12):  # 4 scores of 3 and 4 per model: half-width about 3.6
        view = submit(engine, entry, position, 3 + position % 2)
    assert view is not None and view.first_open is None
    app = open_page(url, monkeypatch, "studies")
    assert not app.exception
    assert sum("Admits nobody new" in i.value for i in app.info) == 2  # Status and Monitor
    assert not app.get("plotly_chart")  # the sequences wait for the toggle
    app.toggle(key="studies.monitor.show").set_value(True).run()
    for table, options in (("study-monitor", ("--half-width", "0.5")),
                           ("study-monitor-sequences", ())):
        page = download_bytes(app, f"download.{table}-w.csv")
        assert page == cli_export(url, table, tmp_path / f"{table}.csv", "--human",
                                  "gold-human:w", *options)
        assert len(page.splitlines()) > 2
    assert len(app.get("plotly_chart")) == 1
    from tests.downloads import assert_downloads_as_shown

    assert assert_downloads_as_shown(app, "download.study-monitor-w").rows


@pytest.mark.parametrize("separator", ["; ", ", "])
def test_stop_rules_typed_as_the_cli_takes_them_or_prints_them(url: str, separator: str) -> None:
    """The CLI's --stop-when takes a comma list and prints rules joined by '; ': the form reads
    both. Two rules of one target are each read, then refused together as the CLI refuses
    them (a comma list was read as one rule that could not be read); one rule is stored."""
    app = _studies_page()
    app.text_input[0].set_value("w")
    app.radio(key="studies.create.assignment").set_value("random").run()
    stop = [t for t in app.text_input if t.label == "Stop when (optional)"][0]
    stop.set_value(separator.join(["half-width <= 3.7", "half-width <= 3.9"]))
    _button(app, "Create study").click().run()
    assert [e.value for e in app.error] == [
        "give one stopping rule per target (human, bias, ppi)"]
    [t for t in app.text_input if t.label == "Stop when (optional)"][0].set_value(
        "half-width <= 3.7" + separator).run()
    _button(app, "Create study").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    with writing(open_database(url)) as session:
        study = session.exec(select(Study).where(Study.name == "w")).one()
        rules = study.filters["stop_when"]
    assert rules == [{"target": "human", "half_width": 3.7}]
