"""Judge audit: a few human scores turned into a trustworthy ranking, and what moves the judge."""

import streamlit as st

from elitr_core.export import audit_figures, views
from elitr_core.export.judge_audit import AuditOptions, ppi_rankings
from elitr_core.stats.intervals import small_sample_warning
from elitr_core.stats.recalibration import recalibrated_scores
from elitr_core.vocab import ANSWER_POSITIONS_NOTE
from ui.analysis.judge_audit import (
    BUDGET,
    CONSISTENCY,
    DESIGNS,
    EFFECTS,
    LENGTH,
    PPI,
    RECALIBRATION,
    SECTIONS,
)
from ui.auth_ui import RESEARCHER, require_role
from ui.data import computed, export_table, scores_frame
from ui.defaults import DEFAULT_BUDGET, DEFAULT_HALF_WIDTH, DEFAULT_HUMAN, DEFAULT_JUDGE
from ui.downloads import Export
from ui.figures import show_figure
from ui.filters import describe, export_command, sidebar_filters
from ui.messages import shown
from ui.state import KEPT_SUFFIX, kept, open_tab
from ui.tables import show_table
from ui.text import code_span, plain

JUDGE_KEY = "audit.judge"
HUMAN_KEY = "audit.human"
HALF_WIDTH_KEY = "audit.half_width"
BUDGET_KEY = "audit.budget"
SECTION_KEY = "audit.section"


require_role(RESEARCHER)  # checked on the server by every page, not only app.py

st.title("Judge audit")
flt = sidebar_filters()

evaluators = views.evaluators_in(scores_frame(flt))
if len(evaluators) < 2:
    st.info("The judge audit needs a judge and a human evaluator: widen the filters.")
    st.stop()
# one row of controls; the planner's and the designs' own numbers sit in their tabs
pick_judge, pick_human, context = st.columns([1, 1, 2], vertical_alignment="bottom")
judge = pick_judge.selectbox("Judge (scores every response)", evaluators,
                             **kept(JUDGE_KEY, DEFAULT_JUDGE if DEFAULT_JUDGE in evaluators
                                    else evaluators[0], evaluators))
humans = [e for e in evaluators if e != judge]
human = pick_human.selectbox("Human (scores a subset)", humans,
                             **kept(HUMAN_KEY, DEFAULT_HUMAN if DEFAULT_HUMAN in humans
                                    else humans[0], humans))
context.caption(f"Judge against human, model by model · {describe(flt)}")
identity = f"--judge {judge} --human {human}"  # every table's command names both


def options(half_width: float | None = None, budget: int | None = None) -> AuditOptions:
    """The audit's options: the planner's half-width and the designs' budget as last set in
    their tabs (drawn only there), unless given."""
    return AuditOptions(
        judge=judge, human=human,
        half_width=float(half_width if half_width is not None else
                         st.session_state.get(HALF_WIDTH_KEY + KEPT_SUFFIX, DEFAULT_HALF_WIDTH)),
        budget=int(budget if budget is not None else
                   st.session_state.get(BUDGET_KEY + KEPT_SUFFIX, DEFAULT_BUDGET)))


BUILDERS = {table: build for tables in SECTIONS.values() for table, build in tables}
#: the columns shown first of the widest tables, so that they fit a 1366 px screen (the
#: others, PPI's mean, lambda and the notes among them, behind the table's column picker)
KEYS = {"ppi": ("split", "setting", "mode", "model", "n_labelled", "judge_mean", "human_mean",
                "human_ci_low", "ppipp_mean", "ppipp_ci_low"),
        "ppi-active": ("split", "setting", "mode", "model", "n_labelled", "n_drawn_unscored",
                       "judge_mean", "active_mean", "active_ci_low"),
        "ppi-budget": ("model", "n_labelled", "n_human_only", "n_ppi", "assurance_ppi",
                       "note")}


def section(table: str, explanation: str, extra: str = "", title: str = "",
            audit: AuditOptions | None = None):
    """The figure (its builder in ``SECTIONS``), the table and its downloads, then the
    explanation with the CLI command under them; returns the table (None when it cannot be
    computed: a message says why)."""
    if title:
        st.subheader(title)
    frame = None
    with shown():
        frame = export_table(table, flt, audit=audit or options())
    if frame is not None:
        if (build := BUILDERS.get(table)) is not None:  # ppi-active: a table only
            figure(build, frame, f"{table}-{judge}-{human}")
        # rows with human scores first (the full table keeps the export's order)
        show_table(views.labelled_first(frame), key=f"audit.{table}-table",
                   keys=KEYS.get(table, ()), download=table, export=Export(frame, table))
    st.caption(explanation + " Full table: same bytes as "
               + code_span(export_command(table, identity, extra, flt=flt)))
    return frame


def figure(build, frame, name: str) -> None:
    show_figure(build, frame, name=name)  # cached: a rerun does not rebuild the figure


