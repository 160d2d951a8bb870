"""The Studies page's Monitor tab: each model's confidence sequences as the study fills, its
stopping rule, and the same tables as ``export study-monitor`` / ``study-monitor-sequences``."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from elitr_core.annotation.stopping import monitor_table, stop_state
from elitr_core.data.database import reading
from elitr_core.export.audit_figures import sequence_plot
from ui.data import database_url, engine
from ui.downloads import Export, download_table
from ui.figures import show_figure
from ui.messages import guarded
from ui.tables import show_table
from ui.text import code_span, plain

SUMMARY_KEYS = ("model", "target", "n", "half_width", "target_half_width", "reached",
                "expected_further")
SEQUENCE_KEY = "studies.monitor.target"
SHOW_KEY = "studies.monitor.show"


@st.cache_data(ttl=30, max_entries=32, show_spinner="Computing the sequences...")
def _tables(url: str | None, study: str, half_width: float) -> tuple[pd.DataFrame,
                                                                      pd.DataFrame]:
    """Both tables (recomputed at most every 30 s while scores arrive)."""
    with reading(engine()) as session:
        return (monitor_table(session, study, "study-monitor", half_width=half_width),
                monitor_table(session, study, "study-monitor-sequences"))


def stop_notice(study: str) -> None:
    """Says whether the study's stopping rule admits new participants, and why not."""
    with reading(engine()) as session, guarded():
        found, reason = stop_state(session, study)
        if not found:
            return
        rules = "; ".join(r.text() for r in found)
        if reason:
            st.info(plain(f"Admits nobody new: {reason}. Seated participants finish their "
                          "task; their scores are kept."))
        else:
            st.caption(plain(f"Stopping rule: {rules}. New participants are admitted until "
                             "every model's 95% confidence sequence meets it (Monitor tab)."))


def monitor_tab(names: list[str]) -> None:
    """The tab: a study, a target half-width, the tables and the figure."""
    study = st.selectbox("Study", names, key="studies.monitor.study")
    half = st.number_input("Target half-width (for the sequences without a stopping rule)",
                           0.05, 9.0, 0.5, 0.05, key="studies.monitor.half")
    if not study:
        return
    stop_notice(study)
    # computed on request: the bounds after every score cost O(n^2) per model and target
    # (about 0.1 s for 100 scores, 1-9 s for 1,000 on a busy 2-core machine), and the rest
    # of the Studies page should not wait for them
    if not st.toggle("Show the sequences", key=SHOW_KEY):
        return
    st.caption("A confidence sequence holds the truth at every look with 95% probability, so "
               "it may be watched after every score and the study stopped whenever it is "
               "narrow enough; the fixed-n t interval (dotted) keeps 95% only for a number of "
               "scores fixed in advance and looked at once. Expected further is an estimate: "
               "the median of 50 continuations drawn from the scores seen so far. Full table: "
               "same bytes as " + code_span(f"python -m elitr_core export study-monitor --human "
                                 f"POOL:{study} --half-width {half:g}") + ".")
    with guarded():
        summary, sequences = _tables(database_url(), study, float(half))
        show_table(summary, key="studies.monitor-table", keys=SUMMARY_KEYS,
                   download=f"study-monitor-{study}", export=Export(summary, "study-monitor"))
        targets = [t for t in ("human", "bias", "ppi") if (sequences["target"] == t).any()]
        if not targets:
            st.caption("No scored response yet.")
            return
        target = st.radio("Sequence", targets, horizontal=True, key=SEQUENCE_KEY,
                          format_func=plain)
        show_figure(sequence_plot, sequences, target, name=f"study-monitor-{study}-{target}")
        download_table(sequences, f"study-monitor-sequences-{study}",
                       table="study-monitor-sequences")
