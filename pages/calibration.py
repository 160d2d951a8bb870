"""Calibration: for each score 1..10 of a reference evaluator, every other evaluator's mean."""

import streamlit as st

from elitr_core.export import figures, views
from elitr_core.export.figures import MIN_BIN_FOR_INTERVAL
from ui.analysis.calibration import TITLE
from ui.auth_ui import RESEARCHER, require_role
from ui.data import export_table, scores_frame
from ui.defaults import DEFAULT_HUMAN
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import cli_arguments, describe, narrowing, sidebar_filters
from ui.messages import shown
from ui.state import kept
from ui.tables import show_table
from ui.text import code_span, plain

REFERENCE_KEY = "calibration.reference"


require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title(TITLE)
flt = sidebar_filters()

evaluators = views.evaluators_in(scores_frame(flt))
if not evaluators:
    st.info(f"No scores under {narrowing(flt)}: change {narrowing(flt)} in the sidebar.")
    st.stop()
# kept across pages; never carried over when it has no scores under the filters
pick, context = st.columns([1, 3], vertical_alignment="bottom")
context.caption(f"Score-bin calibration · {describe(flt)}")
reference = pick.selectbox(
    "Reference evaluator (defines the bins)", evaluators,
    placeholder="choose the reference evaluator",
    **kept(REFERENCE_KEY, DEFAULT_HUMAN if DEFAULT_HUMAN in evaluators else None, evaluators))
if reference is None:
    st.info(f"{plain(DEFAULT_HUMAN)}, the default reference, has no scores under {narrowing(flt)}: "
            f"choose another reference above, or change {narrowing(flt)} in the sidebar "
            "(the human scores are on test2, QA, single-turn).")
    st.stop()
with shown(stop=True):
    table = export_table("calibration", flt, reference=reference)

show_figure(figures.calibration_plot, table, name=f"calibration-{reference}")
st.caption(f"Each response scored by {plain(reference)} and another evaluator falls in the bin "
           f"of its {plain(reference)} score (rounded, halves up); per bin the evaluator's mean "
           "and 95% t interval, and its number of responses n (under the bin; beside each point "
           "when they differ between evaluators). A bin with "
           f"fewer than {plain(MIN_BIN_FOR_INTERVAL)} responses shows its mean only (open "
           "marker, no interval in the table: the download keeps it).")

st.subheader("Table")
st.caption("Full table: same bytes as " + code_span(
    f"python -m elitr_core export calibration --reference {reference} {cli_arguments(flt)}"))
small = table["n"] < MIN_BIN_FOR_INTERVAL
show_table(table.assign(ci_low=table["ci_low"].mask(small), ci_high=table["ci_high"].mask(small)),
           key="calibration.table", download="calibration",
           export=Export(table, "calibration"))
