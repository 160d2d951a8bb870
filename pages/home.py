"""Home: what the database holds."""

import pandas as pd
import streamlit as st

from elitr_core.data.browse import meetings, overview_counts, runs_per_model, scores_per_evaluator
from elitr_core.data.database import reading
from elitr_core.vocab import setting_mode_label
from ui.auth_ui import RESEARCHER, require_role
from ui.data import get_engine_or_stop
from ui.downloads import download_dataset
from ui.preload import preload_elements
from ui.tables import show_table
from ui.text import plain

require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title("ELITR-Bench dashboard")
st.caption("Questions about long, noisy meeting transcripts: responses, judges and human scores.")

with reading(get_engine_or_stop()) as session:
    counts = overview_counts(session)
    runs = pd.DataFrame(runs_per_model(session))
    evaluators = pd.DataFrame(scores_per_evaluator(session))
    meeting_rows = pd.DataFrame(meetings(session))

cols = st.columns(len(counts))
for col, (label, value) in zip(cols, counts.items(), strict=True):
    col.metric(plain(label.capitalize()), f"{value:,}")

left, right = st.container(), st.container()  # one under the other: the runs table is wide
with left:
    st.subheader("Runs per model and setting")
    if runs.empty:
        st.info("No runs yet: import responses (`python -m elitr_core import FILE`).")
    else:
        # the shared label (a summary run's setting keeps its own name: "summary-st")
        runs["setting"] = [f"{setting_mode_label(s, m)} {split}" for s, m, split
                           in zip(runs["setting"], runs["mode"], runs["split"], strict=True)]
        table = runs.pivot_table(
            index="model", columns="setting", values="responses", aggfunc="sum", fill_value=0
        )
        show_table(table, key="home.runs-table", index=True, download="responses-per-model")
with right:
    st.subheader("Scores per evaluator")
    show_table(evaluators, key="home.evaluators-table", download="scores-per-evaluator")
    if counts["scores"]:  # the dataset of every score (docs/harnesses-and-datasets.md)
        download_dataset()

st.subheader("Meetings")
missing = int((~meeting_rows["transcript"].astype(bool)).sum()) if not meeting_rows.empty else 0
if missing:
    st.warning(
        f"{missing} of {len(meeting_rows)} transcripts missing: download the ELITR Minuting "
        "Corpus (LINDAT 11234/1-4692) and run `python -m elitr_core transcripts DIR`."
    )
if not meeting_rows.empty:
    meeting_rows["transcript"] = meeting_rows["transcript"].map(
        lambda present: "present" if present else "missing"
    )
show_table(meeting_rows, key="home.meetings-table", download="meetings")

preload_elements()  # last: the analysis pages' element code loads while Home is read
