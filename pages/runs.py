"""Runs (researcher): generation runs and LLM judges, live progress, and background jobs."""

import itertools
import shlex
from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from elitr_core.backends import registry
from elitr_core.backends.base import BackendOption
from elitr_core.backends.registry import backend_class
from elitr_core.data.database import Engine, reading
from elitr_core.errors import UserError
from elitr_core.export.runs import runs_table
from elitr_core.generation import jobs, preflight
from elitr_core.generation import status as run_status
from elitr_core.vocab import INTERLEAVE_KS, JUDGE_STYLES, LANGUAGES, PAIRWISE_STYLES
from ui import warm
from ui.auth_ui import RESEARCHER, require_role
from ui.data import clear_caches, get_engine_or_stop
from ui.downloads import download_table
from ui.messages import guarded
from ui.tables import show_table
from ui.text import code_span, md, message, plain

GOING_KEY = "runs.going"
#: the form's backends: those asking a server first, then those loading the model here, the
#: demo backends last (never a default); the registry's order within each
BACKENDS = sorted(registry.BACKENDS, key=lambda name: (backend_class(name).demo,
                                                       backend_class(name).loads_model))

#: seconds between two refreshes of the progress while a job or run is going
REFRESH_S = 2.0


#: the columns a 1366 px screen shows first: what is going and how fast (the rest: Columns)
RUN_KEYS = ("run", "model", "setting", "mode", "split", "status", "progress", "answers/s",
            "eta", "done", "questions", "failures")
JUDGE_KEYS = ("evaluator", "judge_model", "style", "status", "progress", "answers/s", "eta",
              "done", "todo", "scored", "unparsed", "failures")


def with_speed(runs: pd.DataFrame, total: str = "questions") -> pd.DataFrame:
    """Answers per second and the time left (ETA) of the running runs (or judge passes:
    ``total="todo"``), as the CLI shows them: the answers stored since the run started over
    the time since."""
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    elapsed = (pd.Timestamp.now(tz="UTC") - started).dt.total_seconds()
    running = (runs["status"] == "running") & (elapsed > 0) & (runs["done"] > 0)
    rate = (runs["done"] / elapsed).where(running)
    left = ((runs[total] - runs["done"]) / rate).where(running & (rate > 0))
    out = runs.copy()
    out.insert(out.columns.get_loc("progress") + 1, "answers/s", rate)
    out.insert(out.columns.get_loc("answers/s") + 1, "eta",
               left.map(lambda s: "" if pd.isna(s) else f"{int(s) // 60}:{int(s) % 60:02d}"))
    return out


def _or_all(value: str) -> str:
    """A choice as the form shows it: the empty one (no filter) reads "all"."""
    return value or "all"


def backend_fields(columns: list[Any]) -> dict[str, dict[str, object]]:
    """A field for each option a backend declares with a form label (once when several
    backends declare it), taking the columns in turn: backend -> {option: value}."""
    shown: dict[str, tuple[BackendOption, list[str]]] = {}
    for name in BACKENDS:
        for option in backend_class(name).options:
            if option.label:
                shown.setdefault(option.name, (option, []))[1].append(name)
    values: dict[str, dict[str, object]] = {name: {} for name in BACKENDS}
    for (option, names), column in zip(shown.values(), itertools.cycle(columns), strict=False):
        value = backend_field(column, option, md("{} ({})", option.label, ", ".join(names)))
        for name in names:
            values[name][option.name] = value
    return values


def backend_field(column: Any, option: BackendOption, label: str) -> object:
    """The widget of one declared option: a checkbox, a choice, a number or a text."""
    key = f"runs.{option.name}"
    if option.type is bool:
        return column.checkbox(label, value=bool(option.default), key=key)
    if option.choices:
        return column.selectbox(label, [option.default, *option.choices], key=key,
                                format_func=lambda c: "default" if c is None else str(c))
    if option.type in (int, float):
        return column.number_input(label, value=option.default, key=key,
                                   step=1 if option.type is int else None)
    return column.text_input(label, placeholder=option.placeholder or "", key=key)


