"""Agreement: can an LLM judge stand in for human scores? Correlations with CIs, ICC, pairs."""

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from elitr_core.export import figures, views
from elitr_core.stats import agreement, icc
from elitr_core.stats.frame import by_named_annotator
from ui import warm
from ui.analysis.agreement import ABSOLUTE, CORRELATION, ICC, PAIR, RANKING, default_pair
from ui.auth_ui import RESEARCHER, require_role
from ui.data import (
    clear_caches,
    computed,
    export_table,
    scores_frame,
    store_metrics,
)
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import LEFT_OUT_KEY, cli_arguments, describe, narrowing, sidebar_filters
from ui.messages import guarded, shown
from ui.state import kept, open_tab
from ui.tables import show_table, show_table_and_notes
from ui.text import code_span, md, plain

METHOD_KEY = "agreement.method"
A_KEY = "agreement.evaluator_a"
B_KEY = "agreement.evaluator_b"
METRICS_KEY = "agreement.compute_metrics"
SECTION_KEY = "agreement.section"
CORR_KEYS = ("evaluator_a", "evaluator_b", "method", "r", "ci_low", "ci_high", "n", "p",
             "note")


def icc_raters(scores: Any, evaluators: list[str]) -> str:
    """Who the raters of the ICC table are: the evaluators, then each human pool's annotators
    when it has individual scores; the ``raters`` column says which a row is."""
    named = by_named_annotator(scores)
    text = (f"Raters 'evaluators': the {len(evaluators)} evaluators ({', '.join(evaluators)}); "
            "targets: the responses all of them scored")
    if not named.empty:
        pools = named.groupby("evaluator", observed=True)["annotator"].unique()
        text += "".join(f"; raters '{pool} annotators': {', '.join(sorted(map(str, names)))}"
                        for pool, names in pools.items())
    return text + (". A rater who scored too few targets is left out and its note says so, "
                   "with the targets left out.")


require_role(RESEARCHER)  # checked on the server by every page, not only app.py


st.title("Agreement")
flt = sidebar_filters()
st.caption(f"Evaluators compared on the responses both scored · {describe(flt)}")

# an action on the data, not a view of it: beside the filters, so the tabs open the page
with st.sidebar.expander("N-gram metrics as evaluators"):
    st.caption("ROUGE-L and token F1 against the reference answer, stored as evaluators "
               "`rouge-l` and `token-f1` (1 + 9 x value) for the responses these filters keep; "
               "already computed scores are reused. L-Eval found they agree poorly with humans: "
               "compare them here.")
    if st.button("Compute ROUGE-L and token F1", key=METRICS_KEY):
        with guarded():
            done = store_metrics(flt)
            clear_caches()
            warm.again()  # the pages' default views computed anew with the new scores
            st.success(plain("; ".join(f"{slug}: {n} new score(s)" for slug, n in done.items())))

scores = scores_frame(flt)
evaluators = views.evaluators_in(scores)
if scores.empty:
    st.info(f"No scores under {narrowing(flt)}: change {narrowing(flt)} in the sidebar.")
    st.stop()
if len(evaluators) < 2:
    st.info(f"Only {plain(evaluators[0])} scored the responses under {narrowing(flt)}: agreement "
            f"needs two evaluators; change {narrowing(flt)} in the sidebar (the human scores "
            "are on test2, QA, single-turn)" + (", or lower the minimum number of scores."
                                                if st.session_state.get(LEFT_OUT_KEY) else "."))
    st.stop()

# one section at a time: the page draws the open tab only (the others on a click)
tab_label, tab = open_tab([CORRELATION, ABSOLUTE, ICC, PAIR, RANKING], key=SECTION_KEY)
with tab:
    if tab_label == CORRELATION:
        method = st.radio("Method", ["pearson", "spearman", "kendall"], horizontal=True,
                          **kept(METHOD_KEY, "pearson"))
        # the method shown only (Kendall's bootstrap costs most); the download is the CLI's
        # table of all three, computed when clicked
        with shown():
            corr = computed(agreement.evaluator_correlation, flt, methods=(method,))
            show_figure(figures.correlation_heatmap, corr, method, name=f"correlation-{method}")
            st.caption("95% percentile cluster-bootstrap CIs (questions resampled, 1000 "
                       "replicates, seed 0) · " + code_span(
                           f"python -m elitr_core export evaluator-correlation "
                           f"{cli_arguments(flt)}"))
            show_table_and_notes(corr, key="agreement.corr-table", keys=CORR_KEYS,
                                 label=("evaluator_a", "evaluator_b"),
                                 download="evaluator-correlation",
                                 export=Export(partial(export_table, "evaluator-correlation",
                                                       flt), "evaluator-correlation"))
    elif tab_label == ABSOLUTE:
        st.caption("Absolute agreement of each pair of evaluators: mean absolute error and "
                   "quadratic-weighted kappa.")
        with shown():
            mae = computed(agreement.agreement_table, flt)
            show_table(mae, key="agreement.mae-table", download="agreement")
    elif tab_label == ICC:
        with shown():
            icc_frame = export_table("icc", flt)
            st.caption("Reading after Koo & Li (2016): < 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 "
                       "good, > 0.9 excellent.")
            st.text(icc_raters(scores, evaluators))  # plain text: annotator names are imported
            show_table_and_notes(icc.with_reading(icc_frame), key="agreement.icc-table",
                                 label=("raters", "group"), download="icc",
                                 export=Export(icc_frame, "icc"))
    elif tab_label == PAIR:
        left, right = st.columns(2)
        first_a, first_b = default_pair(evaluators)
        a = left.selectbox("Evaluator A (judge)", evaluators, **kept(A_KEY, first_a, evaluators))
        b = right.selectbox("Evaluator B (reference)", evaluators,
                            **kept(B_KEY, first_b, evaluators))
        with shown():
            pairs = computed(views.pair_scores, flt, a=a, b=b)
            with shown():
                metrics = computed(agreement.agreement_metrics, flt, a=a, b=b)
                m1, m2, m3 = st.columns(3)
                row = metrics.iloc[0]
                m1.metric("Responses both scored", f"{int(row['n']):,}")
                m2.metric("MAE", "—" if pd.isna(row["mae"]) else f"{row['mae']:.2f}")
                m3.metric("Quadratic-weighted kappa",
                          "—" if pd.isna(row["qwk"]) else f"{row['qwk']:.3f}")
                if row["note"]:
                    st.caption(plain(row["note"]))
            show_figure(figures.pair_scatter, pairs, a, b, name=f"scatter-{a}-{b}")

            st.markdown(md("**Bias of {0} relative to {1} per model** (mean of {0} - {1}, 95% CI)",
                           a, b))
            with shown():
                bias = computed(agreement.judge_bias, flt, judge=a, human=b)
                show_figure(figures.bias_plot, bias, name=f"bias-{a}-{b}")
                show_table(bias, key="agreement.bias-table", download=f"bias-{a}-{b}",
                           download_key="download.bias")
    else:
        st.caption("Kendall tau between the model rankings of each pair of evaluators.")
        with shown():
            ranks = computed(agreement.ranking_table, flt, evaluators=tuple(evaluators))
            show_table(ranks, key="agreement.rank-table", download="ranking-agreement",
                       download_key="download.ranking")
            if ranks.attrs.get("skipped"):
                st.caption(f"{len(ranks.attrs['skipped'])} pair(s) left out: fewer than 3 "
                           "models shared.")
