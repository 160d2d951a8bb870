"""The detail panel under a table of responses: one row read in full, as plain text."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from elitr_core.export.display import MISSING
from elitr_core.export.views import FEEDBACK_SUFFIX
from ui.data import transcript_excerpt
from ui.messages import guarded
from ui.text import md, plain

_LABELS = (("question", "Question"), ("reference", "Reference answer"),
           ("response", "Response"), ("transcript_excerpt", "Transcript excerpt"))


def response_detail(row: pd.Series | None, score_columns: Sequence[str]) -> None:
    """Full question, reference, response (and transcript excerpt when the row has one), every
    evaluator's score and the judges' feedback of the selected ``row``; nothing when None."""
    if row is None:
        return
    if "transcript_excerpt" not in row.index and {"meeting", "question"} <= set(row.index):
        excerpt = None
        with guarded():
            excerpt = transcript_excerpt(str(row["meeting"]), str(row["question"]))
        row = pd.concat([row, pd.Series({"transcript_excerpt": excerpt})])
    with st.container(border=True, key="detail-panel"):
        title = " · ".join(str(row[c]) for c in ("meeting", "question_id", "model")
                           if c in row.index and pd.notna(row[c]))
        st.markdown(md("**Selected response** · {}", title))
        for column, label in _LABELS:
            if column in row.index and pd.notna(row[column]) and str(row[column]).strip():
                st.caption(label)
                st.container(height=min(60 + len(str(row[column])) // 4, 220)).text(
                    str(row[column]))
        scores = {c: row[c] for c in score_columns if c in row.index}
        if scores:
            st.caption("Scores")
            st.text("   ".join(f"{name}: {MISSING if pd.isna(v) else f'{float(v):g}'}"
                               for name, v in scores.items()))
        for column in row.index:
            if str(column).endswith(FEEDBACK_SUFFIX) and pd.notna(row[column]):
                st.caption(plain(str(column).replace(FEEDBACK_SUFFIX, "") + " feedback"))
                st.container(height=180).text(str(row[column]))