def refusal(kind: str, options: dict[str, object]) -> str:
    """Why the job could not start, with the fix ("" when it can)."""
    try:
        with reading(engine) as session:
            preflight.check_job(session, kind, options)
    except UserError as exc:
        return str(exc)
    return ""


def command_line(argv: list[str]) -> str:
    """The job's command as one types it."""
    return "python -m elitr_core " + shlex.join(argv)


def _runs_export(engine: Engine) -> pd.DataFrame:
    """The ``runs`` table ``export runs`` writes, read when a download is clicked."""
    with reading(engine) as session:
        return runs_table(session)


def show_status(engine: Engine) -> bool:
    """The runs, judges, unparsable judgments and the last job; whether something is going."""
    with reading(engine) as session:
        runs = pd.DataFrame(run_status.generation_runs(session, include_imported=True))
        judges = pd.DataFrame(run_status.judge_passes(session))
        unparsed = pd.DataFrame(run_status.unparsed_judgments(session))
    progress = st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0)
    st.subheader("Generation runs")
    if runs.empty:
        st.info("No generation run yet: start one below or with `python -m elitr_core generate`.")
    else:
        runs.insert(1, "origin", runs["backend"].map(
            lambda b: "imported" if b == "import" else "generated here"))
        imported = int((runs["origin"] == "imported").sum())
        st.caption(f"{len(runs):,} runs: {len(runs) - imported:,} generated here, {imported:,} "
                   "imported (the bundled ELITR-Bench responses or `import`), which have no "
                   "progress or token usage to show. A running run's answers/s and time left "
                   f"(eta, min:s) update every {REFRESH_S:g} s.")
        show_table(with_speed(runs), key="runs.runs-table", keys=RUN_KEYS,
                   column_config={"progress": progress})
        st.caption("Downloads: every run with what made it, as "
                   + code_span("python -m elitr_core export runs") + " writes it.")
        download_table(partial(_runs_export, engine), "runs", table="runs", key="download.runs")
        chosen = st.selectbox("Run config", runs["run"], key="runs.config_of",
                              format_func=lambda i: f"#{i} " +
                              runs.set_index("run").loc[i, "model"])
        with reading(engine) as session:
            st.json(run_status.run_config(session, int(chosen)), expanded=False)
    st.subheader("LLM judges")
    if judges.empty:
        st.info("No judge pass yet: start one below or with `python -m elitr_core judge`.")
    else:
        show_table(with_speed(judges, total="todo"), key="runs.judges-table", keys=JUDGE_KEYS,
                   column_config={"progress": progress})
    altered = run_status.altered_line(runs.to_dict("records"), judges.to_dict("records"))
    if altered:
        st.caption(plain(altered))
    st.metric("Unparsable judgments", f"{len(unparsed):,}")
    if not unparsed.empty:
        st.caption("Stored unscored with the parser's reason; the next `judge` pass retries "
                   "them.")
        show_table(unparsed, key="runs.unparsed-table")
    job = jobs.last_job()  # kept beside the logs: a reload or a second tab shows it too
    alive = job is not None and jobs.process_alive(job.pid)
    if job is not None:
        show_job(job, alive)
    going = alive or any(frame is not None and not frame.empty and
                         (frame["status"] == "running").any() for frame in (runs, judges))
    return bool(going)


def show_job(job: jobs.Job, alive: bool) -> None:
    """The last job's command, state and log tail; an error it ended with, in full."""
    code = jobs.exit_code(job.pid)  # None for a job this server process did not start
    state = "running" if alive else "ended" + ("" if code is None else f" (exit status {code})")
    st.markdown(md("**Last job** (pid {}, {}); log: ", job.pid, state) + code_span(job.log_path))
    st.code(command_line(job.argv), language="bash")
    tail = jobs.log_tail(job.log_path)
    errors = [row for row in tail.splitlines() if row.startswith("error")]
    if not alive and code != 0 and errors:
        st.error(plain(errors[-1]))  # the reason, whole, above the tail
    st.code(tail or "(no output yet)", language=None, wrap_lines=True)


