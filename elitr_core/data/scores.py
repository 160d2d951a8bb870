"""The long ``scores`` table (``elitr_core.vocab.SCORE_COLUMNS``) read from the database as a
DataFrame.

Every statistic, export and study draws from this one loader; it sits with the data, below
both ``export`` and ``annotation``, so neither has to import the other to read scores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sqlmodel import Session

from db.models import NO_SEED
from db.runs import ScoreFilter
from db.scores import score_records, score_rows
from elitr_core.vocab import SCORE_COLUMNS


def _take(values: pd.Series, position: np.ndarray) -> pd.Series | np.ndarray:
    """``values[position]`` with -1 meaning missing. Text columns become categoricals with
    sorted categories: a million-row table then groups and sorts on small integer codes."""
    if pd.api.types.is_numeric_dtype(values):
        taken = values.to_numpy()[np.clip(position, 0, None)] if len(values) else \
            np.zeros(len(position))
        return pd.Series(taken).where(position >= 0).to_numpy()
    categories = sorted(values.dropna().unique())
    codes = pd.Categorical(values, categories=categories).codes
    picked = np.where(position >= 0, codes[np.clip(position, 0, None)] if len(codes) else -1, -1)
    return pd.Categorical.from_codes(picked, categories=categories)


def scores_table(session: Session, flt: ScoreFilter, *, ids: bool = False) -> pd.DataFrame:
    """The long-format ``scores`` table (scored rows only) for the filters; with ``ids``,
    each row's ``run_id`` and ``annotator_id`` after the contract's columns (the dataset's
    response key and pseudonyms are made from them).

    Rows are ordered by split, setting, mode, model, meeting, question, evaluator, annotator,
    sample, seed, so the CSV is byte-identical on SQLite and PostgreSQL.
    """
    parts = score_records(session, flt)
    frame = pd.DataFrame.from_records(parts["scores"], columns=[
        "run_id", "question_row", "evaluator_id", "annotator_id", "sample", "score"])
    dims = (
        ("run_id", ["split", "setting", "mode", "seed", "model"], parts["runs"]),
        ("question_row", ["meeting", "question_id", "question_type", "answer_position"],
         parts["questions"]),
        ("evaluator_id", ["evaluator"], parts["evaluators"]),
        ("annotator_id", ["annotator"], parts["annotators"]),
    )
    keep = pd.Series(True, index=frame.index)
    for key, columns, records in dims:
        table = pd.DataFrame.from_records(records, columns=[key, *columns]).set_index(key)
        position = table.index.get_indexer(frame[key])
        if key != "annotator_id":  # the filters act on runs and evaluators
            keep &= position >= 0
        for column in columns:
            frame[column] = _take(table[column], position)
    frame = frame[keep.to_numpy()].reindex(
        columns=[*SCORE_COLUMNS, *(("run_id", "annotator_id") if ids else ())])
    frame["seed"] = frame["seed"].astype("Int64").mask(frame["seed"] == NO_SEED)
    frame["question_id"] = frame["question_id"].astype("int64")
    frame["sample"] = frame["sample"].astype("int64")
    frame["score"] = frame["score"].astype("float64")
    order = ["split", "setting", "mode", "model", "meeting", "question_id", "evaluator",
             "annotator", "sample", "seed"]
    return frame.sort_values(order, kind="stable", na_position="first").reset_index(drop=True)


#: why a stored score is in no table when no lapsed or excluded participation says more (a
#: score imported as excluded, say)
RELEASED_REASONS = {"lapsed": "the annotator's claim lapsed", "excluded": "annotator excluded"}

#: statuses of stored rows that no table aggregates, in the order ``unscored`` reads them
UNUSABLE_STATUSES = ("unparsed", "lapsed", "excluded")


def unscored_table(session: Session, flt: ScoreFilter) -> pd.DataFrame:
    """Every stored row with no usable score: judge outputs with no parsable score (status
    ``unparsed``, the parser's reason) and the scores of annotators whose claim lapsed or who
    were excluded (``lapsed``, ``excluded``: kept, never aggregated; the reason stored with
    their participation). The keys of ``scores`` plus ``status`` and ``reason``, in the order
    of ``scores`` (then status)."""
    from db.studies import released_reasons

    columns = [c for c in SCORE_COLUMNS if c != "score"] + ["status", "reason"]
    rows = []
    for status in UNUSABLE_STATUSES:
        rows += score_rows(session, ScoreFilter(**{**flt.__dict__, "status": status}))
    if any(row["status"] != "unparsed" for row in rows):
        reasons = released_reasons(session=session)
        for row in rows:
            if row["status"] != "unparsed":
                row["reason"] = reasons.get((row["evaluator"], row["annotator"], row["status"]),
                                            RELEASED_REASONS[row["status"]])
    frame = pd.DataFrame(rows, columns=[*columns])[columns]
    frame["seed"] = frame["seed"].astype("Int64")
    order = ["split", "setting", "mode", "model", "meeting", "question_id", "evaluator",
             "annotator", "sample", "seed", "status"]
    return frame.sort_values(order, kind="stable", na_position="first").reset_index(drop=True)


def span_table(session: Session, flt: ScoreFilter) -> pd.DataFrame:
    """The interleaved runs' answers under ``flt``: the columns that identify a response in
    the ``scores`` table, the run's own ``base_model``, the answer's memory ``span`` (empty
    where none was recorded) and its ``conversation`` (the K meetings asked together, from the
    run's stored plan, e.g. ``m1+m2``; empty for a run stored without a plan), for
    ``stats.interleaving``."""
    from db.responses import interleaved_spans
    from db.runs import interleave_plans

    columns = ["meeting", "question_id", "split", "setting", "mode", "seed", "model",
               "base_model"]
    rows = interleaved_spans(session=session, flt=flt)
    frame = pd.DataFrame(rows, columns=[*columns, "meta", "run_id"])
    frame["span"] = pd.array([(meta or {}).get("span") for meta in frame["meta"]],
                             dtype="Float64")
    plans = interleave_plans(session=session, run_ids=set(frame["run_id"].tolist()))
    within = {(run, meeting): "+".join(group["meetings"])
              for run, plan in plans.items() if plan
              for group in plan.get("groups", []) for meeting in group["meetings"]}
    frame["conversation"] = pd.array(
        [within.get((run, meeting)) for run, meeting in zip(frame["run_id"], frame["meeting"],
                                                           strict=True)], dtype="string")
    return frame.drop(columns=["meta", "run_id"])
