"""The benchmark's words, in one place: splits, settings, modes, labels and export columns.

Everything that names a part of ELITR-Bench (docs/protocol.md) imports it from here, so the CLI's
choices, the pages' filters, the statistics and the exports never spell a word differently.
The ``scores`` export (the export contract, :data:`EXPORT_COLUMNS`) is the long format every
statistic takes as input: one row per scored (response, evaluator, annotator, sample).
"""

#: The benchmark's splits, settings (QA: questions alone; Conv: conversational phrasing) and
#: modes (st: each question alone; mt: the meeting's questions as one conversation).
SPLITS: tuple[str, ...] = ("dev", "test2")
SETTINGS: tuple[str, ...] = ("qa", "conv")
MODES: tuple[str, ...] = ("st", "mt")
#: Setting and mode pairs no run has, and why: ``generate`` refuses them, and so does every
#: import (benchmark files, harness logs), so no stored run holds one.
REFUSED_PAIRS: dict[tuple[str, str], str] = {
    ("conv", "st"): "conv questions rely on the previous turns (the benchmark reports QA-st, "
                    "QA-mt and Conv-mt)"}
#: Interleaved conversations (the LTM benchmark's method): K meetings' questions in one
#: conversation, mode ``int2`` or ``int3`` (``generation/interleave.py``).
INTERLEAVE_KS: tuple[int, ...] = (2, 3)
INTERLEAVED_MODES: tuple[str, ...] = tuple(f"int{k}" for k in INTERLEAVE_KS)
QUESTION_TYPES: tuple[str, ...] = ("who", "what", "when", "howmany")
#: Where the answer lies in the transcript: beginning, middle, end, spread (several places).
ANSWER_POSITIONS: tuple[str, ...] = ("B", "M", "E", "S")
ANSWER_POSITION_NAMES: dict[str, str] = {"B": "beginning", "M": "middle", "E": "end",
                                         "S": "spread over several places"}
#: The answer positions explained, for a caption next to where they appear.
ANSWER_POSITIONS_NOTE = "Answer position: where the answer lies in the transcript (" + ", ".join(
    f"{code} {name}" for code, name in ANSWER_POSITION_NAMES.items()) + ")."
#: The 10-point rubric's range.
SCORE_MIN, SCORE_MAX = 1.0, 10.0

#: Splits averaged into the ``split == "mean"`` leaderboard rows, as in the paper's main table.
MEAN_SPLITS: tuple[str, ...] = SPLITS
#: Display order of splits in tables (``mean`` is the leaderboard's dev/test2 mean).
SPLIT_ORDER: tuple[str, ...] = (*SPLITS, "mean")
#: Display order of the paper's settings (setting, mode).
SETTING_MODE_ORDER: tuple[tuple[str, str], ...] = (("qa", "st"), ("qa", "mt"), ("conv", "mt"))
#: The paper's names of the settings (QA-st, Conv-mt, ...); any other setting (a summary
#: run's ``summary``) keeps its own name.
SETTING_LABELS: dict[str, str] = {"qa": "QA", "conv": "Conv"}
#: Display labels of the filter values.
LABELS: dict[str, str] = {**SETTING_LABELS, "st": "single-turn (st)", "mt": "multi-turn (mt)",
                          "dev": "dev", "test2": "test2"}
#: Languages a question can be asked in: the benchmark's English and the Czech translations
#: (the transcript and prompt stay English; ``data/benchmark.py`` reads both).
LANGUAGES: tuple[str, ...] = ("en", "cs")
#: The absolute judges' prompt styles and the top of the scale each one's prompt asks for
#: (1..10 for the GPT-4-style prompt, 1..5 for Prometheus); every score is stored on 1..10.
JUDGE_SCALES: dict[str, int] = {"gpt4": 10, "prometheus": 5}
JUDGE_STYLES: tuple[str, ...] = tuple(JUDGE_SCALES)
#: What a generation run asks: the benchmark's questions, or one summary of each meeting.
TASKS: tuple[str, ...] = ("qa", "summary")
#: The pairwise judges' styles: CREAM's key-fact comparison and L-Eval's battle verdict.
PAIRWISE_STYLES: tuple[str, ...] = ("cream", "battle")


def setting_mode_label(setting: str, mode: str) -> str:
    """Paper label of a setting and mode: ``("qa", "st")`` -> ``"QA-st"``."""
    return f"{SETTING_LABELS.get(str(setting), str(setting))}-{mode}"

SCORE_COLUMNS: tuple[str, ...] = (
    "meeting",
    "question_id",
    "split",
    "setting",
    "mode",
    "seed",
    "model",
    "question_type",
    "answer_position",
    "evaluator",
    "annotator",
    "sample",
    "score",
)

LEADERBOARD_MEAN_NOTE = (
    "A mean column (split = mean) is the unweighted mean of the dev and test2 means, as in the "
    "paper (each split counts once, whatever its number of questions), not the mean over all "
    "responses pooled; n counts the responses of both splits.")
"""What the leaderboard's ``mean`` split is (export contract, Leaderboard page)."""

