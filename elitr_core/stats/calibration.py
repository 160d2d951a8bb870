"""Evaluator comparison: mean score per evaluator, and score-bin calibration to a reference.

Both work on one score per (response, evaluator) (:func:`~elitr_core.stats.frame.per_response`:
a human pool's aggregate row, or the mean of a judge's samples).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.frame import RESPONSE_KEY, ZERO_WIDTH
from elitr_core.stats.intervals import clip_to_scale
from elitr_core.stats.leaderboard import response_scores
from elitr_core.vocab import EXPORT_COLUMNS, SCORE_MAX, SCORE_MIN


def _score_table(responses: pd.DataFrame) -> pd.DataFrame:
    """Responses as rows (a ``_response`` id column), evaluators as columns."""
    ids = responses.groupby(list(RESPONSE_KEY), dropna=False, sort=False).ngroup()
    return responses.assign(_response=ids).pivot_table(
        index="_response", columns="evaluator", values="score", aggfunc="mean"
    )


def evaluator_means(df: pd.DataFrame) -> pd.DataFrame:
    """Mean score per model for each evaluator, on its own responses and on the common ones.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["evaluator-means"]``, models in order of first appearance:
        ``n`` and ``mean`` over every response of the model the evaluator scored (its own set,
        which an evaluator that scored more or fewer responses does not change), then
        ``n_common`` and ``mean_common`` over the model's responses that every evaluator in
        ``df`` scored (the paper's comparison: test2, QA-st, 3 models, 390 responses);
        ``n_common`` is 0 and ``mean_common`` empty where there is none. ``note`` is empty
        here (the export fills it for a model with no usable score, ``export.unusable``).

    Raises
    ------
    DegenerateDataError
        When no row has a score.
    """
    responses = response_scores(df)
    out = (responses.groupby(["model", "evaluator"], sort=False)["score"]
           .agg(n="size", mean="mean").reset_index())
    table = _score_table(responses)
    complete = table.index[table.notna().all(axis=1)]
    ids = responses.groupby(list(RESPONSE_KEY), dropna=False, sort=False).ngroup()
    common = (responses[ids.isin(complete)].groupby(["model", "evaluator"], sort=False)["score"]
              .agg(n_common="size", mean_common="mean").reset_index())
    out = out.merge(common, on=["model", "evaluator"], how="left", sort=False)
    out["n"] = out["n"].astype("int64")
    out["n_common"] = out["n_common"].fillna(0).astype("int64")
    out["note"] = ""  # filled where a model has no usable score (export.unusable)
    return out[list(EXPORT_COLUMNS["evaluator-means"])]


def score_bin(reference_scores: pd.Series) -> pd.Series:
    """Calibration bin of reference scores: rounded to the nearest integer, halves up.

    Halves go up (6.5 -> 7), unlike Python's and numpy's round-half-to-even, so that a silver
    mean such as 6.5 and 7.5 do not land in the same even bin by accident.
    """
    return np.floor(reference_scores.astype("float64") + 0.5).astype("int64")


def _bin_rows(scores: np.ndarray, confidence: float) -> tuple[int, float, object, object, str]:
    """n, mean, the t-interval of one bin's scores and a note; ``pd.NA`` bounds and the reason
    when n == 1 or every score of the bin is the same (a zero-width interval)."""
    n = len(scores)
    mean = float(scores.mean())
    if n < 2:
        return n, mean, pd.NA, pd.NA, "1 response in this bin: no interval"
    if np.ptp(scores) == 0:
        return n, mean, pd.NA, pd.NA, f"all {n} scores in this bin are {mean:g}: {ZERO_WIDTH}"
    half = stats.t.ppf(0.5 + confidence / 2, df=n - 1) * scores.std(ddof=1) / np.sqrt(n)
    return n, mean, *clip_to_scale(mean - half, mean + half), ""


def calibration(
    df: pd.DataFrame,
    reference: str = "gold-human",
    *,
    evaluators: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Score-bin calibration of evaluators against a reference evaluator.

    Each response scored by both the reference and the evaluator falls in the bin of its
    reference score rounded to the nearest integer (halves up, :func:`score_bin`). Per bin:
    the number of responses, the evaluator's mean score and its t confidence interval
    ``mean +/- t_{(1+confidence)/2, n-1} * s / sqrt(n)`` (``s`` the sample std), cut to the
    1..10 scale every score lies on (:func:`~elitr_core.stats.intervals.clip_to_scale`).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).
    reference : str, default "gold-human"
        Evaluator whose scores define the bins.
    evaluators : sequence of str, optional
        Evaluators to calibrate; by default every other evaluator in ``df``.
    confidence : float, default 0.95
        Confidence level of the interval, in (0, 1).

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["calibration"]``; only bins holding at least one response.
        With ``n == 1`` the interval is undefined: ``ci_low`` and ``ci_high`` are ``pd.NA``
        (empty CSV cells), and so they are for a constant bin (``s == 0``: a zero-width
        interval); ``note`` says which.

    Raises
    ------
    UserError
        When ``reference`` or a requested evaluator has no score, ``confidence`` is outside
        (0, 1), or a reference score rounds outside 1..10.
    DegenerateDataError
        When no other evaluator shares a response with the reference.

    References
    ----------
    Thonet, Rozen, Besacier (2024). ELITR-Bench, arXiv:2403.20262 (score-bin calibration
    figure of the judge-vs-human comparison).
    """
    if not 0 < confidence < 1:
        raise UserError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    table = _score_table(response_scores(df))
    present = [str(c) for c in table.columns]
    if reference not in present:
        raise UserError(f"reference evaluator {reference!r} has no score; choose one of {present}")
    others = [e for e in present if e != reference] if evaluators is None else list(evaluators)
    missing = [e for e in others if e not in present]
    if missing:
        raise UserError(f"evaluator(s) {missing} have no score; choose among {present}")
    rows = []
    for evaluator in others:
        pair = table[[reference, evaluator]].dropna()
        bins = score_bin(pair[reference])
        if len(pair) and (bins.min() < SCORE_MIN or bins.max() > SCORE_MAX):
            raise UserError(f"{reference} scores must lie in {SCORE_MIN:.0f}..{SCORE_MAX:.0f}, "
                            f"found {pair[reference].min()}..{pair[reference].max()}")
        for value in sorted(bins.unique()):
            in_bin = pair[evaluator].to_numpy()[(bins == value).to_numpy()]
            rows.append((reference, evaluator, int(value), *_bin_rows(in_bin, confidence)))
    if not rows:
        raise DegenerateDataError(
            f"no other evaluator scored the responses that {reference!r} scored"
        )
    out = pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["calibration"]))
    out[["ci_low", "ci_high"]] = out[["ci_low", "ci_high"]].astype("Float64")
    return out
