"""What a person reads above each column: a display name per export column.

The export contract keeps its names (``ppipp_ci_low``, ``n_labelled``): the CLI, the "Full
table" downloads and every script that reads them rely on them. The pages show these labels
instead, and a table's "as shown" download writes the labels the page shows
(``ui.tables.show_table``). Every column of every export table has a label
(``tests/elitr_core/export/test_column_labels.py``); a column a page adds (``reading``,
``answers/s``) falls back to :func:`column_label`'s readable form of its name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_CI = "95% CI"
#: a column name in snake case (``abs_difference``): read with spaces; any other name a page
#: adds (an evaluator's, ``gpt-4``; ``answers/s``) is shown as it is
_SNAKE = re.compile(r"[a-z]+(_[a-z0-9]+)+")

#: The benchmark's words: keys, settings and the people and programs that score.
_KEYS = {
    "meeting": "Meeting", "question_id": "Question", "split": "Split", "setting": "Setting",
    "mode": "Mode", "seed": "Seed", "model": "Model", "question_type": "Question type",
    "answer_position": "Answer position", "evaluator": "Evaluator", "annotator": "Annotator",
    "sample": "Sample", "score": "Score", "rank": "Rank", "note": "Note", "facet": "Facet",
    "level": "Level", "setting_mode": "Setting / mode", "evaluator_a": "Evaluator A",
    "evaluator_b": "Evaluator B", "method": "Method", "reference": "Reference", "bin": "Bin",
    "raters": "Raters", "group": "Group", "judge": "Judge", "human": "Human",
    "stage": "Stage", "effect": "Effect", "statistic": "Statistic", "ranking": "Ranking",
    "run": "Run", "isolated": "Isolated run", "bucket": "Span bucket", "model_a": "Model A",
    "model_b": "Model B", "order": "Order", "verdict": "Verdict", "criterion": "Criterion",
    "variant": "Variant", "language": "Language", "backend": "Backend",
    "backend_options": "Backend options", "prompt_hash": "Prompt hash",
    "prompt_options": "Prompt options", "versions": "Versions", "status": "Status",
    "source": "Source", "config_schema": "Config version", "conversation": "Conversation",
    "turn": "Turn", "gap": "Gap (turns)", "question": "Question text", "expected": "Expected",
    "reply": "Reply", "followed": "Followed", "baseline": "Baseline", "reason": "Reason",
    "target": "Target", "design": "Design", "reached": "Reached", "icc_type": "ICC type",
    "aggregate": "Aggregate",
}
#: Counts: "n" and what is counted.
_COUNTS = {
    "n": "n", "n_seeds": "n seeds", "n_middle": "n middle", "n_other": "n other",
    "n_common": "n common", "n_targets": "n targets", "n_raters": "n raters",
    "n_annotators": "n annotators", "n_labelled": "n labelled", "n_unlabelled": "n unlabelled",
    "n_judged": "n judged", "n_human_only": "n human only", "n_ppi": "n PPI",
    "n_drawn_unscored": "n drawn, unscored", "n_models": "n models", "n_meetings": "n meetings",
    "n_conversations": "n conversations", "n_unparsed": "n unparsed",
    "n_both_orders": "n both orders", "n_questions": "n questions", "budget": "Budget",
    "replicates": "Replicates", "samples": "Samples", "wins": "Wins", "ties": "Ties",
    "losses": "Losses", "responses": "Responses", "prompt_tokens": "Prompt tokens",
    "completion_tokens": "Completion tokens", "cached_tokens": "Cached tokens",
    "max_new_tokens": "Max new tokens", "correct": "Correct", "total": "Total",
    "expected_further": "Expected further", "span_low": "Span from", "span_high": "Span to",
}
#: Statistics, named as the paper and the pages' captions name them.
_STATISTICS = {
    "mean": "Mean", "std": "SD", "median": "Median", "t": "t", "p": "p",
    "p_naive": "p (naive)", "r": "r", "tau": "Kendall tau", "icc": "ICC",
    "alpha": "Krippendorff alpha", "rating": "Rating", "strength": "Strength",
    "win_rate": "Win rate", "wilcoxon": "Wilcoxon", "estimate": "Estimate",
    "difference": "Difference", "slope": "Slope", "bias": "Bias", "noise_sd": "Noise SD",
    "weight": "Weight", "accuracy": "Accuracy", "mean_abs_error": "Mean absolute error",
    "mae": "MAE", "mse": "MSE", "qwk": "Weighted kappa", "value": "Value",
    "lambda": "Lambda", "half_width": "Half-width", "target_half_width": "Target half-width",
    "coverage": "Coverage", "human_sd": "Human SD", "residual_sd": "Residual SD",
    "assurance_human_only": "Assurance, human only", "assurance_ppi": "Assurance, PPI",
    "temperature": "Temperature", "top_p": "Top-p", "repetition_penalty": "Repetition penalty",
    "position_consistency": "Position consistency", "mean_middle": "Mean (middle)",
    "mean_other": "Mean (other)", "mean_common": "Mean (common)",
    "mean_isolated": "Mean (isolated)", "mean_interleaved": "Mean (interleaved)",
    "mean_span": "Mean span", "mean_st": "Mean (single-turn)", "mean_mt": "Mean (multi-turn)",
    "mean_labelled": "Mean (labelled)", "mean_width": "Mean CI width",
    "mean_length": "Mean length", "common_length": "Common length",
    "lc_mean": "Length-controlled mean", "judge_mean": "Judge mean",
    "human_mean": "Human mean", "ppi_mean": "PPI mean", "ppipp_mean": "PPI++ mean",
    "active_mean": "Active PPI mean", "mean_a": "Mean A", "mean_b": "Mean B",
    "completeness_a": "Completeness A", "completeness_b": "Completeness B",
    "conciseness_a": "Conciseness A", "conciseness_b": "Conciseness B",
}
#: Intervals: each bound, and the one column a page shows for both (``X_ci``).
_INTERVALS = {
    "ci": _CI, "human_ci": f"Human {_CI}", "ppi_ci": f"PPI {_CI}", "ppipp_ci": f"PPI++ {_CI}",
    "human_betting_ci": f"Human betting {_CI}", "active_ci": f"Active PPI {_CI}",
    "slope_ci": f"Slope {_CI}", "mean_a_ci": f"Mean A {_CI}", "mean_b_ci": f"Mean B {_CI}",
}
_BOUNDS = {f"{name}_{end}": f"{label} {end}" for name, label in _INTERVALS.items()
           for end in ("low", "high")}
_SEQUENCES = {
    "cs_low": "Confidence sequence low", "cs_high": "Confidence sequence high",
    "fixed_low": "Fixed-n CI low", "fixed_high": "Fixed-n CI high",
}
#: The Leaderboard's main table: the paper's settings side by side (already read as written).
_MAIN_TABLE = {name: name for name in (
    "QA-st mean", "QA-mt mean", "Conv-mt mean", "QA-st dev", "QA-st test2", "QA-mt dev",
    "QA-mt test2", "Conv-mt dev", "Conv-mt test2")}

#: Columns the pages add (a study's progress and quality, the Runs page's jobs): one-word
#: names are no snake case, and would otherwise be headed in lower case beside the labels.
_PAGE_COLUMNS = {
    "unit": "Unit", "answered": "Answered", "items": "Items", "flags": "Flags",
    "progress": "Progress", "answers/s": "Answers/s", "eta": "ETA", "done": "Done",
    "questions": "Questions", "failures": "Failures", "todo": "To do", "scored": "Scored",
    "unparsed": "Unparsed", "style": "Style", "gold_r": "Gold r",
    # the Judge audit's ranking each estimate implies (``judge_audit.ppi_rankings``)
    "rank_judge": "Rank (judge)", "rank_human": "Rank (human)", "rank_ppi": "Rank (PPI)",
    "rank_ppi++": "Rank (PPI++)",
}

#: The display name of each export column (and of each interval shown as one column).
COLUMN_LABELS: dict[str, str] = {
    **_KEYS, **_COUNTS, **_STATISTICS, **_INTERVALS, **_BOUNDS, **_SEQUENCES, **_MAIN_TABLE,
    **_PAGE_COLUMNS,
}


def column_label(name: object) -> str:
    """The heading a page shows for column ``name``: its :data:`COLUMN_LABELS` entry; else a
    snake-case name (a column a page adds: ``abs_difference``) with spaces and a capital first
    letter; else the name as it is (an evaluator's name as a column: ``gpt-4``)."""
    text = str(name)
    if text in COLUMN_LABELS:
        return COLUMN_LABELS[text]
    if not _SNAKE.fullmatch(text):
        return text
    spaced = text.replace("_", " ")
    return spaced[:1].upper() + spaced[1:]


def column_labels(names: Iterable[object]) -> dict[str, str]:
    """``{name: label}`` for ``names``; a label two columns would share is followed by the
    column's name in parentheses, so that a download's headings stay distinct."""
    texts = [str(n) for n in names]
    labels = {n: column_label(n) for n in texts}
    taken = [labels[n] for n in texts]
    return {n: f"{label} ({n})" if taken.count(label) > 1 else label
            for n, label in labels.items()}