# one section at a time: the page draws the open tab only (the others on a click)
tab_label, tab = open_tab(list(SECTIONS), key=SECTION_KEY)
with tab:
    if tab_label == PPI:
        ppi = section("ppi",
                      "Per model: the judge mean over all its responses, the human mean over "
                      "the human-scored ones, and prediction-powered means (PPI, and PPI++ with "
                      "the power-tuning lambda) that add the judge's view of the rest to the "
                      "human correction: unbiased, with 95% small-sample (Student t) "
                      "intervals, and the human mean's betting interval (Human betting 95% CI, "
                      "under Columns), built for scores bounded by 1..10: wider, but it keeps "
                      "95% where the t intervals do not (few human scores, or scores piled up "
                      "at one end of the scale).")
        if ppi is not None:
            if warning := small_sample_warning(ppi["n_labelled"], ppi["note"]):
                st.warning(plain(warning))
            st.caption("The ranking each estimate implies (1 = best):")
            show_table(ppi_rankings(ppi), key="audit.rankings-table", download="ppi-rankings")
        if ":" in human:  # the evaluator of a sampled study (gold-human:NAME)
            active = section("ppi-active",
                             "The study's inverse-probability-weighted means: each human score "
                             "weighted by the inverse of the probability its response was drawn "
                             "and scored; drawn responses not yet scored are counted per model "
                             "(see the note). The PPI table above treats the same scores as a "
                             "uniform sample: for a sampled study, read this one.",
                             title="Sampled study")
            if active is not None and (warning := small_sample_warning(active["n_labelled"])):
                st.warning(plain(warning))
    elif tab_label == BUDGET:
        half_width = st.columns([1, 3])[0].number_input(
            "Target half-width of the 95% interval", 0.05, 5.0, step=0.05,
            **kept(HALF_WIDTH_KEY, DEFAULT_HALF_WIDTH))
        section("ppi-budget",
                "Human scores each model needs for the target half-width: human-only versus "
                "PPI++ (the other judged responses stay unlabelled), from the variances "
                "observed so far.", f" --half-width {half_width:g}",
                audit=options(half_width=half_width))
    elif tab_label == DESIGNS:
        budget = st.columns([1, 3])[0].number_input(
            "Human scores per simulated study", 2, 10000, step=10,
            **kept(BUDGET_KEY, DEFAULT_BUDGET))
        section("ppi-designs",
                "On the responses the human scored in full, 1,000 smaller studies of the "
                "budget: error against the full human mean, interval width and coverage of "
                "human-only, PPI, PPI++ (uniform sample) and active sampling (inverse-"
                "probability-weighted PPI, judge scores mid-scale drawn more often).",
                f" --budget {int(budget)}", audit=options(budget=int(budget)))
    elif tab_label == RECALIBRATION:
        if section("recalibration",
                   "Monotone (isotonic) maps from the judge's scores to the human scale, "
                   "cross-fitted by question folds (a question never in its own fit): the "
                   "least-squares fit (after-l2, targets the squared error) and the median fit "
                   "(after-l1, targets the absolute error); out-of-fold MAE, squared error, "
                   "bias and quadratic-weighted kappa before and after each.") is not None:
            with shown():
                scores = computed(recalibrated_scores, flt, judge=judge, human=human)
                figure(audit_figures.recalibration_plot, scores,
                       f"recalibration-{judge}-{human}")
    elif tab_label == EFFECTS:
        section("judge-effects",
                "Residual judge - human against response length (slope per 100 words, partial "
                "correlation given the human score), on the judge's own model family versus "
                "others, and by answer position; 95% cluster-bootstrap intervals. "
                + plain(ANSWER_POSITIONS_NOTE))
    elif tab_label == LENGTH:
        section("length-controlled",
                "The judge's score modelled with the response length (one slope for all "
                "models, per 100 words) and each model compared at the common length, the "
                "mean length of all judged responses (AlpacaEval 2.0's length control applied "
                "to absolute scores); 95% cluster-bootstrap intervals over questions.")
        section("length-controlled-tau",
                "Does length control bring the judge's ranking closer to the human's? Kendall "
                "tau of the human means with the raw judge means and with the "
                "length-controlled scores, over the models the human scored.",
                title="Agreement with the human ranking")
    elif tab_label == CONSISTENCY:
        section("self-consistency",
                "For a judge run with several samples: Krippendorff's alpha among its samples, "
                "and the correlation with the human of one sample versus the mean of k.")
    else:
        section("turn-effect",
                "Multi-turn runs: Kendall's tau between the turn index and the score per model "
                "(interval and p: bootstrap over meetings; p_naive: Kendall's test over "
                "responses taken as independent). Negative: later turns score lower.",
                title="Score along the conversation")
        section("st-vs-mt",
                "The same question asked alone and inside the conversation: mean of mt - st "
                "per model, bootstrap interval over meetings, p from a sign-flip test over "
                "meetings (p_naive: Wilcoxon over questions taken as independent). Needs "
                "both modes in the filters.", title="Single-turn versus multi-turn")
        if views.has_interleaved(scores_frame(flt)):
            section("interleaving",
                    "The same question asked isolated (the model's mt run in the same setting, "
                    "and its QA-st run) and inside an interleaved conversation of K meetings "
                    "(mode int2/int3, `generate --interleave`): mean of interleaved - isolated, "
                    "interval and sign-flip p over conversations (the K meetings asked together "
                    "share a cause, so the conversation is the unit; with few conversations "
                    "`note` says p cannot reach 0.05).", title="Isolated versus interleaved")
            section("interleaving-span",
                    "Interleaved answers by memory span (tokens between the transcript and the "
                    "question) in 4k buckets, and the trend: score per 1,000 tokens, OLS with "
                    "errors clustered by conversation (t-test on conversations - 1 degrees of "
                    "freedom).",
                    title="Score against memory span")
        else:
            st.subheader("Isolated versus interleaved")
            st.info("No interleaved run under the filters: `generate --interleave 2 --span "
                    "TOKENS` makes one (mode int2); then the same questions isolated versus "
                    "interleaved, and the score against memory span, show here.")
