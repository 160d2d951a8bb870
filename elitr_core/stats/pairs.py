"""One judge and one human evaluator side by side, per response: the input of the judge audit.

Every judge-audit statistic (prediction-powered inference, recalibration, judge effects)
compares a judge evaluator with a human one on the same responses. :func:`judge_human_table`
builds that table once from the long ``scores`` table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import (
    QUESTION_KEY,
    RESPONSE_KEY,
    check_columns,
    check_not_empty,
    per_response,
    wide_by_evaluator,
)

#: Columns that group the judge audit's per-model tables, as in the leaderboard.
GROUP_KEY: tuple[str, ...] = ("split", "setting", "mode", "model")


def judge_human_table(df: pd.DataFrame, judge: str, human: str) -> pd.DataFrame:
    """Responses as rows with the ``judge`` and ``human`` score side by side.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).
    judge, human : str
        Evaluator slugs. Several rows of one evaluator per response (annotators, judge
        samples) are collapsed by :func:`~elitr_core.stats.frame.per_response`.

    Returns
    -------
    pandas.DataFrame
        The response key columns, ``question_type``, ``answer_position``, ``judge`` and
        ``human`` (NaN where that evaluator did not score the response; responses the judge
        did not score are dropped) and ``_question``, an integer code per question.

    Raises
    ------
    UserError
        When ``judge`` equals ``human`` or either has no score in ``df``.
    """
    check_not_empty(df)
    check_columns(df, ["evaluator", "score"])
    if judge == human:
        raise UserError(f"the judge and the human evaluator are both {judge}: choose two")
    present = set(df.loc[df["score"].notna(), "evaluator"].dropna().astype(str))
    for role, slug in (("judge", judge), ("human", human)):
        if slug not in present:
            raise UserError(f"no score from the {role} evaluator {slug} under the current "
                            f"filters; available: {', '.join(sorted(present)) or 'none'}")
    wide = wide_by_evaluator(per_response(df[df["evaluator"].isin([judge, human])]))
    wide = wide.rename(columns={judge: "judge", human: "human"})
    wide = wide[wide["judge"].notna()].reset_index(drop=True)
    wide["_question"] = wide.groupby(list(QUESTION_KEY), sort=False, dropna=False).ngroup()
    return wide


def with_response_columns(table: pd.DataFrame, extra: pd.DataFrame,
                          columns: list[str]) -> pd.DataFrame:
    """``table`` with ``columns`` of ``extra`` joined on the response key (left join).

    ``extra``'s key columns are cast to ``table``'s dtypes first: a frame read from the
    database holds ``seed`` as objects (None) where the scores table holds ``Int64``.
    """
    keys = list(RESPONSE_KEY)
    check_columns(extra, [*keys, *columns], what="response")
    right = extra[keys + columns].astype({k: table[k].dtype for k in keys})
    return table.merge(right, on=keys, how="left")


def labelled_only(table: pd.DataFrame, judge: str, human: str, minimum: int = 2) -> pd.DataFrame:
    """Rows of :func:`judge_human_table` that the human scored too (at least ``minimum``)."""
    both = table[table["human"].notna()].reset_index(drop=True)
    if len(both) < minimum:
        raise DegenerateDataError(
            f"{judge} and {human} scored {len(both)} response(s) in common, at least {minimum} "
            "are needed: widen the filters or collect human scores")
    return both


def z_quantile(confidence: float) -> float:
    """Two-sided normal quantile of a ``confidence`` interval (checks 0 < confidence < 1)."""
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    # scipy.stats.norm.ppf is ndtri behind argument checks that cost ~0.1 ms a call: the same
    # bits without them (the quantile is taken in every interval of every replicate)
    return float(special.ndtri(0.5 + confidence / 2))


def nullable(values: pd.Series | list[float]) -> pd.Series:
    """Floats as a nullable ``Float64`` column: NaN (undefined) becomes ``pd.NA``."""
    series = pd.Series(np.asarray(values, dtype=float))
    return series.astype("Float64").mask(series.isna())
