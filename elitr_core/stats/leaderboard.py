"""The leaderboard: mean 1-10 score per model, setting, mode, split and evaluator.

Missing values follow one rule in this package: a cell that is undefined by construction (the
standard deviation over a single seed, a confidence interval on one response) holds ``pd.NA`` in
a nullable ``Float64`` column, never a float NaN. ``DataFrame.to_csv`` writes it as an empty
cell and ``to_json`` as ``null``; every other cell is finite.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from elitr_core.errors import UserError
from elitr_core.stats.frame import check_not_empty, per_response
from elitr_core.vocab import (
    EXPORT_COLUMNS,
    MEAN_SPLITS,
    SETTING_MODE_ORDER,
    setting_mode_label,
)

_RUN_KEY = ["model", "setting", "mode", "split", "evaluator"]


#: Columns that must hold a value on every scored row (``seed`` and ``annotator`` may not).
IDENTITY_COLUMNS: tuple[str, ...] = (
    "meeting", "question_id", "split", "setting", "mode", "model", "evaluator",
)


def response_scores(df: pd.DataFrame, *, required: Iterable[str] = ()) -> pd.DataFrame:
    """:func:`per_response` plus checks that something is left and that no key is missing.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table.
    required : iterable of str
        Columns that must be filled besides ``IDENTITY_COLUMNS`` (e.g. ``answer_position``
        for the lost-in-the-middle test); a row missing one would otherwise be dropped by a
        groupby or land in the wrong group.

    Raises
    ------
    UserError
        When a column of the scores table is missing, or a scored row lacks a required value.
    DegenerateDataError
        When no row has a score (empty frame, or NaN scores only).
    """
    check_not_empty(df)
    responses = per_response(df)
    check_not_empty(responses, what="the current filters (every score is empty)")
    for column in (*IDENTITY_COLUMNS, *required):
        blank = int(responses[column].isna().sum())
        if blank:
            raise UserError(
                f"{blank} scored response(s) have no {column}: fill it in or filter them out"
            )
    return responses


def _seed_means(responses: pd.DataFrame) -> pd.DataFrame:
    """Mean and response count per run key and seed, plus per-seed ``split == "mean"`` rows."""
    frame = responses.copy()
    # an unrecorded seed is one run of its own: a sentinel keeps it through groupby
    frame["seed"] = frame["seed"].astype("Float64").fillna(-np.inf)
    per_seed = (
        frame.groupby([*_RUN_KEY, "seed"], sort=False)["score"]
        .agg(n="size", mean="mean")
        .reset_index()
    )
    dev, test2 = (per_seed[per_seed["split"] == s].drop(columns="split") for s in MEAN_SPLITS)
    both = dev.merge(test2, on=[k for k in [*_RUN_KEY, "seed"] if k != "split"],
                     suffixes=("_a", "_b"))
    # unweighted mean of the two splits, as the paper's "mean" column (not a pooled mean)
    mean_rows = both.assign(
        split="mean", n=both["n_a"] + both["n_b"], mean=(both["mean_a"] + both["mean_b"]) / 2
    )[per_seed.columns]
    return pd.concat([per_seed, mean_rows], ignore_index=True)


def leaderboard(df: pd.DataFrame) -> pd.DataFrame:
    """Mean score per model, setting, mode, split and evaluator, over seeds.

    Annotators and judge samples are first collapsed to one score per response
    (:func:`~elitr_core.stats.frame.per_response`). For each run key the mean over responses is
    computed per seed; ``mean`` is the mean of these per-seed means and ``std`` their sample
    standard deviation (``ddof=1``).

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["leaderboard"]``. ``n`` is the number of responses (over all
        seeds), ``n_seeds`` the number of runs: distinct seeds, an unrecorded seed (NaN)
        counting as one run. ``std`` is ``pd.NA`` (empty CSV cell) when ``n_seeds == 1``.
        Rows with ``split == "mean"`` hold, per seed, the unweighted mean of the ``dev`` and
        ``test2`` means (only seeds present in both splits), then the same mean/std over seeds;
        their ``n`` is the sum of both splits' responses. ``note`` is empty here (the
        export fills it for a model none of whose scores is usable, ``export.unusable``).

    Raises
    ------
    DegenerateDataError
        When no row has a score.

    References
    ----------
    Thonet, Rozen, Besacier (2024). ELITR-Bench: A Meeting Assistant Benchmark for
    Long-Context Language Models. arXiv:2403.20262 (main results table).

    Examples
    --------
    >>> board = leaderboard(scores)  # doctest: +SKIP
    >>> board.query("split == 'test2' and evaluator == 'gpt-4'")  # doctest: +SKIP
    """
    per_seed = _seed_means(response_scores(df))
    grouped = per_seed.groupby(_RUN_KEY, sort=False)
    out = grouped.agg(
        n=("n", "sum"), mean=("mean", "mean"), n_seeds=("seed", "size")
    ).reset_index()
    std = grouped["mean"].std(ddof=1).reset_index(drop=True)
    out["std"] = pd.array(std.where(out["n_seeds"] > 1), dtype="Float64")
    out["n"] = out["n"].astype("int64")
    out["n_seeds"] = out["n_seeds"].astype("int64")
    out["note"] = ""  # filled where a model has no usable score (export.unusable)
    setting_rank = {sm: i for i, sm in enumerate(SETTING_MODE_ORDER)}
    out = out.assign(
        _sm=[setting_rank.get(sm, len(setting_rank))
             for sm in zip(out["setting"], out["mode"], strict=True)],
        _split=out["split"].map({"dev": 0, "test2": 1, "mean": 3}).fillna(2),
    ).sort_values(["evaluator", "_sm", "setting", "mode", "_split", "split"], kind="stable")
    return out[list(EXPORT_COLUMNS["leaderboard"])].reset_index(drop=True)


def _ordered_columns(columns: Iterable[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Paper order: QA-st, QA-mt, Conv-mt (others after), and dev, test2, mean within each."""
    setting_rank = {sm: i for i, sm in enumerate(SETTING_MODE_ORDER)}
    split_rank = {"dev": 0, "test2": 1, "mean": 3}
    return sorted(
        columns,
        key=lambda c: (setting_rank.get((c[0], c[1]), len(setting_rank)), c[0], c[1],
                       split_rank.get(c[2], 2), c[2]),
    )


