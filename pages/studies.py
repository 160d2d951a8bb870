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
from elitr_core.annotation.admission import DEFAULT_JOIN_LIMIT, DEFAULT_LEASE_MINUTES
from elitr_core.annotation.auth import annotator_link
from elitr_core.annotation.guidelines import examples_of, set_study_examples
from elitr_core.annotation.quality import (
    aggregate,
    exclude_annotator,
    exclusion_report,
    get_study,
    quality_report,
    study_agreement,
)
from elitr_core.annotation.selection import plan_budget
from elitr_core.annotation.study_setup import (
    MAX_ATTENTION_RATE,
    StudySpec,
    create_study,
    prolific_url,
)
from elitr_core.data.browse import ScoreFilter, list_studies, meetings, runs_per_model
from elitr_core.data.database import reading, writing
from elitr_core.errors import UserError
from elitr_core.vocab import ATTENTION_RATE_DEFAULT, ATTENTION_RATE_LABEL
from ui.auth_ui import RESEARCHER, public_base_url, require_role
from ui.data import (
    database_url,
    export_table,
    forget_scores,
    get_engine_or_stop,
    score_cache,
)
from ui.downloads import download_table
from ui.messages import guarded, shown
from ui.study_monitor import monitor_tab, stop_notice
from ui.tables import show_table, show_table_and_notes
from ui.text import code_span, md, plain

SELECTED_KEY = "studies.selected"
MESSAGE_KEY = "studies.message"
POOL_KEY = "studies.create.pool"
CONFIRM_KEY = "studies.confirm-close"  # the study whose closing waits for a confirmation
PER_ITEM_DEFAULT = {"silver": 10, "gold": 2}
LEASE_DEFAULT = {"silver": DEFAULT_LEASE_MINUTES, "gold": 0}  # gold: experts keep their task

require_role(RESEARCHER)
engine = get_engine_or_stop()
st.title("Studies")


#: the columns a 1366 px screen shows first (the rest under each table's Columns picker)
PROGRESS_KEYS = ("annotator", "unit", "status", "answered", "items", "minutes_spent")
QUALITY_KEYS = ("annotator", "flags", "answered", "median_seconds", "gold_r")

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


def _exclude(study: str, target: str, reason: str) -> None:
    """Runs before the page redraws, so the tables below already show the exclusion."""
    with writing(engine) as session, guarded() as call:
        marked = exclude_annotator(session, study, target, reason)
        report = exclusion_report(session, study, target, marked)
    if not call.failed:
        forget_scores()  # the aggregate without them
        st.session_state[MESSAGE_KEY] = report


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

with create_tab:  # outside the form, so that the pool's defaults apply as soon as it is picked
    pool = st.radio("Pool", ["silver", "gold"], horizontal=True, key=POOL_KEY,
                    help="silver: crowd workers through Prolific; gold: experts with personal "
                         "links (Annotators tab)")
with create_tab, st.form("studies.create"):
    name = st.text_input("Name")
    c1, c2, c3, c4 = st.columns(4)
    per_item = c1.number_input("Annotators per item", 1, 50, PER_ITEM_DEFAULT[pool])
    c2.caption("Silver: 10 per item (the paper); gold: 2-3 experts per item.")
    assignment = c3.radio("Assignment", ["meeting", "random"], horizontal=True,
                          help="one meeting per annotator (the paper's task) or random batches")
    batch = c4.number_input("Batch size (random)", 1, 1000, 45)
    c1, c2, c3 = st.columns(3)
    split = c1.selectbox("Split", [None, "dev", "test2"], index=2)
    setting = c2.selectbox("Setting", [None, "qa", "conv"], index=1)
    mode = c3.selectbox("Mode", [None, "st", "mt"], index=1)
    chosen_models = st.multiselect("Models (none = all)", models)
    chosen_meetings = st.multiselect("Meetings (none = all of the split)", meeting_ids)
    c1, c2, c3, c4 = st.columns(4)
    seed = c1.number_input("Order seed", 0, 2**31 - 1, 0)
    rate = c2.number_input(plain(ATTENTION_RATE_LABEL), 0.0, MAX_ATTENTION_RATE,
                           ATTENTION_RATE_DEFAULT, step=0.05,
                           help="0.1 is one check per ten items (the same default as "
                                "study create --attention-rate)")
    cap, code, joins = 0, "", 0  # Prolific settings: a gold study's experts have their links
    if pool == "silver":
        cap = c3.number_input("Max concurrent participants (0 = no cap)", 0, 10_000, 0)
        code = c4.text_input("Prolific completion code")
    c1, c2, _ = st.columns(3)
    lease = c1.number_input("Lease: minutes without an answer before a task goes to the "
                            "next participant (0 = never)", 0, 100_000,
                            LEASE_DEFAULT[pool],
                            help="their answers so far are kept, marked lapsed")
    if pool == "silver":
        joins = c2.number_input("New participants per network address per hour (0 = no "
                                "limit)", 0, 100_000, DEFAULT_JOIN_LIMIT,
                                help="a Prolific id is cheap to invent, an address is not")
    c1, c2, c3 = st.columns(3)
    sample = c1.number_input("Sample: about N responses (0 = all)", 0, 100_000, 0,
                             help="each response drawn with a stored probability, so that "
                                  "export ppi-active can weight by its inverse")
    selection = c2.radio("Selection", ["uniform", "active"], horizontal=True,
                         help="active favours responses the judge is unsure about")
    judge = c3.text_input("Judge (active selection; bias/ppi stopping rules)", "gpt-4")
    stop = st.text_input("Stop when (optional; needs random assignment)",
                         placeholder="half-width <= 0.5; ppi half-width <= 0.5",
                         help="admit nobody new once every model's 95% confidence sequence is "
                              "this narrow (human mean, judge's bias or ppi; several separated "
                              "by ;), as study create --stop-when")
    if st.form_submit_button("Create study", type="primary"):
        spec = StudySpec(name=name, pool=pool, per_item=int(per_item), split=split,
                         setting=setting, mode=mode, models=tuple(chosen_models) or None,
                         meetings=tuple(chosen_meetings) or None, assignment=assignment,
                         batch=int(batch) if assignment == "random" else None, seed=int(seed),
                         prolific_code=code or None, attention_rate=float(rate),
                         max_concurrent=int(cap) or None, sample=int(sample) or None,
                         selection=selection, judge=judge, lease_minutes=int(lease),
                         join_limit=int(joins),
                         stop_when=tuple(t.strip() for t in stop.split(";") if t.strip()))
        with writing(engine) as session, guarded() as call:
            summary = create_study(session, spec)
        if not call.failed:
            names.insert(0, str(summary["study"]))  # the tabs below offer it in this run
            st.success(md("Study {} created: {} items in {} unit(s).", name, summary["items"],
                          summary["units"]))
            if pool == "silver":
                st.caption("The study URL to paste into Prolific:")
                st.code(prolific_url(name, host=public_base_url()), language=None,
                        wrap_lines=True)

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
        show_table(plan, key="studies.plan-table")
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
            st.code(annotator_link(token, public_base_url(), their_study), language=None,
                    wrap_lines=True)
    if not names:
        st.caption("Create a study first: a personal link opens one study.")

