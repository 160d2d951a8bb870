"""Where models fail: breakdown by question facet, lost in the middle, QA/Conv questions.

Every function pools over whatever the input frame holds (splits, settings, modes, seeds):
filter the scores table first (e.g. ``split == "test2"``, ``setting == "qa"``) to get one of
the paper's cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.leaderboard import response_scores
from elitr_core.vocab import EXPORT_COLUMNS, setting_mode_label

#: The two facets of a question and their levels in display order.
FACET_LEVELS: dict[str, tuple[str, ...]] = {
    "question_type": ("who", "what", "when", "howmany"),
    "answer_position": ("B", "M", "E", "S"),
}

#: ``answer_position`` of middle-of-the-transcript questions (the lost-in-the-middle group).
MIDDLE = "M"


def _with_groups(
    responses: pd.DataFrame, groups: Mapping[str, Sequence[str]] | None
) -> pd.DataFrame:
    """Append each group's responses again, with the group name in the ``model`` column."""
    if not groups:
        return responses
    models = set(responses["model"])
    parts = [responses]
    for name, members in groups.items():
        if name in models:
            raise UserError(f"model group {name!r} has the name of a model: rename the group")
        present = [m for m in members if m in models]
        if not present:
            raise UserError(
                f"model group {name!r}: none of {list(members)} has a score here; "
                f"models present: {sorted(models)}"
            )
        parts.append(responses[responses["model"].isin(present)].assign(model=name))
    return pd.concat(parts, ignore_index=True)


def breakdown(
    df: pd.DataFrame, groups: Mapping[str, Sequence[str]] | None = None
) -> pd.DataFrame:
    """Mean score per model, evaluator, facet (question type or answer position) and level.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table (``elitr_core.vocab.SCORE_COLUMNS``); annotators and judge samples
        are first collapsed to one score per response.
    groups : mapping of str to list of str, optional
        Model groups such as ``{"GPT": ["GPT-3.5", "GPT-4"]}``. Each group adds rows whose
        ``model`` is the group name and whose mean pools the responses of its members (not a
        mean of member means). Members absent from ``df`` are ignored, so one mapping serves
        every filter; a group with no member present raises.

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["breakdown"]``; levels in ``FACET_LEVELS`` order, models in
        order of first appearance, groups after the models. Only observed levels appear.

    Raises
    ------
    DegenerateDataError
        When no row has a score.
    UserError
        When a group has no member present or carries a model's name, or a scored response
        lacks its question type or answer position.
    """
    responses = _with_groups(response_scores(df, required=FACET_LEVELS), groups)
    parts = []
    for facet, levels in FACET_LEVELS.items():
        table = (
            responses.groupby(["model", "evaluator", facet], sort=False)["score"]
            .agg(n="size", mean="mean")
            .reset_index()
            .rename(columns={facet: "level"})
            .assign(facet=facet)
        )
        rank = {level: i for i, level in enumerate(levels)}
        table["_rank"] = table["level"].map(lambda v, r=rank: r.get(v, len(r)))
        parts.append(table.sort_values(["evaluator", "_rank", "level"], kind="stable"))
    out = pd.concat(parts, ignore_index=True)
    out["n"] = out["n"].astype("int64")
    return out[list(EXPORT_COLUMNS["breakdown"])]