def board_wide(board: pd.DataFrame, evaluator: str, value: str = "mean") -> pd.DataFrame:
    """The main-table layout (settings side by side, dev/test2/mean) of a long leaderboard.

    Parameters
    ----------
    board : pandas.DataFrame
        The ``leaderboard`` export table (:func:`leaderboard`).
    evaluator : str
        Evaluator whose rows to lay out.
    value : {"mean", "std", "n", "n_seeds"}
        Which column of ``board`` fills the cells.

    Returns
    -------
    pandas.DataFrame
        Index ``model`` (order of first appearance in ``board``), columns such as
        ``"QA-st dev"``, ``"QA-st test2"``, ``"QA-st mean"`` in the paper's order; the same
        layout as :func:`leaderboard_wide` for ``value="mean"``.

    Raises
    ------
    UserError
        When ``evaluator`` has no row in ``board``.
    """
    rows = board[board["evaluator"] == evaluator]
    if rows.empty:
        known = sorted(board["evaluator"].unique().tolist())
        raise UserError(f"evaluator {evaluator!r} has no score here; choose one of {known}")
    wide = rows.pivot(index="model", columns=["setting", "mode", "split"], values=value)
    cols = _ordered_columns(wide.columns)
    wide = wide[cols]
    wide.columns = [f"{setting_mode_label(s, m)} {split}" for s, m, split in cols]
    wide.columns.name = None
    return wide.loc[list(pd.unique(rows["model"]))]


def leaderboard_wide(df: pd.DataFrame, evaluator: str) -> pd.DataFrame:
    """The paper's main-table layout for one evaluator.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``).
    evaluator : str
        Evaluator slug, e.g. ``"gpt-4"``.

    Returns
    -------
    pandas.DataFrame
        One row per model (index ``model``, in order of first appearance in ``df``), one
        ``Float64`` column per setting-mode and split, labelled like ``"QA-st dev"``,
        ``"QA-st test2"``, ``"QA-st mean"``, then QA-mt and Conv-mt. A model with no score in
        a column (e.g. a model run in single-turn only) has ``pd.NA`` there.

    Raises
    ------
    UserError
        When ``evaluator`` has no score in ``df``.
    """
    known = df["evaluator"].dropna().unique().tolist() if "evaluator" in df.columns else []
    if evaluator not in known:
        raise UserError(
            f"evaluator {evaluator!r} has no score here; choose one of {sorted(known)}"
        )
    wide = board_wide(leaderboard(df[df["evaluator"] == evaluator]), evaluator)
    order = [m for m in pd.unique(df.loc[df["evaluator"] == evaluator, "model"]) if m in wide.index]
    return wide.loc[order].astype("Float64")
