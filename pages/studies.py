"""Studies (researchers): create a human scoring study, add annotators, watch progress,
check quality, exclude and replace annotators, read the agreement, close the study."""

from dataclasses import asdict

import pandas as pd
import streamlit as st

from elitr_core.annotation.admin import (
    StudyStatus,
    add_study_annotator,
    close_study,
    reopen_study,
    study_status,
)
from elitr_core.annotation.auth import annotator_link
from elitr_core.annotation.guidelines import examples_of, set_study_examples
from elitr_core.annotation.quality import (
    aggregate,
    get_study,
    quality_report,
    study_agreement,
)
from elitr_core.annotation.selection import plan_budget
from elitr_core.data.browse import list_studies, meetings, runs_per_model
from elitr_core.data.database import reading, writing
from elitr_core.errors import UserError
from ui.auth_ui import RESEARCHER, link_address_warning, public_base_url, require_role
from ui.data import (
    database_url,
    forget_scores,
    get_engine_or_stop,
    score_cache,
)
from ui.downloads import Export
from ui.messages import guarded
from ui.study_form import create_form
from ui.study_monitor import monitor_tab, stop_notice
from ui.study_quality import MESSAGE_KEY, quality_section
from ui.tables import show_table, show_table_and_notes
from ui.text import code_span, md, plain

SELECTED_KEY = "studies.selected"
CONFIRM_KEY = "studies.confirm-close"  # the study whose closing waits for a confirmation

require_role(RESEARCHER)
engine = get_engine_or_stop()
st.title("Studies")


#: the columns a 1366 px screen shows first (the rest under each table's Columns picker)
PROGRESS_KEYS = ("annotator", "unit", "status", "answered", "items", "minutes_spent")

def attention_note(summary: dict, progress: pd.DataFrame) -> str:  # type: ignore[type-arg]
    """Why an annotator's queue is longer than the study's item count."""
    rate = float(summary["attention_rate"])  # type: ignore[arg-type]
    if rate <= 0:
        return "No attention checks: an annotator's queue holds exactly the study's items."
    checks = int(progress["checks"].sum()) if len(progress) else 0
    return (f"Items counts the responses to score. Each annotator's queue also mixes in "
            f"attention checks (about {rate:.0%} of its items: the reference answer shown as "
            "the response, which deserves 10, or an unrelated answer, which deserves 1), so "
            "an annotator sees more items than this count (the progress table's items "
            f"include its checks column; {checks} checks handed out so far). Checks are never "
            "stored as scores; they feed the quality control below.")


def _examples_editor(study: str) -> None:
    """Edit the study's worked examples (shown under Guidelines on the annotation page)."""
    examples = []
    with reading(engine) as session, guarded():
        examples = examples_of(session, study)
    st.caption("The rubric is shown as is; these examples come from the paper's instructions "
               "until you save your own (an empty table restores them).")
    frame = pd.DataFrame([asdict(e) for e in examples],
                         columns=["question", "reference", "response", "score", "why"])
    edited = st.data_editor(frame, num_rows="dynamic", width="stretch", key="studies.examples",
                            column_config={"score": st.column_config.NumberColumn(
                                min_value=1, max_value=10, step=1)})
    if st.button("Save the examples", key="studies.save-examples"):
        rows = edited.dropna(how="all").to_dict("records")
        with writing(engine) as session, guarded() as call:
            stored = set_study_examples(session, study, rows)
        if not call.failed:
            st.success(f"{stored:d} worked example(s) saved." if stored else
                       "The default examples are restored.")


@score_cache(ttl=60, show_spinner=False)
def _plan(url: str | None, split: str | None, setting: str | None, mode: str | None,
          judge: str, human: str, half_width: float) -> pd.DataFrame:
    """The human-budget planner's table (cached: the expander is drawn on every run)."""
    with reading(engine) as session:
        return plan_budget(session, split=split, setting=setting, mode=mode, models=None,
                           judge=judge, human=human, half_width=half_width)


@st.cache_data(ttl=600, max_entries=16, show_spinner=False)
def _agreement(url: str | None, study: str, version: str) -> dict | None:  # type: ignore[type-arg]
    """ICC and Krippendorff's alpha of a study, computed again only when its answers, its
    annotators' states or its status change (``version``), not on every click of the page."""
    with reading(engine) as session:
        return study_agreement(session, study)