def reliability_section(slug: str, study: str) -> None:
    """Each annotator's offset and precision under the silver aggregate's fit of the study's
    scores (the same bytes as ``export annotator-reliability --evaluator SLUG``)."""
    st.caption("Reliability (each annotator's offset and noise, estimated with every "
               "response's aggregate): bias is how much higher than the aggregate the "
               "annotator scores, noise_sd how far their scores scatter about it, weight their "
               "share in the aggregate (1 = average), mean_abs_error their mean distance from "
               "it in points. Same bytes as "
               + code_span(f"python -m elitr_core export annotator-reliability --evaluator "
                           f"{slug}") + "; " + code_span("export silver-aggregate")
               + " gives the reliability-weighted aggregate beside the mean.")
    with shown():
        reliability = export_table("annotator-reliability", ScoreFilter(evaluators=(slug,)))
        show_table(reliability, key="studies.reliability-table")
        download_table(reliability, f"annotator-reliability-{study}",
                       table="annotator-reliability")


with status_tab:
    if not names:
        st.info("No study yet: create one in the next tab.")
        st.stop()
    study = st.selectbox("Study", names, key=SELECTED_KEY)
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
    st.caption("Scores go to evaluator " + code_span(status.summary["evaluator"])
               + md("; order seed {}; {} annotator(s) per item.", status.summary["order_seed"],
                    status.summary["per_item"]))
    st.caption(md("Lease (minutes without an answer before a task goes to the next "
                  "participant): {}. Join limit: {}. Lapsed participants: {} (status lapsed "
                  "below; their answers are kept, marked lapsed).",
                  status.summary["lease_minutes"], status.summary["join_limit"],
                  status.summary["lapsed"]))
    st.caption(plain(attention_note(status.summary, status.progress)))
    st.subheader("Progress per annotator")
    show_table(status.progress, key="studies.progress-table", keys=PROGRESS_KEYS)
    st.subheader("Units short of annotators")
    show_table(status.short, key="studies.short-table")
    st.subheader("Quality control")
    if report is not None:
        # the flags (why to exclude someone) next to the name, so a 1366 px screen shows them
        quality = report.drop(columns=["annotator_id"])
        show_table(quality[["annotator", "flags"]
                           + [c for c in quality.columns if c not in {"annotator", "flags"}]],
                   key="studies.quality-table", keys=QUALITY_KEYS,
                   column_config={"flags": st.column_config.TextColumn(width="large")})
        flagged = report.loc[report["flags"] != "", "annotator"].tolist()
        target = st.selectbox("Annotator to exclude (flagged first)", key="studies.exclude",
                              options=
                              flagged + [a for a in report["annotator"] if a not in flagged])
        reason = st.text_input("Reason", "inconsistent with gold")
        st.button("Exclude (scores kept, task re-opened)", disabled=target is None,
                  on_click=_exclude, args=(study, target, reason))
        if int((report["answered"] > 0).sum()) >= 2:
            reliability_section(str(status.summary["evaluator"]), study)
        else:
            st.caption("Annotator reliability shows once two annotators have "
                       "answered.")
    st.subheader("Agreement of the study's annotators")
    if agreement:
        if agreement["alpha"] is not None:
            st.metric("Krippendorff's alpha (interval)", f"{agreement['alpha']:.3f}")
        for key in ("icc_per_meeting", "icc_overall"):
            if isinstance(agreement[key], pd.DataFrame):
                show_table_and_notes(agreement[key], key=f"studies.{key}-table",
                                     label=("group",))
        for message in agreement["messages"]:
            st.caption(plain(message))
    with st.expander("Guidelines: worked examples the annotators see"):
        _examples_editor(study)
