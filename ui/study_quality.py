"""The Studies page's quality control: the quality table, excluding an annotator (nobody
chosen beforehand, a reason to type, then a confirmation, as closing a study asks) and each
annotator's reliability with a caveat where they scored few responses."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from elitr_core.annotation.quality import exclude_annotator, exclusion_report
from elitr_core.data.browse import ScoreFilter
from elitr_core.data.database import writing
from elitr_core.stats.silver_aggregate import small_n_caveat
from ui.data import engine, export_table, forget_scores
from ui.downloads import Export
from ui.messages import guarded, shown
from ui.tables import show_table
from ui.text import code_span, md, plain

MESSAGE_KEY = "studies.message"  # shown by the page's study controls on the next run
TARGET_KEY = "studies.exclude"
REASON_KEY = "studies.exclude-reason"
CONFIRM_KEY = "studies.confirm-exclude"  # (study, annotator, reason) waiting for a yes
#: the columns a 1366 px screen shows first (the rest under the table's Columns picker)
QUALITY_KEYS = ("annotator", "flags", "answered", "median_seconds", "gold_r")


def _exclude(study: str, target: str, reason: str) -> None:
    """Runs before the page redraws, so the tables below already show the exclusion."""
    st.session_state.pop(CONFIRM_KEY, None)
    with writing(engine()) as session, guarded() as call:
        marked = exclude_annotator(session, study, target, reason)
        report = exclusion_report(session, study, target, marked)
    if not call.failed:
        forget_scores()  # the aggregate without them
        st.session_state[MESSAGE_KEY] = report
        st.session_state[TARGET_KEY] = None  # nobody stays chosen for the next exclusion
        st.session_state[REASON_KEY] = ""


def _ask(study: str) -> None:
    st.session_state[CONFIRM_KEY] = (study, st.session_state.get(TARGET_KEY),
                                     str(st.session_state.get(REASON_KEY, "")).strip())


def exclusion_controls(study: str, report: pd.DataFrame) -> None:
    """Choose an annotator (flagged first, none chosen), type a reason, confirm."""
    flagged = report.loc[report["flags"] != "", "annotator"].tolist()
    options = flagged + [a for a in report["annotator"] if a not in flagged]
    left, right = st.columns([1, 2])
    target = left.selectbox("Annotator to exclude (flagged first)", options, index=None,
                            key=TARGET_KEY, placeholder="Choose an annotator")
    reason = right.text_input("Reason", key=REASON_KEY,
                              placeholder="why (stored with the exclusion, e.g. failed checks)")
    asked = st.session_state.get(CONFIRM_KEY)
    if asked is not None and asked[0] == study and asked[1] == target:
        answered = int(report.loc[report["annotator"] == target, "answered"].sum())
        st.warning(md("Exclude {} from study {}? Their {} answer(s) are kept, marked excluded, "
                      "and leave the aggregate; their task re-opens for a replacement. This "
                      "cannot be undone from the dashboard. Reason: {}", target, study,
                      answered, asked[2]))
        yes, no, _ = st.columns([1, 1, 2])
        yes.button("Yes, exclude", type="primary", key="studies.exclude-yes",
                   on_click=_exclude, args=asked)
        no.button("Cancel", key="studies.exclude-cancel",
                  on_click=lambda: st.session_state.pop(CONFIRM_KEY, None))
        return
    st.button("Exclude (scores kept, task re-opened)", key="studies.exclude-ask",
              disabled=target is None or not reason.strip(), on_click=_ask, args=(study,),
              help="choose an annotator and type a reason first")


def reliability_section(slug: str, study: str) -> None:
    """Each annotator's offset and precision under the silver aggregate's fit of the study's
    scores (the same bytes as ``export annotator-reliability --evaluator SLUG``), with a
    caveat naming those who scored too few responses for their row to mean much."""
    st.caption("Reliability (each annotator's offset and noise, estimated with every "
               "response's aggregate): bias is how much higher than the aggregate the "
               "annotator scores, noise_sd how far their scores scatter about it, weight their "
               "share in the aggregate (1 = average), mean_abs_error their mean distance from "
               "it in points. Full table: same bytes as "
               + code_span(f"python -m elitr_core export annotator-reliability --evaluator "
                           f"{slug}") + "; " + code_span("export silver-aggregate")
               + " gives the reliability-weighted aggregate beside the mean and the median.")
    with shown():
        reliability = export_table("annotator-reliability", ScoreFilter(evaluators=(slug,)))
        caveat = small_n_caveat(reliability)
        if caveat:
            st.warning(plain(caveat), icon=":material/warning:")
        show_table(reliability, key="studies.reliability-table",
                   download=f"annotator-reliability-{study}",
                   export=Export(reliability, "annotator-reliability"))


def quality_section(study: str, report: pd.DataFrame, slug: str) -> None:
    """The quality table (flags beside the name), the exclusion and the reliability."""
    quality = report.drop(columns=["annotator_id"])
    show_table(quality[["annotator", "flags"]
                       + [c for c in quality.columns if c not in {"annotator", "flags"}]],
               key="studies.quality-table", keys=QUALITY_KEYS,
               column_config={"flags": st.column_config.TextColumn(width="large")},
               download=f"quality-{study}")
    exclusion_controls(study, report)
    if int((report["answered"] > 0).sum()) >= 2:
        reliability_section(slug, study)
    else:
        st.caption("Annotator reliability shows once two annotators have answered.")