def _version(status: StudyStatus) -> str:
    """What the agreement depends on: every annotator's answers and state and the score count
    (not the study's status: closing stores the mean, the annotators' scores stay the same)."""
    rows = status.progress[["annotator", "unit", "status", "answered"]].astype(str)
    return "|".join([str(status.summary["scores"]),
                     *("/".join(r) for r in rows.itertuples(index=False))])


def _close(study: str) -> None:
    """Close after the confirmation; runs before the page redraws (one run, not two)."""
    st.session_state.pop(CONFIRM_KEY, None)
    with writing(engine) as session, guarded() as call:
        close_study(session, study)
    if not call.failed:
        forget_scores()  # the analysis pages show the stored aggregate on their next run
        st.session_state[MESSAGE_KEY] = f"{study} is closed; its aggregate is stored."


def _reopen(study: str) -> None:
    with writing(engine) as session, guarded():
        reopen_study(session, study)


def _aggregate(study: str) -> None:
    with writing(engine) as session, guarded() as call:
        stored = aggregate(session, study)
    if not call.failed:
        forget_scores()
        st.session_state[MESSAGE_KEY] = f"{stored:d} aggregate score(s) stored."


def _state(study: str) -> str | None:
    with reading(engine) as session, guarded():
        return str(get_study(session, study).status)
    return None


@st.fragment
def study_controls(study: str, summary: dict) -> None:  # type: ignore[type-arg]
    """The study's figures and what can be done to it as a whole (update the aggregate, close
    after a confirmation, re-open). A click here reruns this part alone: none of it changes
    the tables below, and a whole run redrew their six grids, which made closing take seconds
    in the browser. ``summary``: the page run's figures; the status is read anew."""
    state = _state(study)
    if state is None:
        return
    cols = st.columns(5)
    for col, key in zip(cols, ("status", "items", "units", "annotators", "scores"), strict=True):
        col.metric(plain(key.capitalize()), plain(state if key == "status" else summary[key]))
    c1, c2, c3 = st.columns(3)
    c1.button("Update the aggregate scores", on_click=_aggregate, args=(study,))
    if state == "open" and st.session_state.get(CONFIRM_KEY) == study:
        st.warning(md("Close {}? Annotators can no longer answer or revise; the aggregate "
                      "is stored. You can re-open it later.", study))
        yes, no, _ = st.columns([1, 1, 2])
        yes.button("Yes, close the study", type="primary", key="studies.close-yes",
                   on_click=_close, args=(study,))
        no.button("Cancel", key="studies.close-cancel",
                  on_click=lambda: st.session_state.pop(CONFIRM_KEY, None))
    elif state == "open":
        c2.button("Close the study", type="primary", key="studies.close",
                  on_click=lambda: st.session_state.update({CONFIRM_KEY: study}))
    else:
        c3.button("Re-open the study", on_click=_reopen, args=(study,))
    if st.session_state.get(MESSAGE_KEY):
        st.success(plain(st.session_state.pop(MESSAGE_KEY)))


with reading(engine) as session:
    names = [s.name for s in list_studies(session=session)]
    models = sorted({r["model"] for r in runs_per_model(session)})
    meeting_ids = [m["meeting"] for m in meetings(session)]

status_tab, create_tab, people_tab, watch_tab = st.tabs(
    ["Status", "Create a study", "Annotators", "Monitor"])

with create_tab:
    create_form(models, meeting_ids)

