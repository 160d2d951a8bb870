"""The declared Arrow schema of every export table: each column's type and whether it may be
null, so that a Parquet file (``export TABLE --format parquet``, ``export dataset``) is typed
by the export contract, not by the values a run happens to hold: an empty table is typed like
a full one, ``question_id`` is an integer in every table, a whole-number column stays an
integer and a time is a timestamp. SQL readers (DuckDB, Spark, pandas) then join the tables on
their shared keys without a cast.

A column name has one type in every table (:data:`COLUMN_TYPES`), except where a table gives
the word another meaning (:data:`TABLE_TYPES`). Every column may be null unless it is a key
that identifies a row (:data:`REQUIRED`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from elitr_core.vocab import EXPORT_COLUMNS, SCORE_COLUMNS

_I, _F, _S, _B = pa.int64(), pa.float64(), pa.string(), pa.bool_()
#: a time, in UTC (the database stores UTC)
TIMESTAMP = pa.timestamp("us", tz="UTC")

_INTEGERS = (
    "question_id", "seed", "sample", "n", "rank", "bin", "run", "wins", "ties", "losses",
    "budget", "replicates", "samples", "span_low", "span_high", "expected_further",
    "prompt_tokens", "completion_tokens", "cached_tokens", "max_new_tokens", "responses",
    "config_schema", "per_item", "items", "annotators", "conversation", "turn", "gap",
    "correct", "total",
    "n_annotators", "n_both_orders", "n_common", "n_conversations", "n_drawn_unscored",
    "n_human_only", "n_judged", "n_labelled", "n_meetings", "n_middle", "n_models", "n_other",
    "n_ppi", "n_questions", "n_raters", "n_seeds", "n_targets", "n_unlabelled", "n_unparsed",
)
_FLOATS = (
    "score", "mean", "std", "median", "aggregate", "t", "p", "p_naive", "wilcoxon", "r", "tau",
    "icc", "alpha", "rating", "strength", "win_rate", "ci_low", "ci_high", "estimate",
    "difference", "slope", "slope_ci_low", "slope_ci_high", "bias", "noise_sd", "weight",
    "accuracy", "mean_abs_error", "mae", "mse", "qwk", "value", "lambda", "half_width",
    "target_half_width", "cs_low", "cs_high", "fixed_low", "fixed_high", "coverage",
    "human_sd", "residual_sd", "assurance_human_only", "assurance_ppi", "temperature",
    "top_p", "repetition_penalty", "attention_rate", "position_consistency",
    "completeness_a", "completeness_b", "conciseness_a", "conciseness_b",
    "mean_a", "mean_a_ci_low", "mean_a_ci_high", "mean_b", "mean_b_ci_low", "mean_b_ci_high",
    "mean_middle", "mean_other", "mean_common", "mean_isolated", "mean_interleaved",
    "mean_span", "mean_st", "mean_mt", "mean_labelled", "mean_width", "mean_length",
    "common_length", "judge_mean", "lc_mean", "human_mean", "human_ci_low", "human_ci_high",
    "human_betting_ci_low", "human_betting_ci_high", "ppi_mean", "ppi_ci_low", "ppi_ci_high",
    "ppipp_mean", "ppipp_ci_low", "ppipp_ci_high", "active_mean", "active_ci_low",
    "active_ci_high",
    "QA-st mean", "QA-mt mean", "Conv-mt mean", "QA-st dev", "QA-st test2", "QA-mt dev",
    "QA-mt test2", "Conv-mt dev", "Conv-mt test2",
)
_STRINGS = (
    "meeting", "split", "setting", "mode", "model", "question_type", "answer_position",
    "evaluator", "annotator", "note", "facet", "level", "setting_mode", "evaluator_a",
    "evaluator_b", "method", "reference", "raters", "group", "icc_type", "judge", "human",
    "effect", "stage", "statistic", "ranking", "design", "target", "isolated", "bucket",
    "model_a", "model_b", "order", "verdict", "criterion", "baseline", "variant", "language",
    "backend", "backend_options", "prompt_hash", "prompt_options", "versions", "status",
    "source", "reason", "response_key", "response", "question", "question_conv", "study",
    "assignment", "expected", "reply",
)
#: Each column name's type in every table that has it (unless :data:`TABLE_TYPES` says).
COLUMN_TYPES: dict[str, pa.DataType] = {
    **{c: _I for c in _INTEGERS}, **{c: _F for c in _FLOATS}, **{c: _S for c in _STRINGS},
    "reached": _B, "followed": _B, "created_at": TIMESTAMP,
}
#: Where a table gives a column name another meaning.
TABLE_TYPES: dict[str, dict[str, pa.DataType]] = {
    # the name of the aggregate compared with the reference, not its value
    "silver-aggregate-agreement": {"aggregate": _S},
    # the interleaved run's label (MODEL (int2)), not a run id
    "interleaving": {"run": _S},
}
#: The files of ``export label-studio DIR`` that hold rows: one task per response to score,
#: blind (no model, run or setting: what the annotation page shows, and the response's key).
LABEL_STUDIO_COLUMNS: dict[str, tuple[str, ...]] = {
    "label-studio/tasks": ("response_key", "meeting", "question_id", "question", "reference",
                           "response"),
}
#: Columns that identify a row: never null (a response's question and run, an evaluator).
_KEYS = ("meeting", "question_id", "split", "setting", "mode", "model", "evaluator")
REQUIRED: dict[str, tuple[str, ...]] = {
    "scores": (*_KEYS, "score"),
    "unscored": _KEYS,
    "silver-aggregate": _KEYS,
    "pairwise-judgments": ("meeting", "question_id", "split", "setting", "mode", "evaluator",
                           "model_a", "model_b", "order", "sample"),
    "runs": ("run", "model", "setting", "mode", "split"),
    "fillers": ("run", "model", "split", "mode", "conversation", "turn"),
    "dataset/scores": ("response_key", *_KEYS, "score"),
    "dataset/responses": ("response_key", "meeting", "question_id", "split", "setting",
                          "mode", "model"),
    "dataset/questions": ("meeting", "question_id", "split", "question_type"),
    "dataset/studies": ("study", "evaluator", "created_at"),
    "label-studio/tasks": LABEL_STUDIO_COLUMNS["label-studio/tasks"],
}

#: The files of ``export dataset`` (``dataset/NAME``) with their columns.
DATASET_COLUMNS: dict[str, tuple[str, ...]] = {
    "dataset/scores": ("response_key", *SCORE_COLUMNS),
    "dataset/responses": ("response_key", "meeting", "question_id", "split", "setting", "mode",
                          "seed", "model", "response"),
    "dataset/questions": ("meeting", "question_id", "split", "question_type",
                          "answer_position", "question", "question_conv", "reference"),
    "dataset/studies": ("study", "evaluator", "assignment", "per_item", "attention_rate",
                        "status", "created_at", "items", "annotators"),
}
#: Tables outside the contract's :data:`~elitr_core.vocab.EXPORT_COLUMNS` with their columns.
OTHER_COLUMNS: dict[str, tuple[str, ...]] = {
    "unscored": (*SCORE_COLUMNS[:-1], "status", "reason"),
}


def declared(table: str) -> bool:
    """Whether export table ``table`` has a declared schema."""
    return any(table in names for names in (EXPORT_COLUMNS, OTHER_COLUMNS, DATASET_COLUMNS,
                                            LABEL_STUDIO_COLUMNS))


def declared_schema(table: str) -> pa.Schema:
    """The Arrow schema of export table ``table`` (KeyError for a table of no schema)."""
    names = (EXPORT_COLUMNS.get(table) or OTHER_COLUMNS.get(table)
             or LABEL_STUDIO_COLUMNS.get(table) or DATASET_COLUMNS[table])
    required = set(REQUIRED.get(table, ()))
    types = {**COLUMN_TYPES, **TABLE_TYPES.get(table, {})}
    return pa.schema([pa.field(c, types[c], nullable=c not in required) for c in names])


def column_array(values: Any, kind: pa.DataType, *, table: str, column: str) -> pa.Array:
    """``values`` (a pandas Series) as an Arrow array of the declared type: whole floats as
    integers, texts of digits as integers (a ``question_id`` read as text), ISO texts and
    datetimes as UTC timestamps, NaN and infinities as null.

    Raises
    ------
    ValueError
        A value that the declared type cannot hold (a fraction in an integer column): a
        table built wrong, named with its table and column.
    """
    import numpy as np
    import pandas as pd

    series = pd.Series(values).astype(object)
    present = series.notna()
    try:
        if pa.types.is_integer(kind):
            numbers = pd.to_numeric(series[present], errors="raise").astype("float64")
            if not np.all(np.isfinite(numbers)) or not np.all(numbers == np.round(numbers)):
                raise ValueError("a value that is not a whole number")
            cells: list[Any] = [None] * len(series)
            for i, value in zip(np.flatnonzero(present.to_numpy()), series[present], strict=True):
                cells[i] = int(value) if not isinstance(value, float) else int(round(value))
            return pa.array(cells, type=kind)
        if pa.types.is_floating(kind):
            numbers = pd.to_numeric(series, errors="raise").astype("float64")
            return pa.array(numbers.where(np.isfinite(numbers), np.nan), type=kind,
                            from_pandas=True)
        if pa.types.is_timestamp(kind):
            stamps = pd.to_datetime(series, utc=True, format="ISO8601")
            return pa.array(stamps, type=kind, from_pandas=True)
        if pa.types.is_boolean(kind):
            return pa.array([None if not ok else bool(v) for v, ok in zip(series, present,
                                                                         strict=True)],
                            type=kind)
        return pa.array([None if not ok else str(v) for v, ok in zip(series, present,
                                                                    strict=True)], type=kind)
    except (ValueError, TypeError, OverflowError, pa.ArrowInvalid) as exc:
        raise ValueError(f"internal: column {column!r} of table {table!r} does not fit its "
                         f"declared type {kind}: {exc}") from None


def typed_table(frame: Any, table: str) -> pa.Table:
    """``frame`` as an Arrow table of :func:`declared_schema` (its columns in order).

    Raises
    ------
    ValueError
        The frame's columns are not the table's, or a value does not fit its column's type
        or is null in a column that may not be (an internal error: the table was built
        wrong).
    """
    schema = declared_schema(table)
    if list(frame.columns) != schema.names:
        raise ValueError(f"internal: table {table} has columns {list(frame.columns)}, "
                         f"declared {schema.names}")
    arrays = [column_array(frame[f.name], f.type, table=table, column=f.name) for f in schema]
    for field, array in zip(schema, arrays, strict=True):
        if not field.nullable and array.null_count:
            raise ValueError(f"internal: column {field.name!r} of table {table!r} holds "
                             f"{array.null_count} nulls; it may not hold any")
    return pa.Table.from_arrays(arrays, schema=schema)
