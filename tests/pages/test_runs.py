"""AppTest: the Runs page shows runs, progress, judges and unparsable judgments, and starts
background jobs whose results appear."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from db.engine import get_engine
from elitr_core.backends.base import BackendOption, Completion
from elitr_core.backends.fake import FakeBackend
from elitr_core.generation import jobs
from elitr_core.generation.runs import GenerationSpec, generate_run
from elitr_core.judging.runner import JudgeSpec, judge_run
from tests.elitr_core.run_helpers import MEETINGS, StopAfter, rows, set_transcripts

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGE = "pages/runs.py"


def runs_page() -> AppTest:
    """The app shell first (it decides the role), then the Runs page."""
    app = AppTest.from_file(APP, default_timeout=120).run()
    return app.switch_page(PAGE).run()


def spec(model: str) -> GenerationSpec:
    return GenerationSpec(model=model, setting="qa", mode="st", split="test2", meetings=MEETINGS)


@pytest.fixture
def url(bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    set_transcripts(bundled_sqlite)
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)
    monkeypatch.setenv(jobs.LOG_DIR_ENV, str(tmp_path / "logs"))
    return bundled_sqlite


def test_runs_page_shows_progress_failures_and_unparsable(url: str) -> None:
    engine = get_engine(url)
    generate_run(engine, spec("complete-model"), FakeBackend())
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec("killed-model"), FakeBackend(), progress=StopAfter(5))
    judge_run(engine, JudgeSpec(judge_model="j", style="gpt4", evaluator="flaky-judge",
                                models=("complete-model",)), FakeBackend(unparsable_rate=0.3))
    (unparsed,), = rows(url, "SELECT count(*) FROM score WHERE status = 'unparsed'")
    assert 0 < unparsed < 28
    app = runs_page()
    assert not app.exception
    table = app.dataframe[0].value.set_index("model")
    assert table.loc["complete-model", ["done", "questions", "status"]].tolist() == [
        28, 28, "done"]
    assert table.loc["killed-model", ["done", "questions", "status", "failures"]].tolist() == [
        5, 28, "failed", 1]
    assert table.loc["killed-model", "progress"] == pytest.approx(5 / 28)
    assert "interrupted" in table.loc["killed-model", "last_error"]
    assert table.loc["complete-model", "prompt_tokens"] > 0
    judges = app.dataframe[1].value.set_index("evaluator")
    assert judges.loc["flaky-judge", ["scored", "unparsed", "status"]].tolist() == [
        28 - unparsed, unparsed, "done"]
    assert app.metric[0].label == "Unparsable judgments"
    assert app.metric[0].value == str(unparsed)
    listed = app.dataframe[2].value
    assert len(listed) == unparsed and set(listed["reason"]) == {"no \\boxed{} score"}
    assert not app.error


def test_the_runs_download_is_byte_identical_to_the_cli(
        url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Every table exports as the CLI does: the Runs page's runs table too."""
    from tests.pages.analysis_support import cli_export, download_bytes, open_page

    generate_run(get_engine(url), spec("complete-model"), FakeBackend())
    app = open_page(url, monkeypatch, "runs")
    assert not app.exception
    page_bytes = download_bytes(app, "download.runs.csv")
    assert page_bytes == cli_export(url, "runs", tmp_path / "runs.csv")
    assert b"complete-model" in page_bytes and b"GPT-4" in page_bytes


class NulFake(FakeBackend):
    """The fake backend ending every answer with a NUL (stored as U+FFFD by the policy)."""

    def _answer(self, conversation: Any, decoding: Any, cache_key: str | None) -> Completion:
        completion = super()._answer(conversation, decoding, cache_key)
        return replace(completion, text=completion.text + "\x00")


def test_answers_altered_by_the_storage_policy_are_said_in_one_line(url: str) -> None:
    report = generate_run(get_engine(url), spec("nul-model"), NulFake())
    app = runs_page()
    assert not app.exception
    table = app.dataframe[0].value.set_index("model")
    assert table.loc["nul-model", "altered"] == report.altered == 28
    lines = [c.value for c in app.caption if "storage policy" in c.value]
    assert len(lines) == 1 and lines[0].endswith(f"28 answer(s) of run #{report.run_id}.")