with create_tab, st.expander("Human-budget planner: how many human scores per model?"):
    st.caption("From the judge and human scores stored so far: the human scores each model "
               "needs for the PPI table's 95% interval to meet the half-width in 80% of studies "
               "(assurance: that share), alone and with PPI++ (the judge on the other "
               "responses). Same as `python -m elitr_core export ppi-budget`.")
    c1, c2, c3, c4, c5 = st.columns(5)
    plan_split = c1.selectbox("Split", [None, "dev", "test2"], index=2, key="studies.plan.split")
    plan_setting = c2.selectbox("Setting", [None, "qa", "conv"], index=1,
                                key="studies.plan.setting")
    plan_mode = c3.selectbox("Mode", [None, "st", "mt"], index=1, key="studies.plan.mode")
    plan_judge = c4.text_input("Judge", "gpt-4", key="studies.plan.judge")
    plan_human = c5.text_input("Human", "gold-human", key="studies.plan.human")
    half_width = st.number_input("Target half-width", 0.05, 5.0, 0.5, 0.05,
                                 key="studies.plan.half_width")
    try:
        plan = _plan(database_url(), plan_split, plan_setting, plan_mode, plan_judge, plan_human,
                     float(half_width))
        show_table(plan, key="studies.plan-table", download="ppi-budget",
                   export=Export(plan, "ppi-budget"))
    except UserError as exc:  # no scores of that pair yet: say so, quietly
        st.caption(md("Nothing to plan from yet: {}", exc))

with watch_tab:
    if names:
        monitor_tab(names)
    else:
        st.info("No study yet: create one first.")

with people_tab, st.form("studies.annotator"):
    # the link opens the chosen study and the annotator joins that study's pool, so a link
    # made with the defaults never lands in a pool with no open study
    who = st.text_input("Annotator name")
    their_study = st.selectbox("Study the link opens", names,
                               help="the annotator joins this study's pool (gold or silver)")
    if st.form_submit_button("Add annotator"):
        with writing(engine) as session, guarded() as call:
            token, their_pool = add_study_annotator(session, who, their_study or "")
        if not call.failed:
            st.success(md("Personal link of {} to study {} ({} pool), shown once: send it "
                          "privately.", who, their_study, their_pool))
            link_address_warning()
            st.code(annotator_link(token, public_base_url(), their_study), language=None,
                    wrap_lines=True)
    if not names:
        st.caption("Create a study first: a personal link opens one study.")

with status_tab:
    if not names:
        st.info("No study yet: create one in the next tab.")
        st.stop()
    study = st.columns([1, 3])[0].selectbox("Study", names, key=SELECTED_KEY)
    report = agreement = None
    with reading(engine) as session:
        with guarded() as read:
            status = study_status(session, study)
        with guarded():
            report = quality_report(session, study)
    if read.failed:
        st.stop()
    with guarded():
        agreement = _agreement(database_url(), study, _version(status))
    study_controls(study, status.summary)
    stop_notice(study)
    st.subheader("Progress per annotator")
    # downloaded as shown: who did how much, to pay a crowd and to chase the missing
    show_table(status.progress, key="studies.progress-table", keys=PROGRESS_KEYS,
               download=f"progress-{study}")
    # the study's settings under its progress: the table is what a researcher comes to read
    st.caption("Scores go to evaluator " + code_span(status.summary["evaluator"])
               + md("; order seed {}; {} annotator(s) per item.", status.summary["order_seed"],
                    status.summary["per_item"]))
    st.caption(md("Lease (minutes without an answer before a task goes to the next "
                  "participant): {}. Join limit: {}. Lapsed participants: {} (status lapsed "
                  "above; their answers are kept, marked lapsed).",
                  status.summary["lease_minutes"], status.summary["join_limit"],
                  status.summary["lapsed"]))
    st.caption(plain(attention_note(status.summary, status.progress)))
    st.subheader("Units short of annotators")
    show_table(status.short, key="studies.short-table", download=f"short-units-{study}")
    st.subheader("Quality control")
    if report is not None:
        quality_section(study, report, str(status.summary["evaluator"]))
    st.subheader("Agreement of the study's annotators")
    if agreement:
        if agreement["alpha"] is not None:
            st.metric("Krippendorff's alpha (interval)", f"{agreement['alpha']:.3f}")
        for key in ("icc_per_meeting", "icc_overall"):
            if isinstance(agreement[key], pd.DataFrame):
                show_table_and_notes(agreement[key], key=f"studies.{key}-table",
                                     label=("group",),
                                     download=f"{key.replace('_', '-')}-{study}")
        for message in agreement["messages"]:
            st.caption(plain(message))
    with st.expander("Guidelines: worked examples the annotators see"):
        _examples_editor(study)