#: Columns of every export table, in contract order.
EXPORT_COLUMNS: dict[str, tuple[str, ...]] = {
    "scores": SCORE_COLUMNS,
    # the Leaderboard's main table: the paper's three settings, their means first (a column
    # the filters leave without scores is empty)
    "main-table": ("model", "rank", "QA-st mean", "QA-mt mean", "Conv-mt mean", "QA-st dev",
                   "QA-st test2", "QA-mt dev", "QA-mt test2", "Conv-mt dev", "Conv-mt test2"),
    "leaderboard": (
        "model",
        "setting",
        "mode",
        "split",
        "evaluator",
        "n",
        "mean",
        "std",
        "n_seeds",
        "note",
    ),
    "breakdown": ("model", "evaluator", "facet", "level", "n", "mean"),
    "lost-in-middle": (
        "model",
        "evaluator",
        "n_middle",
        "n_other",
        "mean_middle",
        "mean_other",
        "t",
        "p",
        "note",
    ),
    "differentiating": ("model", "evaluator", "setting_mode", "n", "mean"),
    "evaluator-means": ("model", "evaluator", "n", "mean", "n_common", "mean_common",
                        "note"),
    "evaluator-correlation": (
        "evaluator_a",
        "evaluator_b",
        "method",
        "n",
        "r",
        "ci_low",
        "ci_high",
        "p",
        "note",
    ),
    "calibration": ("reference", "evaluator", "bin", "n", "mean", "ci_low", "ci_high", "note"),
    "icc": ("raters", "group", "icc_type", "icc", "ci_low", "ci_high", "n_targets", "n_raters",
            "alpha", "note"),
    "elo": ("model", "evaluator", "rating", "ci_low", "ci_high", "note"),
    # a reliability-weighted silver aggregate (stats/silver_aggregate): per response, per
    # annotator, and how close each aggregate comes to gold
    "silver-aggregate": (
        "meeting", "question_id", "split", "setting", "mode", "seed", "model", "evaluator",
        "n_annotators", "mean", "median", "aggregate", "note",
    ),
    "annotator-reliability": ("evaluator", "annotator", "n", "method", "bias", "noise_sd",
                              "weight", "accuracy", "mean_abs_error"),
    "silver-aggregate-agreement": ("evaluator", "reference", "aggregate", "n", "mae", "bias",
                                   "r"),
    # the judge audit (stats/ppi, ppi_designs, recalibration, judge_effects, consistency,
    # conversation)
    "ppi": (
        "split", "setting", "mode", "model", "n_labelled", "n_unlabelled", "judge_mean",
        "human_mean", "human_ci_low", "human_ci_high", "ppi_mean", "ppi_ci_low", "ppi_ci_high",
        "ppipp_mean", "ppipp_ci_low", "ppipp_ci_high", "human_betting_ci_low",
        "human_betting_ci_high", "lambda", "note",
    ),
    "ppi-budget": (
        "split", "setting", "mode", "model", "n_judged", "n_labelled", "half_width",
        "human_sd", "residual_sd", "lambda", "n_human_only", "assurance_human_only", "n_ppi",
        "assurance_ppi", "note",
    ),
    "ppi-active": (
        "split", "setting", "mode", "model", "n_labelled", "n_drawn_unscored", "n_unlabelled",
        "judge_mean", "active_mean", "active_ci_low", "active_ci_high", "note",
    ),
    # a live study's confidence sequences (stats/monitor.py): where each stands, and each
    # after every scored response beside the fixed-n t interval
    "study-monitor": (
        "split", "setting", "mode", "model", "target", "n", "estimate", "cs_low", "cs_high",
        "half_width", "target_half_width", "reached", "expected_further", "note",
    ),
    "study-monitor-sequences": (
        "split", "setting", "mode", "model", "target", "n", "estimate", "cs_low", "cs_high",
        "fixed_low", "fixed_high",
    ),
    "ppi-designs": (
        "design", "model", "budget", "mean_labelled", "mean_abs_error", "mean_width",
        "coverage", "replicates",
    ),
    "recalibration": ("judge", "human", "model", "stage", "n", "mae", "mse", "bias", "qwk",
                      "note"),
    "judge-effects": ("judge", "human", "effect", "level", "n", "estimate", "ci_low", "ci_high",
                      "note"),
    "self-consistency": (
        "judge", "human", "statistic", "samples", "n", "value", "ci_low", "ci_high", "note",
    ),
    # a length-controlled judge leaderboard (stats/length_control): each model's judge score
    # at a common response length, and Kendall tau of both rankings with the human's
    "length-controlled": (
        "judge", "human", "model", "n", "mean_length", "common_length", "judge_mean",
        "lc_mean", "ci_low", "ci_high", "human_mean", "slope", "slope_ci_low", "slope_ci_high",
    ),
    "length-controlled-tau": (
        "judge", "human", "ranking", "n_models", "tau", "ci_low", "ci_high", "note",
    ),
    "turn-effect": (
        "model", "setting", "evaluator", "n", "n_meetings", "tau", "ci_low", "ci_high", "p",
        "p_naive", "note",
    ),
    "st-vs-mt": (
        "model", "setting", "evaluator", "n", "n_meetings", "mean_st", "mean_mt", "difference",
        "ci_low", "ci_high", "p", "wilcoxon", "p_naive", "note",
    ),
    # interleaved conversations (stats/interleaving.py): isolated vs interleaved, score by span
    "interleaving": (
        "model", "run", "setting", "mode", "isolated", "evaluator", "n", "n_meetings",
        "n_conversations", "mean_isolated", "mean_interleaved", "difference", "ci_low",
        "ci_high", "p", "wilcoxon", "p_naive", "note",
    ),
    "interleaving-span": (
        "model", "setting", "evaluator", "bucket", "span_low", "span_high", "n", "n_meetings",
        "n_conversations", "mean_span", "mean", "slope", "ci_low", "ci_high", "p", "note",
    ),
    # two runs question by question (e.g. a model and its retrieval run MODEL (bm25))
    "model-difference": (
        "model_a", "model_b", "setting", "mode", "evaluator", "n", "n_meetings", "mean_a",
        "mean_b", "difference", "ci_low", "ci_high", "p", "wilcoxon", "p_naive", "note",
    ),
    # pairwise battles (CREAM, L-Eval): one row per parsed judgment, then the tables over them
    "pairwise-judgments": (
        "meeting", "question_id", "split", "setting", "mode", "seed", "evaluator",
        "model_a", "model_b", "order", "sample", "verdict",
        "completeness_a", "completeness_b", "conciseness_a", "conciseness_b",
    ),
    "pairwise": (
        "evaluator", "criterion", "model_a", "model_b", "n", "n_unparsed", "wins", "ties",
        "losses", "mean_a", "mean_a_ci_low", "mean_a_ci_high", "mean_b", "mean_b_ci_low",
        "mean_b_ci_high", "n_both_orders", "position_consistency", "note",
    ),
    "elo-pairwise": ("model", "evaluator", "criterion", "rating", "ci_low", "ci_high", "note"),
    # provenance (export/runs.py): one row a run, what made its answers
    "runs": (
        "run", "model", "variant", "setting", "mode", "split", "seed", "language", "backend",
        "backend_options", "prompt_hash", "temperature", "top_p", "repetition_penalty",
        "max_new_tokens", "prompt_options", "versions", "responses", "prompt_tokens",
        "completion_tokens", "cached_tokens", "status", "source", "config_schema",
    ),
    # answered fillers of interleaved runs (export/runs.py): one row a reply, never scored
    "fillers": (
        "run", "model", "split", "mode", "seed", "variant", "conversation", "turn", "gap",
        "question", "expected", "reply", "correct", "total", "followed",
    ),
    "bradley-terry": ("model", "evaluator", "criterion", "strength", "ci_low", "ci_high",
                      "note"),
    "winrate": (
        "evaluator", "criterion", "model", "baseline", "n", "wins", "ties", "losses",
        "win_rate", "ci_low", "ci_high", "note",
    ),
    "pairwise-agreement": (
        "evaluator", "criterion", "ranking", "reference", "n_models", "n_questions", "tau",
        "ci_low", "ci_high", "note",
    ),
}



