"""Battles: pairwise judgments (CREAM, L-Eval): win matrix, ratings, win rate, key facts."""

from dataclasses import replace

import streamlit as st

from elitr_core.data.database import reading
from elitr_core.export import pairwise, pairwise_figures
from elitr_core.stats.pairwise import defined_criteria
from ui.analysis.battles import RATINGS, TITLE, battle_models, choices, table
from ui.auth_ui import RESEARCHER, require_role
from ui.data import database_url, engine
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import cli_arguments, describe, sidebar_filters
from ui.messages import shown
from ui.state import kept
from ui.tables import show_table
from ui.text import code_span, md, plain

JUDGE_KEY = "battles.judge"
CRITERION_KEY = "battles.criterion"
BASELINE_KEY = "battles.baseline"
JUDGMENT_KEY = "battles.judgment"
REFERENCE_KEY = "battles.reference"
#: the pairwise table's columns shown first (criterion, position consistency and the notes
#: behind its column picker)
PAIR_KEYS = ("evaluator", "model_a", "model_b", "n", "n_unparsed", "wins", "ties", "losses",
             "mean_a", "mean_a_ci_low", "mean_b", "mean_b_ci_low")


def key_facts(judgment_id):  # type: ignore[no-untyped-def]
    with reading(engine()) as session:
        return pairwise.key_fact_view(session, judgment_id)


require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title(TITLE)
flt = replace(sidebar_filters(), evaluators=None)  # the judge is chosen below
url = database_url()
context = f"Pairwise judgments (`judge --style cream|battle`) · {describe(flt)}"

with shown(stop=True):
    judgments = table(url, "pairwise-judgments", flt)
# one row of controls above the win matrix
pick, pick_criterion, right = st.columns([1, 1, 2], vertical_alignment="bottom")
judges = sorted(judgments["evaluator"].unique())
judge = pick.selectbox("Pairwise judge", judges, **kept(JUDGE_KEY, judges[0], judges))
mine = judgments[judgments["evaluator"] == judge]
criteria = defined_criteria(mine)
criterion = pick_criterion.radio("Criterion", criteria, horizontal=True, format_func=plain,
                                 **kept(CRITERION_KEY, criteria[0], criteria))
right.caption(context)
args = cli_arguments(flt)

st.subheader("Win matrix")
pairs = None
with shown():
    pairs = table(url, "pairwise", flt, criterion)
    matrix = pairwise.win_matrix(pairs, judge, criterion)
    show_figure(pairwise_figures.win_matrix_heatmap, matrix, f"Win share, {criterion} ({judge})",
                name=f"win-matrix-{judge}-{criterion}")
    st.caption("Full table: same bytes as "
               + code_span(f"python -m elitr_core export pairwise --criterion {criterion} {args}")
               + ": wins of model_a, CREAM means with 95% cluster-bootstrap CIs, share "
               "of judgments asked in both orders that agree (position consistency, under "
               "Columns).")
    # the counts and CREAM means first, so that they fit a 1366 px screen
    show_table(pairs, key="battles.pairs-table", keys=PAIR_KEYS,
               download=f"pairwise-{criterion}", export=Export(pairs, "pairwise"))

st.subheader("Ratings")
if pairs is not None:
    summary, low = pairwise.position_summary(pairs, judge, criterion)
    (st.warning if low else st.caption)(plain(summary))
st.caption("Elo is the maximum-likelihood rating, Bradley-Terry on the Elo scale (1000 + "
           "400/ln 10 x strength): no match order, no seed, the same ranking as Bradley-Terry. "
           "CREAM's order-based Elo: add --elo median to the command. An empty interval has "
           "its cause in note (a sparse model, every battle a tie, a judge that always "
           "prefers one position, one question); groups of models that never met are rated "
           "apart, each on its own scale.")
# one under the other: side by side, at 1366 px, the download buttons shrank to "J." and the
# figure's toolbar covered its title
for name, value, label in RATINGS:
    with shown():
        ratings = table(url, name, flt, criterion)
        rows = ratings[ratings["evaluator"] == judge]
        show_figure(pairwise_figures.rating_plot, rows, value, f"{label}, {criterion} ({judge})",
                    name=f"{name}-{judge}-{criterion}")
        cli = "elo --source pairwise" if name == "elo" else name
        st.caption(code_span(f"python -m elitr_core export {cli} --criterion {criterion} {args}"))
        show_table(ratings, key=f"battles.{name}-table", download=f"{name}-pairwise-{criterion}",
                   export=Export(ratings, "elo-pairwise" if name == "elo" else name))

st.subheader("Win rate against a baseline (L-Eval)")
models = battle_models(mine)
baseline = st.selectbox("Baseline", models, **kept(BASELINE_KEY, models[0], models))
with shown():
    rates = table(url, "winrate", flt, criterion, baseline)
    show_figure(pairwise_figures.win_rate_bars, rates[rates["evaluator"] == judge],
                f"Win rate against {baseline} ({judge}, {criterion})",
                name=f"winrate-{judge}-{criterion}")
    st.caption(code_span(f"python -m elitr_core export winrate --baseline '{baseline}' "
                    f"--criterion {criterion} {args}"))
    show_table(rates, key="battles.winrate-table", download=f"winrate-{criterion}",
               export=Export(rates, "winrate"))

st.subheader("Agreement with the human ranking")
reference = st.text_input("Human evaluator", **kept(REFERENCE_KEY, "gold-human"))
with shown():
    tau = table(url, "pairwise-agreement", flt, criterion, None, reference)
    st.caption("Kendall tau between each ranking and the models' mean human score on the "
               "battles' questions; 95% interval from resampled questions. Full table: same "
               "bytes as "
               + code_span(f"python -m elitr_core export pairwise-agreement --reference "
                      f"{reference} --criterion {criterion} {args}"))
    show_table(tau, key="battles.agreement-table", download=f"pairwise-agreement-{criterion}",
               export=Export(tau, "pairwise-agreement"))

if {"completeness", "conciseness"} & set(defined_criteria(mine)):
    st.subheader("Key facts of one comparison (CREAM)")
    with shown():
        options = choices(url, flt, judge)
        labels = dict(zip(options["id"], options["label"], strict=True))
        chosen = st.selectbox("Judgment", list(labels), format_func=lambda i: labels[i],
                              **kept(JUDGMENT_KEY, next(iter(labels)), list(labels)))
        if chosen is not None:  # None only without judgments to pick
            with shown():
                view = key_facts(int(chosen))
                row = options[options["id"] == chosen].iloc[0]
                st.caption(f"Completeness {plain(row.model_a)} {view['completeness_a']:.2f} · "
                           f"{plain(row.model_b)} {view['completeness_b']:.2f}; conciseness "
                           f"{view['conciseness_a']:.2f} · {view['conciseness_b']:.2f}")
                facts = view["facts"].rename(columns={"a": f"{row.model_a} (sentences)",
                                                      "b": f"{row.model_b} (sentences)"})
                show_table(facts, key="battles.facts-table", download=f"key-facts-{chosen}",
                           download_key="download.key_facts")
                for column, model, sentences in zip(st.columns(2), (row.model_a, row.model_b),
                                                    (view["sentences_a"], view["sentences_b"]),
                                                    strict=True):
                    column.markdown(md("**{}**", model))
                    column.text("\n".join(f"{i}. {s}" for i, s in enumerate(sentences, 1))
                                or "(empty answer)")
