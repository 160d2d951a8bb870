"""Model drilldown: where one model fails, question by question."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from elitr_core.export import figures, views
from elitr_core.vocab import ANSWER_POSITION_NAMES, ANSWER_POSITIONS, ANSWER_POSITIONS_NOTE
from ui.analysis.drilldown import BREAKDOWN, DISAGREEMENTS, LOST_IN_MIDDLE, QUESTIONS
from ui.auth_ui import RESEARCHER, require_role
from ui.data import export_table, question_table_frame, scores_frame
from ui.defaults import DEFAULT_HUMAN, DEFAULT_JUDGE, DEFAULT_MODEL
from ui.detail import response_detail
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import describe, sidebar_filters
from ui.messages import shown
from ui.state import kept, open_tab
from ui.tables import selected_row, show_table
from ui.text import md, plain

MODEL_KEY = "drilldown.model"
FACET_KEY = "drilldown.facet"
TYPES_KEY = "drilldown.question_types"
POSITIONS_KEY = "drilldown.answer_positions"
MEETINGS_KEY = "drilldown.meetings"
TEXT_KEY = "drilldown.text"
JUDGE_KEY = "drilldown.judge"
HUMAN_KEY = "drilldown.human"
SECTION_KEY = "drilldown.section"


require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title("Model drilldown")
flt = sidebar_filters()
models = sorted(scores_frame(flt)["model"].dropna().unique().tolist())
if not models:
    st.info("No scores match these filters: widen them in the sidebar.")
    st.stop()
pick, context = st.columns([1, 3], vertical_alignment="bottom")
model = pick.selectbox("Model", models,
                       **kept(MODEL_KEY, DEFAULT_MODEL if DEFAULT_MODEL in models else models[0],
                              models))
model_flt = replace(flt, models=(model,))
context.caption(f"{describe(model_flt)}; pooled over what the filters keep")

def filtered_questions() -> tuple[pd.DataFrame, list[str]]:
    """The model's responses narrowed by the question filters (drawn here, kept between the
    Questions and Largest disagreements tabs), and the evaluators with scores among them."""
    questions = question_table_frame(model_flt)
    if questions.empty:
        st.info(md("No response of {} under these filters.", model))
        st.stop()
    score_columns = [c for c in views.evaluators_in(scores_frame(model_flt))
                     if c in questions.columns]
    c1, c2, c3, c4 = st.columns(4)
    types = sorted(questions["question_type"].unique())
    meetings = sorted(questions["meeting"].unique())
    rows = views.filter_questions(
        questions,
        question_types=c1.multiselect("Question type", types, placeholder="all",
                                      **kept(TYPES_KEY, [], types)),
        answer_positions=c2.multiselect("Answer position", list(ANSWER_POSITIONS),
                                        help=plain(ANSWER_POSITIONS_NOTE),
                                        format_func=lambda p: f"{p} ({ANSWER_POSITION_NAMES[p]})",
                                        placeholder="all",
                                        **kept(POSITIONS_KEY, [], list(ANSWER_POSITIONS))),
        meetings=c3.multiselect("Meeting", meetings, placeholder="all",
                                **kept(MEETINGS_KEY, [], meetings)),
        text=c4.text_input("Text contains", **kept(TEXT_KEY, "")),
    )
    st.caption(f"{len(rows):,} of {len(questions):,} responses")
    return rows, score_columns


# one section at a time: the page draws the open tab only (the others on a click)
tab_label, tab = open_tab([BREAKDOWN, LOST_IN_MIDDLE, QUESTIONS, DISAGREEMENTS], key=SECTION_KEY)
with tab:
    if tab_label == BREAKDOWN:
        with shown():
            breakdown = export_table("breakdown", model_flt)
            facet = st.radio("Facet", ["question_type", "answer_position"], horizontal=True,
                             format_func=lambda f: plain(f.replace("_", " ")),
                             **kept(FACET_KEY, "question_type"))
            show_figure(figures.breakdown_bars, breakdown, facet,
                        name=f"breakdown-{model}-{facet}")
            show_table(breakdown, key="drilldown.breakdown-table",
                       download=f"breakdown-{model}", export=Export(breakdown, "breakdown"))
        st.caption("Mean score by question type and answer position. "
                   + plain(ANSWER_POSITIONS_NOTE))
    elif tab_label == LOST_IN_MIDDLE:
        with shown():
            lim = export_table("lost-in-middle", model_flt)
            show_table(lim.assign(effect=lim["p"] < 0.05), key="drilldown.lim-table",
                       download=f"lost-in-middle-{model}", export=Export(lim, "lost-in-middle"))
        st.caption("One-tailed Welch t-test, H1: middle-position questions score lower than "
                   f"the others; p < .05 marks the effect. {plain(ANSWER_POSITIONS_NOTE)}")
    elif tab_label == QUESTIONS:
        shown_rows, score_columns = filtered_questions()
        st.caption("Select a row to read it in full below.")
        picked = show_table(shown_rows, key="drilldown.questions-table", select=True,
                            keys=("question", *score_columns, "response", "reference"),
                            download=f"questions-{model}", download_key="download.questions",
                            export=Export(shown_rows))
        response_detail(selected_row(picked, shown_rows), score_columns)
    else:
        shown_rows, score_columns = filtered_questions()
        if len(score_columns) < 2:
            st.info("Disagreements need two evaluators with scores for this model.")
            st.stop()
        left, right = st.columns(2)
        judge = left.selectbox(
            "Judge", score_columns,
            **kept(JUDGE_KEY, DEFAULT_JUDGE if DEFAULT_JUDGE in score_columns else score_columns[0],
                   score_columns))
        human = right.selectbox(
            "Human", score_columns,
            **kept(HUMAN_KEY, DEFAULT_HUMAN if DEFAULT_HUMAN in score_columns
                   else score_columns[-1], score_columns))
        with shown():
            worst = views.largest_disagreements(shown_rows, judge, human)
            st.caption(f"|{plain(judge)} - {plain(human)}|, largest first; {len(worst):,} "
                       "responses scored by both")
            picked_worst = show_table(worst, key="drilldown.worst-table", select=True,
                                      keys=("abs_difference", judge, human, "question",
                                            "response"),
                                      download=f"disagreements-{model}-{judge}-{human}",
                                      download_key="download.worst", export=Export(worst))
            response_detail(selected_row(picked_worst, worst), score_columns)