def test_a_killed_process_shows_as_stopped(url: str) -> None:
    import json
    import socket

    from sqlalchemy import text

    engine = get_engine(url)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec("gone-model"), FakeBackend(), progress=StopAfter(3))
    done = jobs.start_job(["generate", "--help"])  # a real process that has ended
    deadline = time.monotonic() + 60
    while jobs.process_alive(done.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    jobs._CHILDREN.pop(done.pid).wait()  # reaped: the pid no longer exists
    with engine.begin() as conn:
        (config,) = conn.execute(text("SELECT config FROM run WHERE model='gone-model'")).one()
        config = json.loads(config) if isinstance(config, str) else config
        config["process"] = {"pid": done.pid, "host": socket.gethostname()}
        conn.execute(text("UPDATE run SET status='running', config=:c WHERE model='gone-model'"),
                     {"c": json.dumps(config)})
    app = runs_page()
    table = app.dataframe[0].value.set_index("model")
    assert table.loc["gone-model", "status"] == "stopped"


def test_starting_a_background_fake_run_logs_and_the_run_appears(url: str,
                                                                  tmp_path: Path) -> None:
    app = runs_page()
    before = app.dataframe[0].value  # the imported runs are listed, marked as such
    assert set(before["origin"]) == {"imported"} and "imported" in app.caption[0].value
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("fake")
    app.text_input(key="runs.model").input("background-model")
    app.text_input(key="runs.meetings").input(",".join(MEETINGS))
    app.button(key="runs.start").click().run()  # the form's Start button (the first is Refresh)
    assert not app.exception and not app.error
    job = jobs.last_job()
    assert job.argv[:3] == ["generate", "--backend", "fake"]
    assert job.log_path.parent == tmp_path / "logs" and job.log_path.exists()
    deadline = time.monotonic() + 120
    while jobs.process_alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert jobs.exit_code(job.pid) == 0, job.log_path.read_text()
    log = job.log_path.read_text()
    assert "28 answer(s) written" in log and "status done" in log
    listed = runs_page().dataframe[0].value.set_index("model")
    assert listed.loc["background-model", "origin"] == "generated here"
    assert len(listed) == len(before) + 1
    app.run()
    table = app.dataframe[0].value.set_index("model")
    assert table.loc["background-model", ["done", "status", "backend"]].tolist() == [
        28, "done", "fake"]
    assert "ended (exit status 0)" in app.markdown[-1].value
    assert "28 answer(s) written" in app.code[-1].value
    assert os.environ["DATABASE_URL"] == url  # the job wrote to the app's database


def test_page_opened_without_the_app_shell_is_refused(url: str) -> None:
    # Streamlit also serves pages/*.py directly by URL: the page checks the role itself.
    page = AppTest.from_file(str(Path(APP).parent / PAGE), default_timeout=60).run()
    assert not page.dataframe and not page.button
    assert "opens through the dashboard" in page.error[0].value


def test_a_background_judge_pass_adds_scores_for_the_analyses(url: str) -> None:
    from db.runs import ScoreFilter
    from db.scores import score_rows
    from db.transaction import reading

    app = runs_page()
    app.radio(key="runs.kind").set_value("judge").run()
    app.selectbox(key="runs.backend").set_value("fake")
    app.text_input(key="runs.judge_model").input("bg-judge")
    app.text_input(key="runs.evaluator").input("bg-judge")
    app.text_input(key="runs.judged").input("GPT-4")
    app.button(key="runs.start").click().run()
    job = jobs.last_job()
    deadline = time.monotonic() + 120
    while jobs.process_alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert jobs.exit_code(job.pid) == 0, job.log_path.read_text()
    assert "judgment(s) asked" in job.log_path.read_text()
    with reading(get_engine(url)) as session:
        scored = score_rows(session, ScoreFilter(evaluators=("bg-judge",)))
    (responses,), = rows(url, "SELECT count(*) FROM response r JOIN run ON run.id = r.run_id "
                              "WHERE run.model = 'GPT-4'")
    assert len(scored) == responses and {r["model"] for r in scored} == {"GPT-4"}
    app.run()
    judges = app.dataframe[1].value.set_index("evaluator")  # after the (imported) runs
    assert judges.loc["bg-judge", ["scored", "status"]].tolist() == [responses, "done"]


def test_a_run_that_cannot_start_is_refused_with_the_reason_and_the_fix(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DATABASE_URL", bundled_sqlite)  # the bundled data has no transcripts
    monkeypatch.setenv(jobs.LOG_DIR_ENV, str(tmp_path / "logs"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    app = runs_page()
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("fake")
    app.button(key="runs.start").click().run()
    (error,) = [e.value for e in app.error]
    assert "model name is empty" in error and '"Model"' in error and "--model" not in error
    app.text_input(key="runs.model").input("some-model")
    app.button(key="runs.start").click().run()
    assert not app.exception
    assert jobs.last_job() is None  # nothing started
    # as the browser shows it: the command a code span (no literal backticks, which escaped
    # Markdown writes as \`), the form's field named instead of the CLI's --meetings
    (error,) = [e.value for e in app.error]
    assert error.startswith("Not started:") and "no transcript" in error
    assert "`python -m elitr_core transcripts DIR`" in error and "\\`" not in error
    assert '"Meetings"' in error and "--" not in error
    # no job log (the folder holds at most the form's last values, jobs.LAST_FORM_FILE)
    assert not list((tmp_path / "logs").glob("*.log"))
    # an openai server that does not answer
    set_transcripts(bundled_sqlite)
    app.selectbox(key="runs.backend").set_value("openai").run()  # its fields show
    app.text_input(key="runs.base_url").input("http://127.0.0.1:9/v1")  # the discard port
    app.text_input(key="runs.meetings").input(",".join(MEETINGS))
    app.button(key="runs.start").click().run()
    (error,) = [e.value for e in app.error]
    # the address is a code span, copied whole: no invisible U+2060 inside it, and no
    # literal backticks or command-line flags in the advice
    assert "cannot reach the server at `http://127.0.0.1:9/v1`" in error
    assert "\u2060" not in error and "--" not in error
    assert "vLLM" in error and jobs.last_job() is None
    # an empty base URL is refused as empty, not as OpenAI's address that cannot be reached
    app.text_input(key="runs.base_url").input("  ")
    app.button(key="runs.start").click().run()
    (error,) = [e.value for e in app.error]
    assert "base URL is empty" in error and "cannot reach" not in error
    assert jobs.last_job() is None


def test_progress_refreshes_itself_with_speed_and_eta_while_a_run_goes(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import streamlit as st
    from sqlalchemy import text

    every: list[object] = []
    fragment = st.fragment

    def recording(*args: object, **kwargs: object) -> object:
        every.append(kwargs.get("run_every"))
        return fragment(*args, **kwargs)

    monkeypatch.setattr(st, "fragment", recording)

    engine = get_engine(url)
    with pytest.raises(KeyboardInterrupt):
        generate_run(engine, spec("live-model"), FakeBackend(), progress=StopAfter(7))
    begun = int(time.time() - 7)  # whole seconds, as stored
    started = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(begun))
    with engine.begin() as conn:  # as if still going: 7 answers in about 7 s
        (config,) = conn.execute(text("SELECT config FROM run WHERE model='live-model'")).one()
        config = json.loads(config) if isinstance(config, str) else config
        config.pop("process", None)
        config["started_at"] = started
        conn.execute(text("UPDATE run SET status='running', config=:c WHERE model='live-model'"),
                     {"c": json.dumps(config)})
    app = runs_page()
    assert not app.exception
    table = app.dataframe[0].value.set_index("model")
    # 7 answers since `begun`: the rate lies between 7 over the time up to now and 7 over 7 s
    # (bounds from the clock, not a tolerance a loaded machine can break)
    slowest = 7 / (time.time() - begun)
    assert slowest - 0.01 <= table.loc["live-model", "answers/s"] <= 1.0 + 0.01
    # the running row draws its progress as a bar like the finished ones: no display strings
    # (a Styler, which the other rows' empty answers/s brought in) override the bar column
    assert not app.dataframe[0].proto.arrow_data.HasField("styler")
    minutes, seconds = table.loc["live-model", "eta"].split(":")
    # 21 answers left at the rate shown (between `slowest` and 1/s)
    assert 21 - 2 <= int(minutes) * 60 + int(seconds) <= 21 / (slowest - 0.01) + 2
    # the page saw the run going and drew its status again as a self-refreshing fragment
    assert app.session_state["runs.going"] and every[0] is None and every[-1] == 2.0


def test_the_job_command_reads_as_typed(url: str) -> None:
    app = runs_page()
    app.radio(key="runs.kind").set_value("judge").run()
    app.selectbox(key="runs.backend").set_value("fake")
    app.button(key="runs.start").click().run()
    (error,) = [e.value for e in app.error]  # no demo judge filled in for you
    assert '"Judge model" is empty' in error and jobs.last_job() is None
    app.text_input(key="runs.judge_model").input("typed-judge")
    app.text_input(key="runs.evaluator").input("typed-judge")
    app.button(key="runs.start").click().run()
    assert not app.exception and not app.error
    commands = [c.value for c in app.code if c.value.startswith("python -m elitr_core judge")]
    assert commands and "$ -m" not in " ".join(c.value for c in app.code)


def test_the_last_job_outlives_the_session_and_the_form_starts_on_no_demo(
        url: str, tmp_path: Path) -> None:
    """A reload or a second tab (a new session) still shows the last job's command, log tail
    and error; the form starts on a real backend with no model, and a judge pass's Split,
    Setting and Mode read "all"."""
    app = runs_page()
    backend = app.selectbox(key="runs.backend")
    assert backend.value != "fake" and backend.options[-1] == "fake"
    assert app.text_input(key="runs.model").value == ""
    app.radio(key="runs.kind").set_value("judge").run()
    chosen = [s for s in app.selectbox if s.label in ("Split", "Setting", "Mode")]
    assert len(chosen) == 3 and all(s.options[0] == "all" for s in chosen)
    # a job that fails (the bundled data has no transcripts), started by another session,
    # and the server restarted since (no exit status known)
    job = jobs.start_job(["generate", "--backend", "fake", "--model", "m", "--split", "test2",
                          "--setting", "qa", "--mode", "st"])
    deadline = time.monotonic() + 120
    while jobs.process_alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    jobs._CHILDREN.pop(job.pid).wait()
    second_tab = runs_page()
    assert not second_tab.exception
    shown = " ".join(m.value for m in second_tab.markdown)
    assert "Last job" in shown and str(job.pid) in shown
    assert any("python -m elitr_core generate --backend fake" in c.value
               for c in second_tab.code)
    assert any("transcript" in e.value for e in second_tab.error)


def test_the_judge_table_shows_answers_per_second_and_eta(url: str) -> None:
    judge_run(get_engine(url), JudgeSpec(judge_model="j", style="gpt4", evaluator="j",
                                         models=("GPT-4",)), FakeBackend())
    judges = runs_page().dataframe[1].value
    assert {"answers/s", "eta"} <= set(judges.columns)


def test_an_interleaved_run_starts_from_the_form_and_a_bad_one_is_refused(url: str) -> None:
    app = runs_page()
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("fake")
    app.text_input(key="runs.model").input("interleaved-model")
    app.text_input(key="runs.meetings").input(",".join(MEETINGS)).run()
    # interleaving is for mode mt, its memory span for an interleaved run: hidden till then
    assert not [w for w in app.selectbox if w.key == "runs.interleave"]
    next(s for s in app.selectbox if s.label == "Mode").set_value("mt").run()
    assert not [w for w in app.number_input if w.key == "runs.span"]
    app.selectbox(key="runs.interleave").set_value(2).run()
    app.number_input(key="runs.span").set_value(5000)
    app.button(key="runs.start").click().run()
    assert not app.exception and not app.error
    job = jobs.last_job()
    assert job.argv[job.argv.index("--interleave") + 1] == "2"
    assert job.argv[job.argv.index("--span") + 1] == "5000"
    deadline = time.monotonic() + 120
    while jobs.process_alive(job.pid) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert jobs.exit_code(job.pid) == 0, job.log_path.read_text()
    log = job.log_path.read_text()
    assert "interleaved-model QA-int2 5k test2" in log and "28 answer(s) written" in log


def test_a_backend_added_by_one_registry_line_brings_its_option_to_the_form(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The form's backend fields are built from what each backend declares: the test backend
    of tests/elitr_core/passes/overlap_backend.py, registered by one line, is listed and its
    one option is a field whose value reaches the job's command, with no change to the page."""
    from elitr_core.backends import registry

    monkeypatch.setitem(registry.BACKENDS, "overlap",
                        "tests.elitr_core.passes.overlap_backend:OverlapBackend")
    started: list[list[str]] = []
    monkeypatch.setattr(jobs, "start_job", started.append)  # its process knows no overlap
    app = runs_page()
    assert app.selectbox(key="runs.backend").options == ["openai", "overlap", "hf", "fake"]
    # only the chosen backend's fields: openai's base URL, not hf's model path or overlap's
    assert app.text_input(key="runs.base_url").label == "Base URL"
    assert not {"runs.max_words", "runs.model_path"} & {w.key for w in (
        *app.number_input, *app.text_input)}
    app.selectbox(key="runs.backend").set_value("hf").run()
    assert app.text_input(key="runs.model_path").label == "Model path"
    assert not [w for w in app.text_input if w.key == "runs.base_url"]
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("overlap").run()
    field = app.number_input(key="runs.max_words")
    assert field.label == "Max words" and field.value is None
    app.text_input(key="runs.model").input("overlap-model")
    app.text_input(key="runs.meetings").input(",".join(MEETINGS))
    app.number_input(key="runs.max_words").set_value(3)
    app.button(key="runs.start").click().run()
    assert not app.exception and not app.error
    (argv,) = started
    assert argv[:3] == ["generate", "--backend", "overlap"]
    assert argv[argv.index("--max-words") + 1] == "3"


class FormBackend(FakeBackend):
    """A backend whose options are of every kind the form draws."""

    name = "formed"
    options = (
        BackendOption("sampling", bool, True, flag="--no-sampling", label="Sampling"),
        BackendOption("policy", choices=("a", "b"), label="Policy"),
        BackendOption("budget", float, 1.5, label="Budget"),
        BackendOption("note", label="Note", placeholder="anything"),
        BackendOption("hidden", int, 3),  # no label: the command line's only
    )


def test_each_kind_of_declared_option_is_a_field_and_reaches_the_command(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from elitr_core.backends import registry

    monkeypatch.setitem(registry.BACKENDS, "formed", f"{__name__}:FormBackend")
    started: list[list[str]] = []
    monkeypatch.setattr(jobs, "start_job", started.append)
    app = runs_page()
    app.selectbox(key="runs.backend").set_value("formed").run()
    assert app.checkbox(key="runs.sampling").label == "Sampling"
    assert app.selectbox(key="runs.policy").options == ["default", "a", "b"]
    assert app.number_input(key="runs.budget").value == 1.5
    assert app.text_input(key="runs.note").placeholder == "anything"
    assert not [w for w in app.number_input if w.key == "runs.hidden"]
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("formed")
    app.text_input(key="runs.model").input("formed-model")
    app.text_input(key="runs.meetings").input(",".join(MEETINGS))
    app.button(key="runs.start").click().run()
    assert started[-1][:3] == ["generate", "--backend", "formed"]
    assert not {"--no-sampling", "--policy", "--budget", "--note"} & set(started[-1])  # defaults
    app.checkbox(key="runs.sampling").uncheck()
    app.selectbox(key="runs.policy").set_value("b")
    app.number_input(key="runs.budget").set_value(2.5)
    app.text_input(key="runs.note").input("n")
    app.button(key="runs.start").click().run()
    assert not app.exception and not app.error
    argv = started[-1]
    assert "--no-sampling" in argv and argv[argv.index("--policy") + 1] == "b"
    assert argv[argv.index("--budget") + 1] == "2.5" and argv[argv.index("--note") + 1] == "n"


def test_the_form_keeps_its_values_across_a_backend_switch_and_a_reload(url: str) -> None:
    """openai's base URL and the model survive choosing another backend and back, and a
    reload (a new session) starts from them; hf's model path never shows for openai."""
    app = runs_page()
    app.radio(key="runs.kind").set_value("generate").run()
    app.selectbox(key="runs.backend").set_value("openai").run()
    app.text_input(key="runs.base_url").input("http://gpu-box:8000/v1").run()
    app.text_input(key="runs.model").input("llama-3.1-8b").run()
    app.selectbox(key="runs.backend").set_value("hf").run()
    assert not [w for w in app.text_input if w.key == "runs.base_url"]
    app.selectbox(key="runs.backend").set_value("openai").run()
    assert app.text_input(key="runs.base_url").value == "http://gpu-box:8000/v1"
    reloaded = runs_page()
    assert not reloaded.exception
    assert reloaded.selectbox(key="runs.backend").value == "openai"
    assert reloaded.text_input(key="runs.base_url").value == "http://gpu-box:8000/v1"
    assert reloaded.text_input(key="runs.model").value == "llama-3.1-8b"
    assert not [w for w in reloaded.text_input if w.key == "runs.model_path"]
