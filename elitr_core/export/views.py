"""Helpers the analysis pages need beyond the statistics: layouts, pairs and the question table.

Pure functions on the long ``scores`` table and its derived frames (no Streamlit, no database):
the pages fetch rows through :mod:`elitr_core.data.browse`, build frames here and render them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import RESPONSE_KEY, per_response, wide_by_evaluator
from elitr_core.vocab import EXPORT_COLUMNS, INTERLEAVED_MODES, SPLIT_ORDER

"""Column order of the splits in the paper's main table."""

QUESTION_COLUMNS: tuple[str, ...] = (
    *RESPONSE_KEY, "question_type", "answer_position", "question", "reference", "response",
)
"""Leading columns of :func:`question_table`; evaluator scores and feedback follow."""

FEEDBACK_SUFFIX = " feedback"


def evaluators_in(scores: pd.DataFrame) -> list[str]:
    """Evaluator slugs present in a scores table, humans last (gold before silver)."""
    found = sorted(scores["evaluator"].dropna().unique().tolist())
    return sorted(found, key=lambda slug: (slug.endswith("-human"), slug))


def has_interleaved(scores: pd.DataFrame) -> bool:
    """Whether a scores table holds an interleaved run's scores (mode ``int2``/``int3``), the
    data of the ``interleaving`` tables."""
    return bool(scores["mode"].astype(str).isin(INTERLEAVED_MODES).any())


def mean_std_labels(mean: pd.DataFrame, std: pd.DataFrame, *, digits: int = 2) -> pd.DataFrame:
    """Cells ``"6.83 ± 0.12"`` where a std exists (several seeds), ``"6.83"`` otherwise, ``""``
    where there is no mean (a model not run in that setting)."""

    def label(m: object, s: object) -> str:
        if pd.isna(m):
            return ""
        text = f"{float(m):.{digits}f}"  # type: ignore[arg-type]
        return text if pd.isna(s) else f"{text} ± {float(s):.{digits}f}"  # type: ignore[arg-type]

    out = pd.DataFrame(index=mean.index, columns=mean.columns, dtype=object)
    for column in mean.columns:
        out[column] = [label(m, s) for m, s in zip(mean[column], std[column], strict=True)]
    return out


def ranked(wide: pd.DataFrame, by: str) -> pd.DataFrame:
    """The main table with a ``rank`` column first (1 = highest ``by``; ties share the best
    rank; a model without a value in ``by`` has none), sorted by it, unranked models last."""
    rank = wide[by].rank(ascending=False, method="min").astype("Int64")
    out = wide.assign(rank=rank)[["rank", *wide.columns]]
    return out.sort_values(["rank", by], ascending=[True, False], na_position="last",
                           kind="stable")


#: the judge the Leaderboard and ``export main-table`` show first when it has scores
DEFAULT_JUDGE = "gpt-4"
#: the main table's default ranking (the paper's first column)
DEFAULT_RANK_BY = "QA-st mean"


def means_first(table: pd.DataFrame) -> list[str]:
    """The main table's columns with the three means first (the paper ranks by them; dev and
    test2 follow), ``rank`` left out."""
    means = [c for c in table.columns if str(c).endswith(" mean")]
    return means + [c for c in table.columns if c not in means and c != "rank"]


def main_table(board: pd.DataFrame, evaluator: str | None = None,
               rank_by: str | None = None) -> pd.DataFrame:
    """The ELITR-Bench main table as the Leaderboard shows it (``export main-table``): one row
    per model in rank order, ``model``, ``rank``, the means of QA-st, QA-mt and Conv-mt, then
    each split's mean.

    ``board`` is the ``leaderboard`` table; ``evaluator`` defaults to :data:`DEFAULT_JUDGE`
    when it scored, else the first evaluator; ``rank_by`` to :data:`DEFAULT_RANK_BY` when the
    table has it, else its first column. A model without a value there has no rank and comes
    last."""
    from elitr_core.stats.leaderboard import board_wide

    evaluators = evaluators_in(board)
    if not evaluators:
        raise DegenerateDataError("no leaderboard row under these filters")
    chosen = evaluator or (DEFAULT_JUDGE if DEFAULT_JUDGE in evaluators else evaluators[0])
    wide = board_wide(board, chosen, "mean")
    by = rank_by or (DEFAULT_RANK_BY if DEFAULT_RANK_BY in wide.columns else wide.columns[0])
    if by not in wide.columns:
        raise UserError(f"cannot rank by {by!r}: choose one of {', '.join(map(str, wide.columns))}")
    table = ranked(wide, by)[["rank", *means_first(wide)]]
    return table.rename_axis("model").reset_index().reindex(
        columns=list(EXPORT_COLUMNS["main-table"]))


