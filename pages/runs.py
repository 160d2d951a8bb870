"""Runs (researcher): generation runs and LLM judges, live progress, and background jobs."""

import shlex
from functools import partial

import pandas as pd
import streamlit as st

from elitr_core.data.database import Engine, reading
from elitr_core.export.runs import runs_table
from elitr_core.generation import jobs
from elitr_core.generation import status as run_status
from ui import warm
from ui.auth_ui import RESEARCHER, require_role
from ui.data import clear_caches, get_engine_or_stop
from ui.downloads import Export
from ui.run_form import job_form
from ui.tables import show_table
from ui.text import code_span, md, plain

GOING_KEY = "runs.going"

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
    progress = st.column_config.ProgressColumn("Progress", min_value=0.0, max_value=1.0)
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
        st.caption("Full table downloads: every run with what made it, as "
                   + code_span("python -m elitr_core export runs") + " writes it.")
        show_table(with_speed(runs), key="runs.runs-table", keys=RUN_KEYS,
                   column_config={"progress": progress}, download="runs",
                   download_key="download.runs",
                   export=Export(partial(_runs_export, engine), "runs"))
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
                   column_config={"progress": progress}, download="judge-passes")
    altered = run_status.altered_line(runs.to_dict("records"), judges.to_dict("records"))
    if altered:
        st.caption(plain(altered))
    st.metric("Unparsable judgments", f"{len(unparsed):,}")
    if not unparsed.empty:
        st.caption("Stored unscored with the parser's reason; the next `judge` pass retries "
                   "them.")
        show_table(unparsed, key="runs.unparsed-table", download="unparsable-judgments")
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
job_form()
