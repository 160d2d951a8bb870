"""Shared helpers for the long-format score table.

A *response* is identified by ``RESPONSE_KEY``. One evaluator may have several rows per
response: human pools have one row per annotator plus an aggregate row (``annotator`` empty),
LLM judges may have several samples (self-consistency). :func:`per_response` collapses them to
one score per (response, evaluator), the unit every judge-vs-human comparison works on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.vocab import SCORE_COLUMNS

RESPONSE_KEY: tuple[str, ...] = (
    "meeting", "question_id", "split", "setting", "mode", "seed", "model",
)
"""Columns that identify one generated response."""

QUESTION_KEY: tuple[str, ...] = ("meeting", "question_id", "split")
"""Columns that identify one benchmark question (the cluster of the cluster bootstrap)."""

ZERO_WIDTH = "a zero-width interval would claim a certainty the sample does not give"
"""The note of an interval left empty because the sample shows no variation."""


def check_columns(df: pd.DataFrame, required: Iterable[str], *, what: str = "scores") -> None:
    """Raise :class:`UserError` naming the missing columns of ``df``."""
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise UserError(f"the {what} table lacks column(s) {', '.join(missing)}")


def check_not_empty(df: pd.DataFrame, *, what: str = "the current filters") -> None:
    """Raise :class:`DegenerateDataError` when ``df`` has no row."""
    if df.empty:
        raise DegenerateDataError(f"no scores match {what}: widen the filters or import scores")


def group_codes(df: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """One integer per distinct combination of ``keys`` (missing values form their own group).

    Hand-written because pandas' multi-column groupby hashes every key column again for each
    grouping; factorising each column once (categoricals are already codes) and combining the
    codes arithmetically is several times faster on a million rows.
    """
    combined = np.zeros(len(df), dtype=np.int64)
    span = 1
    for key in keys:
        codes, uniques = pd.factorize(df[key], use_na_sentinel=False)
        size = max(len(uniques), 1)
        if span * size >= 2**62:  # too many combinations for one int64: re-number first
            combined = pd.factorize(combined)[0].astype(np.int64)
            span = int(combined.max()) + 1 if len(combined) else 1
        combined = combined * size + codes
        span *= size
    return pd.factorize(combined)[0]


def contract_types(out: pd.DataFrame, columns: Sequence[str],
                   text: Sequence[str] = ()) -> pd.DataFrame:
    """``out`` with exactly the contract's ``columns``, in order: ``text`` columns and the
    counts ``n``/``n_meetings`` as they are, ``note`` as text ("" when missing), every other
    column a nullable ``Float64`` (an undefined statistic is an empty cell, never "nan")."""
    out = out.reindex(columns=list(columns))
    typed = {}
    for column in columns:
        if column in text or column in ("n", "n_meetings"):
            typed[column] = out[column]
        elif column == "note":
            typed[column] = out[column].fillna("").astype(str)
        else:
            typed[column] = pd.to_numeric(out[column]).astype("Float64")
    return pd.DataFrame(typed, index=out.index)  # one frame, not a column set at a time


def _mean_by(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean ``score`` per distinct ``keys`` (first-appearance order, missing keys kept)."""
    codes = group_codes(frame, keys)
    if np.unique(codes).size == codes.size:  # one row a group (the usual table): no groupby
        first = np.argsort(codes)  # the groups in code order, as groupby(sort=True) gives them
        means = frame["score"].to_numpy(dtype=float)[first]  # a mean of one score: that score
    else:
        means = pd.Series(frame["score"].to_numpy(), copy=False).groupby(codes, sort=True).mean(
        ).to_numpy()
        first = pd.Series(np.arange(len(codes))).groupby(codes, sort=True).first().to_numpy()
    out = frame.iloc[first][keys].reset_index(drop=True)
    out["score"] = means
    return out


def by_named_annotator(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``df`` scored by a named annotator (a human pool's individual scores), not
    an aggregate row (no annotator, or an empty name)."""
    return df[df["annotator"].notna() & (df["annotator"].astype("string") != "")]


def per_response(df: pd.DataFrame) -> pd.DataFrame:
    """One score per (response, evaluator).

    Where an evaluator has an aggregate row (``annotator`` empty, ``sample`` 0), that row is the
    score; otherwise the mean over its annotators and samples. NaN scores are dropped first
    (unscored judge outputs never reach this table, but a user-supplied frame might hold them).

    Returns the columns of ``RESPONSE_KEY`` plus ``question_type``, ``answer_position``,
    ``evaluator`` and ``score``.
    """
    check_columns(df, SCORE_COLUMNS)
    scored = df[df["score"].notna()]
    keys = [*RESPONSE_KEY, "question_type", "answer_position", "evaluator"]
    aggregate = (scored["annotator"].isna() | (scored["annotator"].astype("string") == "")
                 ).to_numpy(dtype=bool)
    agg = _mean_by(scored[aggregate], keys)
    if aggregate.all():
        return agg
    rest = _mean_by(scored[~aggregate], keys)
    # an aggregate row wins over the individual annotators' rows of the same response
    both = pd.concat([agg, rest], ignore_index=True)
    first_seen = ~pd.Series(group_codes(both, keys)).duplicated().to_numpy()
    return both[first_seen].reset_index(drop=True)


def wide_by_evaluator(df: pd.DataFrame) -> pd.DataFrame:
    """Responses as rows, evaluators as columns (from :func:`per_response` output).

    Rows are the distinct responses in first-appearance order; columns the evaluators in
    sorted order; a response an evaluator did not score holds NaN there.
    """
    keys = [*RESPONSE_KEY, "question_type", "answer_position"]
    codes = group_codes(df, keys)
    evaluator_codes, evaluators = pd.factorize(df["evaluator"])
    first = pd.Series(np.arange(len(codes))).groupby(codes, sort=True).first().to_numpy()
    wide = df.iloc[first][keys].reset_index(drop=True)
    n_eval = max(len(evaluators), 1)
    cell = codes.astype(np.int64) * n_eval + evaluator_codes
    size = len(first) * n_eval
    sums = np.bincount(cell, weights=df["score"].to_numpy(dtype=float), minlength=size)
    counts = np.bincount(cell, minlength=size).astype(float)
    flat = np.full(size, np.nan)
    np.divide(sums, counts, out=flat, where=counts > 0)
    order = np.argsort(np.asarray(evaluators, dtype=str), kind="stable")
    evaluators = np.asarray(evaluators, dtype=object)[order]
    grid = flat.reshape(len(first), n_eval)[:, order]
    for index, name in enumerate(evaluators):
        wide[str(name)] = grid[:, index]
    return wide