def labelled_first(table: pd.DataFrame) -> pd.DataFrame:
    """The judge audit's rows as a page shows them: those with human scores (``n_labelled`` >
    0) first, each group in the table's order. With the filters at "all", the dev and Conv rows
    (no human score, every estimate empty) came first and the test2 QA-st ones last. The
    export keeps the contract's order."""
    if "n_labelled" not in table.columns:
        return table
    labelled = pd.to_numeric(table["n_labelled"], errors="coerce").fillna(0) > 0
    return pd.concat([table[labelled], table[~labelled]])


def correlation_matrix(corr: pd.DataFrame, method: str, value: str = "r") -> pd.DataFrame:
    """Square evaluator x evaluator matrix of one column of the ``evaluator-correlation`` table.

    The diagonal holds 1 for ``r`` and the bounds, NaN for ``n`` and ``p``; order: evaluators in
    order of first appearance in ``corr``.

    Raises
    ------
    UserError
        When ``corr`` holds no row for ``method``.
    """
    rows = corr[corr["method"] == method]
    if rows.empty:
        raise UserError(f"no {method} correlation in this table; choose one of "
                        f"{sorted(corr['method'].unique().tolist())}")
    names = list(pd.unique(pd.concat([rows["evaluator_a"], rows["evaluator_b"]])))
    diagonal = 1.0 if value in ("r", "ci_low", "ci_high") else float("nan")
    position = {name: i for i, name in enumerate(names)}
    a = rows["evaluator_a"].map(position).to_numpy()
    b = rows["evaluator_b"].map(position).to_numpy()
    cells = np.full((len(names), len(names)), np.nan)  # numpy: .loc in a loop took 0.1 s
    cells[a, b] = cells[b, a] = rows[value].astype(float).to_numpy()
    np.fill_diagonal(cells, diagonal)
    return pd.DataFrame(cells, index=names, columns=names)