def lost_in_middle(df: pd.DataFrame, *, alpha: float | None = None) -> pd.DataFrame:
    """One-tailed Welch t-test per model and evaluator: are middle questions scored lower?

    H1: the mean score of questions whose answer lies in the middle third of the transcript
    (``answer_position == "M"``) is lower than the mean over all other positions (B, E, S).
    ``t = (mean_middle - mean_other) / sqrt(s_m^2 / n_m + s_o^2 / n_o)`` with Welch's degrees
    of freedom; ``p`` is the lower-tail probability.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table; pooled over whatever splits, settings and seeds it holds.
    alpha : float, optional
        Unused by the test itself; when given, only rows with ``p < alpha`` are returned
        (the paper marks the effect at 0.05).

    Returns
    -------
    pandas.DataFrame
        Columns ``EXPORT_COLUMNS["lost-in-middle"]``. A (model, evaluator) pair whose group
        has fewer than 2 responses or whose groups are both constant (the t statistic is then
        undefined) keeps its row with empty ``t`` and ``p`` and a ``note`` naming the cause
        (also listed in ``result.attrs["skipped"]`` as ``(model, evaluator, reason)``), also
        when it is the only pair (one constant model: its row, not an error).

    Raises
    ------
    DegenerateDataError
        When no row has a score.
    UserError
        When a scored response has no ``answer_position``.

    References
    ----------
    Welch, B. L. (1947). The generalization of "Student's" problem when several different
    population variances are involved. Biometrika 34(1-2), 28-35.
    Liu et al. (2024). Lost in the Middle: How Language Models Use Long Contexts. TACL 12.
    """
    responses = response_scores(df, required=["answer_position"])
    rows: list[dict[str, object]] = []
    skipped: list[tuple[str, str, str]] = []
    for (model, evaluator), group in responses.groupby(["model", "evaluator"], sort=False):
        is_middle = (group["answer_position"] == MIDDLE).to_numpy()
        middle, other = group["score"].to_numpy()[is_middle], group["score"].to_numpy()[~is_middle]
        row: dict[str, object] = {
            "model": model, "evaluator": evaluator, "n_middle": len(middle),
            "n_other": len(other), "t": np.nan, "p": np.nan, "note": "",
            "mean_middle": float(middle.mean()) if len(middle) else np.nan,
            "mean_other": float(other.mean()) if len(other) else np.nan}
        if len(middle) < 2 or len(other) < 2:
            row["note"] = f"{len(middle)} middle and {len(other)} other responses (need 2 each)"
        elif middle.var() == 0 and other.var() == 0:
            row["note"] = "both groups have constant scores: Welch's t is undefined"
        else:
            test = stats.ttest_ind(middle, other, equal_var=False, alternative="less")
            row.update(t=float(test.statistic), p=float(test.pvalue))
        if row["note"]:
            skipped.append((str(model), str(evaluator), str(row["note"])))
        rows.append(row)
    if not rows:
        raise DegenerateDataError("no scored response here: lost in the middle needs scores")
    out = pd.DataFrame(rows, columns=list(EXPORT_COLUMNS["lost-in-middle"]))
    if alpha is not None:
        out = out[out["p"] < alpha].reset_index(drop=True)
    out.attrs["skipped"] = skipped
    return out


def differentiating_questions(
    df: pd.DataFrame, questions: Iterable[tuple[str, str]]
) -> pd.DataFrame:
    """Mean score of the QA/Conv differentiating questions per setting-mode, model, evaluator.

    The differentiating questions are those whose Conv text differs from the QA text (16 in
    dev, 17 in test2); the scores table does not carry texts, so the caller passes their keys.

    Parameters
    ----------
    df : pandas.DataFrame
        Long scores table.
    questions : iterable of (meeting, question_id)
        Keys of the differentiating questions, e.g. ``("meeting_en_dev_001", "3")``. The
        question id is compared as a string.

    Returns
    -------
    pandas.DataFrame
        Columns ``model, evaluator, setting_mode, n, mean`` where ``setting_mode`` is
        ``QA-st``, ``QA-mt`` or ``Conv-mt``; pooled over splits and seeds (mean over the
        responses, not of per-split means).

    Raises
    ------
    DegenerateDataError
        When no scored response matches the keys.
    """
    keys = {(str(m), str(q)) for m, q in questions}
    if not keys:
        raise UserError("no differentiating question given: pass (meeting, question_id) keys")
    responses = response_scores(df)
    pairs = zip(responses["meeting"], responses["question_id"], strict=True)
    mask = [(str(m), str(q)) in keys for m, q in pairs]
    chosen = responses[mask]
    if chosen.empty:
        raise DegenerateDataError(
            f"none of the {len(keys)} differentiating questions has a score here"
        )
    chosen = chosen.assign(setting_mode=[
        setting_mode_label(s, m) for s, m in zip(chosen["setting"], chosen["mode"], strict=True)
    ])
    out = (
        chosen.groupby(["model", "evaluator", "setting_mode"], sort=False)["score"]
        .agg(n="size", mean="mean")
        .reset_index()
    )
    out["n"] = out["n"].astype("int64")
    return out