require_role(RESEARCHER)  # this page starts processes: checked here too, not only in app.py
st.title("Runs")
engine = get_engine_or_stop()
if st.button("Refresh", icon=":material/refresh:", key="runs.refresh"):
    clear_caches()  # new answers and scores show in every analysis page too
    warm.again()  # and their default views are computed anew in the background


@st.fragment(run_every=REFRESH_S if st.session_state.get(GOING_KEY) else None)
def status() -> None:
    """Redrawn every ``REFRESH_S`` seconds while a job or run is going (the form below is not);
    a change between going and idle reruns the page, which turns the refresh on or off."""
    going = show_status(engine)
    if going != bool(st.session_state.get(GOING_KEY)):
        st.session_state[GOING_KEY] = going
        st.rerun()


status()

st.subheader("Start a background job")
kind = st.radio("Job", ["generate", "judge"], horizontal=True, key="runs.kind")
with st.form("runs.start"):
    left, mid, right = st.columns(3)
    backend = left.selectbox("Backend", BACKENDS, key="runs.backend")
    fields = backend_fields([mid, right, left])  # as each backend declares them
    options: dict[str, object] = {"backend": backend, **fields[backend]}
    any_ = [""] if kind == "judge" else []  # a judge pass may take every split/setting/mode
    split = left.selectbox("Split", [*any_, "test2", "dev"], format_func=_or_all)
    setting = mid.selectbox("Setting", [*any_, "qa", "conv"], format_func=_or_all)
    mode = right.selectbox("Mode", [*any_, "st", "mt"], format_func=_or_all)
    options.update(split=split, setting=setting, mode=mode)
    if kind == "generate":
        options["model"] = left.text_input("Model", key="runs.model",
                                           placeholder="the name the server knows it by")
        options["seed"] = mid.number_input("Seed", value=2023, step=1)
        options["language"] = right.selectbox("Language", LANGUAGES)
        if left.checkbox("Nucleus sampling (T 0.6, top-p 0.9)"):
            options["temperature"] = 0.6
        options["qa_markers"] = mid.checkbox("QA markers")
        options["length_instruction"] = right.checkbox("Length instruction")
        options["meetings"] = st.text_input("Meetings (comma-separated, empty: all)",
                                            key="runs.meetings")
        options["interleave"] = left.selectbox(
            "Interleave (mode mt)", [None, *INTERLEAVE_KS], key="runs.interleave",
            format_func=lambda k: "no" if k is None else f"{k} meetings a conversation",
            help="The LTM benchmark's method: K meetings' questions in one conversation")
        options["span"] = mid.number_input("Memory span (tokens; interleave)", min_value=0,
                                           step=1000, key="runs.span") or None
    else:
        options["judge_model"] = left.text_input("Judge model", key="runs.judge_model",
                                                 placeholder="the name the server knows it by")
        options["style"] = mid.selectbox("Style", [*JUDGE_STYLES, *PAIRWISE_STYLES],
                                         help="cream / battle: pairwise, both orders")
        options["evaluator"] = right.text_input("Evaluator slug", key="runs.evaluator",
                                                placeholder="the judge's name in every table")
        options["model"] = st.text_input("Judged model (empty: all)", key="runs.judged")
        options["samples"] = left.number_input("Samples", min_value=1, max_value=20, value=1)
        options["baseline"] = mid.text_input(
            "Baseline model (cream / battle; empty: all pairs)", key="runs.baseline")
    if st.form_submit_button("Start", type="primary"):
        with guarded():
            argv = jobs.build_command(kind, options)
            if reason := refusal(kind, options):
                st.error(md("Not started: ") + message(reason))
            else:
                jobs.start_job(argv)
                st.rerun()  # the status above shows the job and refreshes while it runs