def pair_scores(scores: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """One row per response scored by both ``a`` and ``b``: the response keys and both scores.

    Raises
    ------
    UserError
        When ``a == b``.
    DegenerateDataError
        When the two evaluators share no response.
    """
    if a == b:
        raise UserError("choose two different evaluators")
    per = per_response(scores[scores["evaluator"].isin([a, b])])
    wide = wide_by_evaluator(per) if not per.empty else per
    if a not in wide.columns or b not in wide.columns:
        raise DegenerateDataError(f"{a} and {b} share no scored response under these filters")
    both = wide.dropna(subset=[a, b]).reset_index(drop=True)
    if both.empty:
        raise DegenerateDataError(f"{a} and {b} share no scored response under these filters")
    return both


def question_table(
    responses: pd.DataFrame, scores: pd.DataFrame, feedback: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Responses with their texts, every evaluator's score and the judges' stored feedback.

    Parameters
    ----------
    responses : pandas.DataFrame
        :func:`elitr_core.data.browse.response_rows` as a frame (columns ``QUESTION_COLUMNS``).
    scores : pandas.DataFrame
        The long ``scores`` table for the same filters; collapsed to one score per response
        and evaluator (:func:`~elitr_core.stats.frame.per_response`).
    feedback : pandas.DataFrame, optional
        :func:`elitr_core.data.browse.feedback_rows` as a frame; several samples of one judge are
        joined with blank lines into one ``"<evaluator> feedback"`` column.

    Returns
    -------
    pandas.DataFrame
        ``QUESTION_COLUMNS``, then one score column per evaluator (humans last), then the
        feedback columns. A response no evaluator scored keeps NaN scores.
    """
    missing = [c for c in QUESTION_COLUMNS if c not in responses.columns]
    if missing:
        raise UserError(f"the responses table lacks column(s) {', '.join(missing)}")
    table = responses[list(QUESTION_COLUMNS)].copy()
    keys = list(RESPONSE_KEY)
    # pandas does not match missing keys on merge the way we need; a sentinel stands for them
    table["seed"] = table["seed"].astype("Int64").fillna(-1)
    evaluators = evaluators_in(scores) if not scores.empty else []
    if evaluators:
        per = per_response(scores)
        per["seed"] = per["seed"].astype("Int64").fillna(-1)
        wide = per.pivot_table(index=keys, columns="evaluator", values="score", aggfunc="mean")
        wide = wide.reset_index()
        table = table.merge(wide[[*keys, *evaluators]], on=keys, how="left")
    if feedback is not None and not feedback.empty:
        fb = feedback.copy()
        fb["seed"] = fb["seed"].astype("Int64").fillna(-1)
        fb = fb.sort_values([*keys, "evaluator", "sample"])
        joined = fb.groupby([*keys, "evaluator"], sort=False)["feedback"].agg("\n\n".join)
        fb_wide = joined.unstack("evaluator")
        fb_wide.columns = [f"{c}{FEEDBACK_SUFFIX}" for c in fb_wide.columns]
        table = table.merge(fb_wide.reset_index(), on=keys, how="left")
    table["seed"] = table["seed"].astype("Int64").replace(-1, pd.NA)
    return table


def filter_questions(
    table: pd.DataFrame,
    *,
    question_types: Sequence[str] = (),
    answer_positions: Sequence[str] = (),
    meetings: Sequence[str] = (),
    text: str = "",
) -> pd.DataFrame:
    """Rows of a :func:`question_table` matching every given filter (empty = no filter);
    ``text`` is searched case-insensitively in the question, reference and response."""
    keep = pd.Series(True, index=table.index)
    for column, values in (("question_type", question_types),
                           ("answer_position", answer_positions), ("meeting", meetings)):
        if values:
            keep &= table[column].isin(list(values))
    if text.strip():
        needle = text.strip().lower()
        hay = (table["question"].fillna("") + "\n" + table["reference"].fillna("") + "\n"
               + table["response"].fillna("")).str.lower()
        keep &= hay.str.contains(needle, regex=False)
    return table[keep].reset_index(drop=True)


def largest_disagreements(
    table: pd.DataFrame, judge: str, human: str, *, top: int | None = None
) -> pd.DataFrame:
    """Responses sorted by ``|judge - human|``, largest first.

    Parameters
    ----------
    table : pandas.DataFrame
        A :func:`question_table` (score columns named after the evaluators).
    judge, human : str
        The two evaluators to compare (any two, despite the names).
    top : int, optional
        Keep the first ``top`` rows.

    Returns
    -------
    pandas.DataFrame
        The rows both evaluators scored, with ``difference = judge - human`` and
        ``abs_difference``; ties keep the table's order.

    Raises
    ------
    UserError
        When an evaluator has no column in ``table`` or both are the same.
    DegenerateDataError
        When no response carries both scores.
    """
    if judge == human:
        raise UserError("choose two different evaluators to compare")
    for name in (judge, human):
        if name not in table.columns:
            raise UserError(f"evaluator {name!r} has no score under these filters")
    both = table.dropna(subset=[judge, human]).copy()
    if both.empty:
        raise DegenerateDataError(f"no response was scored by both {judge} and {human}")
    both["difference"] = both[judge] - both[human]
    both["abs_difference"] = both["difference"].abs()
    both = both.sort_values("abs_difference", ascending=False, kind="stable")
    return (both.head(top) if top is not None else both).reset_index(drop=True)


__all__ = [
    "FEEDBACK_SUFFIX",
    "QUESTION_COLUMNS",
    "SPLIT_ORDER",
    "correlation_matrix",
    "evaluators_in",
    "filter_questions",
    "largest_disagreements",
    "mean_std_labels",
    "pair_scores",
    "question_table",
]


#: The model families of the ELITR-Bench paper's breakdown, as ``--group`` specs.
DEFAULT_FAMILIES: tuple[str, ...] = (
    "GPT=GPT-4,GPT-3.5",
    "LLaMA-2=LongAlign-7B,LongAlign-13B,LongAlpaca-7B,LongAlpaca-13B,LongChat-7B-v1.5,"
    "Vicuna-7B-v1.5,Vicuna-13B-v1.5",
)