# Export table names live here, with no heavy import, so that ``python -m elitr_core --help``
# lists them without loading pandas, scipy or the database layer.
AUDIT_TABLES: tuple[str, ...] = (
    "ppi", "ppi-active", "ppi-budget", "ppi-designs", "recalibration", "judge-effects",
    "self-consistency", "turn-effect", "st-vs-mt", "length-controlled", "length-controlled-tau",
    "interleaving", "interleaving-span", "study-monitor", "study-monitor-sequences",
)
"""Tables of the judge audit (``export`` names)."""

TABLE_NAMES: tuple[str, ...] = (
    "scores",
    "unscored",
    "leaderboard",
    "main-table",
    "breakdown",
    "lost-in-middle",
    "differentiating",
    "evaluator-means",
    "evaluator-correlation",
    "calibration",
    "icc",
    "elo",
    "model-difference",
    "silver-aggregate",
    "annotator-reliability",
    "silver-aggregate-agreement",
    *AUDIT_TABLES,
)
"""Tables built from the scores (``export`` names)."""

PROVENANCE_TABLES: tuple[str, ...] = ("runs", "fillers")
"""Tables of what made the answers (``export`` names), built from the runs."""

PAIRWISE_TABLES: tuple[str, ...] = ("pairwise-judgments", "pairwise", "bradley-terry",
                                    "winrate", "pairwise-agreement")
"""Tables built from the pairwise judgments (``export`` names)."""

#: attention checks per scored item of a study (a rate: 0.1 is one check per ten items): the
#: default and the name shared by ``study create --attention-rate`` and the Studies page's form
ATTENTION_RATE_DEFAULT = 0.0
ATTENTION_RATE_LABEL = "Attention-check rate (checks per item)"
