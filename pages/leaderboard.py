"""Leaderboard: the paper's main table (settings side by side, dev / test2 / mean) per evaluator."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from elitr_core.export import figures, views
from elitr_core.export.groups import parse_groups
from elitr_core.vocab import ANSWER_POSITIONS_NOTE, LEADERBOARD_MEAN_NOTE
from ui.analysis.leaderboard import (
    DIFFERENTIATING,
    FAMILIES,
    FIGURE,
    LONG,
    TWO_MODELS,
    default_evaluator,
    figure_splits,
    main_table,
)
from ui.auth_ui import RESEARCHER, require_role
from ui.data import export_table
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import cli_arguments, describe, export_command, sidebar_filters
from ui.messages import shown
from ui.state import kept, open_tab
from ui.tables import show_table
from ui.text import code_span, md, plain

EVALUATOR_KEY = "leaderboard.evaluator"
SPLIT_KEY = "leaderboard.figure_split"
GROUPS_KEY = "leaderboard.groups"
RANK_KEY = "leaderboard.rank_by"
SECTION_KEY = "leaderboard.section"


def main_keys(table: pd.DataFrame) -> list[str]:
    """The main table's columns a 1366 px screen shows: rank, the three means and each
    setting's test2 mean (the dev ones behind the table's column picker)."""
    return ["rank", *[c for c in views.means_first(table) if not str(c).endswith(" dev")]]


#: the Two models table's columns shown first, so that it fits a 1366 px screen
DIFFERENCE_KEYS = ("setting", "mode", "evaluator", "n", "n_meetings", "mean_a", "mean_b",
                   "difference", "ci_low", "p")
#: the Differentiating tab's columns, in the paper's order
SETTING_MODE_ORDER = ("QA-st", "QA-mt", "Conv-mt")


require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title("Leaderboard")
flt = sidebar_filters()

with shown(stop=True):
    board = export_table("leaderboard", flt)

evaluators = views.evaluators_in(board)
# one row of controls above the table; what the table means and its command come under it
pick, rank, context = st.columns([1, 1, 2], vertical_alignment="bottom")
evaluator = pick.selectbox("Evaluator", evaluators,
                           **kept(EVALUATOR_KEY, default_evaluator(evaluators), evaluators))
mean, std = main_table(flt, evaluator)
several_seeds = bool(std.notna().to_numpy().any())
rank_by = rank.selectbox("Rank by", list(mean.columns),
                         **kept(RANK_KEY, "QA-st mean" if "QA-st mean" in mean.columns
                                else mean.columns[0], list(mean.columns)))
context.caption(md("**Main table ({})** · Mean 1-10 score per model, scored by {}", evaluator,
                   evaluator) + f" · {describe(flt)}")
ranked = views.ranked(mean, rank_by)
# the full table is the export's: the means in the rank order shown
exported = views.main_table(board, evaluator, rank_by)
command = export_command("main-table", f"--evaluator {evaluator}", f"--rank-by '{rank_by}'",
                         flt=replace(flt, evaluators=None))
if several_seeds:
    main = views.mean_std_labels(mean, std)
    shown_main = main.loc[ranked.index].assign(rank=ranked["rank"])[
        ["rank", *views.means_first(main)]]
else:
    shown_main = ranked[["rank", *views.means_first(mean)]]
show_table(shown_main, key="leaderboard.main-table", index=True, keys=main_keys(shown_main),
           download=f"leaderboard-main-{evaluator}", download_key="download.main",
           export=Export(exported, "main-table"))
st.caption(("Mean ± sample standard deviation over seeds (the full table holds the means). "
            if several_seeds else "") + "Click a column title to sort. "
           + plain(LEADERBOARD_MEAN_NOTE) + " Full table: same bytes as " + code_span(command))
# a model none of whose scores of this evaluator counts (lapsed, excluded, unparsed) has a
# row with n 0 and its note (export.unusable): say why its cells are empty
lost = board[(board["evaluator"] == evaluator) & (board["note"] != "")]
if len(lost):
    st.warning(md("  \n".join(["{}: {}"] * len(lost)),
                  *[v for row in lost[["model", "note"]].itertuples(index=False) for v in row]))

# one section at a time: the page draws the open tab only (the others on a click)
tab_label, tab = open_tab([FIGURE, LONG, FAMILIES, DIFFERENTIATING, TWO_MODELS], key=SECTION_KEY)
with tab:
    if tab_label == FIGURE:
        splits = figure_splits(board)
        split = st.radio("Split of the figure", splits, horizontal=True, format_func=plain,
                         **kept(SPLIT_KEY, splits[-1], splits))
        show_figure(figures.leaderboard_bars, board, evaluator, split,
                    name=f"leaderboard-{evaluator}-{split}")
    elif tab_label == LONG:
        st.caption("Long table (export contract): same bytes as "
                   + code_span(f"python -m elitr_core export leaderboard {cli_arguments(flt)}")
                   + ". " + plain(LEADERBOARD_MEAN_NOTE))
        show_table(board, key="leaderboard.long-table",
                   keys=("model", "split", "setting", "mode", "evaluator", "mean", "std", "n"),
                   download="leaderboard", export=Export(board, "leaderboard"))
    elif tab_label == FAMILIES:
        st.caption("Breakdown by question type and answer position of user-defined model "
                   "groups (one NAME=MODEL,MODEL per line), pooled over their members' "
                   f"responses. {plain(ANSWER_POSITIONS_NOTE)}")
        spec = st.text_area("Groups", **kept(GROUPS_KEY, "\n".join(views.DEFAULT_FAMILIES)))
        with shown():
            groups = parse_groups([line for line in spec.splitlines() if line.strip()])
            if groups:
                families = export_table("breakdown", flt, groups=groups)
                names = {name for name, _ in groups}
                families = families[families["model"].isin(names)].reset_index(drop=True)
                show_table(families, key="leaderboard.families-table",
                           download="breakdown-families", download_key="download.families")
    elif tab_label == DIFFERENTIATING:
        st.caption("The QA/Conv differentiating questions, whose Conv phrasing relies on "
                   "earlier turns (16 dev + 17 test2): mean score in QA-st, QA-mt and Conv-mt, "
                   "pooled over dev and test2. Full table: same bytes as "
                   + code_span(f"python -m elitr_core export differentiating {cli_arguments(flt)}"))
        with shown():
            differentiating = export_table("differentiating", flt)
            table = differentiating[differentiating["evaluator"] == evaluator]
            wide = table.pivot_table(index="model", columns="setting_mode", values="mean")
            show_table(wide[[c for c in SETTING_MODE_ORDER if c in wide.columns]
                            + [c for c in wide.columns if c not in SETTING_MODE_ORDER]],
                       key="leaderboard.differentiating-table", index=True,
                       download="differentiating",
                       export=Export(differentiating, "differentiating"))
    elif flt.models is None or len(flt.models) != 2:
        st.caption("Pick exactly two models in the sidebar (a model and its retrieval run "
                   "`MODEL (bm25)`, say) for their paired difference per question.")
    else:
        st.caption("Mean of model_b − model_a over the questions both answered. A meeting's "
                   "questions share its transcript, so the 95% bootstrap interval and p (a "
                   "sign-flip test) take the meeting as the unit; p_naive (Wilcoxon over "
                   "questions) treats every question as independent. Full table: same bytes as "
                   + code_span("python -m elitr_core export model-difference "
                               + cli_arguments(flt)))
        with shown():
            difference = export_table("model-difference", flt)
            if len(difference):  # one pair: its names here, their columns under Columns
                pair = difference.iloc[0]
                st.caption(md("model_a is {}, model_b {}; the notes, wilcoxon and p_naive are "
                              "under Columns.", pair["model_a"], pair["model_b"]))
            show_table(difference, key="leaderboard.difference-table", keys=DIFFERENCE_KEYS,
                       download="model-difference", export=Export(difference, "model-difference"))
