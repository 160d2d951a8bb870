"""Meeting browser: one meeting's questions, reference answers, responses and their scores."""

import pandas as pd
import streamlit as st

from elitr_core.data.browse import meeting_browser, meetings
from elitr_core.data.database import reading
from elitr_core.vocab import ANSWER_POSITION_NAMES
from ui.auth_ui import RESEARCHER, require_role
from ui.data import get_engine_or_stop
from ui.detail import response_detail
from ui.state import kept
from ui.tables import selected_row, show_table
from ui.text import md

require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title("Meeting browser")
engine = get_engine_or_stop()
with reading(engine) as session:
    meeting_ids = [m["meeting"] for m in meetings(session)]
if not meeting_ids:
    st.info("The database holds no meeting yet: run `python -m elitr_core init`.")
    st.stop()

meeting = st.selectbox("Meeting", meeting_ids,
                       **kept("meeting.selected", meeting_ids[0], meeting_ids))
with reading(engine) as session:
    rows = pd.DataFrame(meeting_browser(session, meeting))
if rows.empty:
    st.info("No responses stored for this meeting.")
    st.stop()

numbers = sorted(rows["question"].unique())
number = st.select_slider(md("Question number (Q{}-Q{} of {})", numbers[0], numbers[-1], meeting),
                          numbers, format_func=lambda n: f"Q{n}",
                          **kept("meeting.question", numbers[0], numbers))
question = rows[rows["question"] == number]
first = question.iloc[0]
position = first["answer_position"]
st.markdown(md("**Q{}** ({} question, answer position {}: {} of the transcript)", number,
               first["question_type"], position, ANSWER_POSITION_NAMES.get(position, "unknown")))
st.markdown(md("**QA:** {}", first["qa_text"]))
if first["conv_text"] and first["conv_text"] != first["qa_text"]:
    st.markdown(md("**Conv:** {}  \n*(a QA/Conv differentiating question)*", first["conv_text"]))
st.success(md("**Reference answer:** {}", first["reference"]))

shown_columns = [c for c in question.columns if c not in {
    "question", "question_type", "answer_position", "qa_text", "conv_text", "reference",
    "response_id"}]
score_columns = [c for c in shown_columns
                 if pd.api.types.is_numeric_dtype(question[c]) and c not in {"seed"}]
st.caption("Select a row to read the response in full below.")
table = question[shown_columns].reset_index(drop=True)
picked = show_table(table, key="meeting.responses", select=True,
                    download=f"responses-{meeting}-Q{number}")
row = selected_row(picked, table)
if row is not None:
    row = pd.concat([row, pd.Series({"meeting": meeting, "question": first["qa_text"],
                                     "reference": first["reference"]})])
response_detail(row, score_columns)
