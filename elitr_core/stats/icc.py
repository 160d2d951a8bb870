"""Inter-rater reliability: intraclass correlations (pingouin) and Krippendorff's alpha.

ICC rows use the classic Shrout & Fleiss names: ``ICC(1)``, ``ICC(2)``, ``ICC(3)`` for a single
rating and ``ICC(1,k)``, ``ICC(2,k)``, ``ICC(3,k)`` for the mean of k ratings. pingouin 0.7
names them after McGraw & Wong (``ICC(1,1)``, ``ICC(A,1)``, ``ICC(C,1)``, ``ICC(1,k)``,
``ICC(A,k)``, ``ICC(C,k)``); older releases used ``ICC1`` ... ``ICC3k``; both are mapped.

An ICC needs a complete targets x raters table. ``nan_policy="raise"`` refuses incomplete
targets with a message that counts them; ``"omit"`` first leaves out a rater who rated too few
targets (:func:`~elitr_core.stats.icc_design.usable_raters`), then drops the incomplete targets,
says both in the ``note`` and records the number of targets dropped per group in
``table.attrs["dropped_targets"]``. Krippendorff's alpha needs no complete table.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pingouin

from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats.alpha import KRIPPENDORFF_LEVELS, alpha_cell, alpha_of
from elitr_core.stats.frame import (
    RESPONSE_KEY,
    check_columns,
    check_not_empty,
    per_response,
)
from elitr_core.stats.icc_design import (
    annotator_rows,
    dropped_targets_note,
    join_notes,
    overall_slots,
    response_slots,
    usable_raters,
)
from elitr_core.vocab import EXPORT_COLUMNS

ICC_TYPES: tuple[str, ...] = ("ICC(1)", "ICC(2)", "ICC(3)", "ICC(1,k)", "ICC(2,k)", "ICC(3,k)")
_PINGOUIN_NAMES: dict[str, str] = {
    "ICC(1,1)": "ICC(1)", "ICC(A,1)": "ICC(2)", "ICC(C,1)": "ICC(3)",
    "ICC(1,k)": "ICC(1,k)", "ICC(A,k)": "ICC(2,k)", "ICC(C,k)": "ICC(3,k)",
    "ICC1": "ICC(1)", "ICC2": "ICC(2)", "ICC3": "ICC(3)",
    "ICC1k": "ICC(1,k)", "ICC2k": "ICC(2,k)", "ICC3k": "ICC(3,k)",
}
NAN_POLICIES = ("raise", "omit")
__all__ = ["KRIPPENDORFF_LEVELS", "icc_table", "krippendorff_alpha"]
#: Koo & Li (2016) bands below 0.9: (exclusive upper bound, reading); 0.9 itself is "good"
_READINGS = ((0.5, "poor"), (0.75, "moderate"), (0.9, "good"))
_PINGOUIN_LOCK = threading.Lock()
_TARGET, _RATER, _RATING = "_target", "_rater", "_rating"
#: columns of :func:`icc_table`; the export adds ``raters`` (whose ICC a row is) in front
ICC_COLUMNS: tuple[str, ...] = tuple(c for c in EXPORT_COLUMNS["icc"] if c != "raters")


def koo_li_reading(icc: float) -> str:
    """Koo & Li (2016) reading: < 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, > 0.9 excellent.

    References
    ----------
    Koo, T. K., & Li, M. Y. (2016). A guideline of selecting and reporting intraclass
    correlation coefficients for reliability research. J. Chiropr. Med., 15(2), 155-163.
    """
    if not np.isfinite(icc):
        raise DegenerateDataError("an undefined ICC has no reading")
    for bound, reading in _READINGS:
        if icc < bound:
            return reading
    return "excellent" if icc > 0.9 else "good"


def with_reading(table: pd.DataFrame) -> pd.DataFrame:
    """A copy of an ICC table with a ``reading`` column (:func:`koo_li_reading` of ``icc``;
    ``undefined`` where the ICC is, its ``note`` says why)."""
    out = table.copy()
    out["reading"] = [koo_li_reading(v) if pd.notna(v) and np.isfinite(v) else "undefined"
                      for v in out["icc"]]
    return out


def _complete_table(long: pd.DataFrame, nan_policy: str,
                    label: str) -> tuple[pd.DataFrame, int, str]:
    """Targets x raters matrix without incomplete targets, how many targets were dropped, and
    a note saying what was left out and why."""
    duplicated = long.duplicated([_TARGET, _RATER])
    if duplicated.any():
        raise UserError(f"{label}: {int(duplicated.sum())} target(s) rated twice by one rater; "
                        "average them first or pick one sample")
    table = long.pivot(index=_TARGET, columns=_RATER, values=_RATING)
    incomplete = table.isna().any(axis=1)
    if incomplete.any() and nan_policy == "raise":
        raise UserError(
            f"{label}: {int(incomplete.sum())} of {len(table)} targets lack a rating from some "
            f"of the {table.shape[1]} raters; an ICC needs every rater to rate every target: "
            "use nan_policy='omit' to drop them, or Krippendorff's alpha")
    table, note = usable_raters(table)
    incomplete = table.isna().any(axis=1)
    note = join_notes(note, dropped_targets_note(int(incomplete.sum()), len(table)))
    table = table[~incomplete]
    if table.shape[0] < 2 or table.shape[1] < 2:
        raise DegenerateDataError(join_notes(
            f"{label}: an ICC needs at least 2 complete targets and 2 raters, found "
            f"{table.shape[0]} target(s) and {table.shape[1]} rater(s)", note))
    if table.size < 5:  # pingouin's two-way ANOVA refuses fewer (an assertion, not a message)
        raise DegenerateDataError(f"{label}: an ICC needs at least 5 ratings in a complete "
                                  f"table, found {table.shape[0]} x {table.shape[1]}")
    if np.ptp(table.to_numpy(float)) == 0:
        raise DegenerateDataError(f"{label}: every rating is the same, the ICC is undefined")
    return table, int(incomplete.sum()), note


def _pingouin_icc(table: pd.DataFrame) -> pd.DataFrame:
    long = table.rename_axis(index=_TARGET, columns=_RATER).stack().rename(_RATING).reset_index()
    # pingouin rounds CI95 to 2 decimals through a global option: lift it for this call only
    with _PINGOUIN_LOCK:
        saved = pingouin.options.get("round.column.CI95")
        pingouin.options["round.column.CI95"] = None
        try:
            with warnings.catch_warnings():
                # pingouin 0.7 calls dropna(inplace=True), deprecated by pandas 3.1: not ours
                warnings.filterwarnings("ignore", message="The inplace keyword")
                # zero mean squares divide by zero inside pingouin: degenerate_note says why
                warnings.filterwarnings("ignore", category=RuntimeWarning)
                result = pingouin.intraclass_corr(long, targets=_TARGET, raters=_RATER,
                                                  ratings=_RATING)
        finally:
            pingouin.options["round.column.CI95"] = saved
    return result


def mean_squares(table: pd.DataFrame) -> dict[str, float]:
    """Two-way ANOVA mean squares of a complete targets x raters table: between targets
    (``rows``), between raters (``columns``), residual (``error``), within targets
    (``within``), and the scale below which a mean square counts as zero."""
    y = table.to_numpy(float)
    n, k = y.shape
    grand = y.mean()
    ss_rows = k * ((y.mean(axis=1) - grand) ** 2).sum()
    ss_columns = n * ((y.mean(axis=0) - grand) ** 2).sum()
    ss_within = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum()
    return {"rows": ss_rows / (n - 1), "columns": ss_columns / (k - 1),
            "error": max(ss_within - ss_columns, 0.0) / ((n - 1) * (k - 1)),
            "within": ss_within / (n * (k - 1)),
            "zero": 1e-12 * max(1.0, float((y**2).mean()))}


def degenerate_note(table: pd.DataFrame) -> str:
    """Why an ICC of this table is partly undefined or has no interval (empty when it is fine)."""
    ms = mean_squares(table)
    if ms["rows"] <= ms["zero"]:
        return ("complete disagreement: every target's mean rating is the same while the "
                "raters differ on each, so the between-target variance is 0 and the single-"
                "rating ICCs are negative, as low as they go (ICC(1) = -1/(k-1)); the "
                "mean-of-k forms divide by that zero variance and are left empty, and the "
                "F-based intervals collapse to a point, so they are left empty too")
    if ms["within"] <= ms["zero"]:
        return ("perfect agreement (every rater gives each target the same score): the ICC "
                "is 1; the F-based interval is undefined where it divides by the zero "
                "residual variance")
    if ms["error"] <= ms["zero"]:
        return ("no residual variance (the raters differ by a constant offset only): the "
                "consistency ICC(3) is 1; the F-based intervals are undefined where they "
                "divide by it")
    return ""


def _values(row: pd.Series, name: str, disagreement: bool) -> list[float]:
    """ICC and interval of one pingouin row, NaN where they mean nothing (see the note)."""
    values = [float(row["ICC"]), *(float(v) for v in row["CI95"])]
    if disagreement:
        # between-target mean square 0: the k forms divide by it, the F intervals are points
        values = [values[0] if not name.endswith(",k)") else np.nan, np.nan, np.nan]
    # a division by a zero mean square gives inf or NaN: an empty cell, the note says why
    return [v if np.isfinite(v) else np.nan for v in values]


def _icc_rows(table: pd.DataFrame, group: str, forms: Sequence[str],
              note: str = "", alpha: float = np.nan) -> list[tuple[Any, ...]]:
    degenerate = degenerate_note(table)
    result = _pingouin_icc(table)
    rows = []
    for _, row in result.iterrows():
        name = _PINGOUIN_NAMES.get(str(row["Type"]))
        if name is None:
            raise RuntimeError(f"unknown pingouin ICC type {row['Type']!r}: update the name map")
        if name in forms:
            values = _values(row, name, degenerate.startswith("complete disagreement"))
            rows.append((group, name, *values, table.shape[0], table.shape[1], alpha,
                         join_notes(note, degenerate)))
    rows.sort(key=lambda r: ICC_TYPES.index(r[1]))
    return rows


def _check_forms(forms: Sequence[str] | None, nan_policy: str) -> Sequence[str]:
    if nan_policy not in NAN_POLICIES:
        raise UserError(f"nan_policy must be 'raise' or 'omit', not {nan_policy!r}")
    chosen = ICC_TYPES if forms is None else forms
    bad = [f for f in chosen if f not in ICC_TYPES]
    if bad or not chosen:
        raise UserError(f"unknown ICC form(s) {bad}: choose among {', '.join(ICC_TYPES)}")
    return chosen


def icc_table(
    df: pd.DataFrame,
    targets: str,
    raters: str,
    ratings: str,
    group: str | None = None,
    nan_policy: str = "raise",
    forms: Sequence[str] | None = None,
    raise_if_none: bool = True,
    alpha: bool = True,
) -> pd.DataFrame:
    """Intraclass correlations with 95% CIs, per group, from long-format ratings.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per (target, rater) rating.
    targets, raters, ratings : str
        Columns of the rated item, the rater and the numeric rating.
    group : str, optional
        Column to compute one ICC set per value of (``group`` is ``"all"`` without it).
    nan_policy : {"raise", "omit"}
        What to do with targets some rater did not rate (NaN ratings count as missing).
    forms : sequence of str, optional
        Subset of ``ICC_TYPES`` (default: all six).
    raise_if_none : bool
        Raise when no group gives an ICC (default); with ``False`` return their note rows.
    alpha : bool
        Fill ``alpha`` (default); ``False`` leaves it empty (the caller computes it on other
        rows, as the overall ICC does on the annotators rather than the slots).

    Returns
    -------
    pandas.DataFrame
        ``ICC_COLUMNS``: group, icc_type, icc, ci_low, ci_high, n_targets (complete targets
        used), n_raters (raters kept), alpha (Krippendorff's alpha, interval metric, of the
        group's every rating, incomplete targets included: :mod:`.alpha`; only with
        ``alpha``), note. ``attrs["dropped_targets"]`` maps each group to
        the number of incomplete targets dropped. The note says which raters and targets
        ``nan_policy="omit"`` left out and why. Degenerate tables get empty cells and a
        ``note`` naming the cause (:func:`degenerate_note`: complete disagreement, perfect
        agreement, no residual variance); a group with too few raters or targets, or one
        constant rating, gets rows with only its note, unless every group does (then the
        first such message is raised, unless ``raise_if_none`` is false).

    References
    ----------
    Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin, 86(2), 420-428.
    McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
    coefficients. Psychological Methods, 1(1), 30-46.

    Examples
    --------
    >>> icc_table(ratings, "item", "judge", "score")  # doctest: +SKIP
    """
    chosen = _check_forms(forms, nan_policy)
    check_columns(df, [targets, raters, ratings] + ([group] if group else []), what="ratings")
    check_not_empty(df)
    long = df.rename(columns={targets: _TARGET, raters: _RATER, ratings: _RATING})
    long = long.dropna(subset=[_TARGET, _RATER])
    groups = [("all", long)] if group is None else [
        (str(name), part) for name, part in long.groupby(group, sort=True)]
    rows: list[tuple[Any, ...]] = []
    dropped: dict[str, int] = {}
    refused: list[DegenerateDataError] = []
    for name, part in groups:
        value, alpha_note = (alpha_cell(part, _TARGET, _RATER, _RATING) if alpha
                             else (np.nan, ""))
        try:
            table, dropped[name], note = _complete_table(
                part[[_TARGET, _RATER, _RATING]], nan_policy, f"group {name}")
        except DegenerateDataError as error:
            if group is None and raise_if_none:
                raise
            # one meeting short of raters must not hide the others: its rows say why
            refused.append(error)
            counts = part.dropna(subset=[_RATING])
            rows.extend((name, form, np.nan, np.nan, np.nan, counts[_TARGET].nunique(),
                         counts[_RATER].nunique(), value,
                         join_notes(str(error).removeprefix(f"group {name}: "), alpha_note))
                        for form in ICC_TYPES if form in chosen)
            continue
        rows.extend(_icc_rows(table, name, chosen, join_notes(note, alpha_note), value))
    if len(refused) == len(groups) and raise_if_none:
        raise refused[0]
    out = pd.DataFrame(rows, columns=list(ICC_COLUMNS))
    out.attrs["dropped_targets"] = dropped
    return out


def annotator_icc_per_meeting(df: pd.DataFrame, evaluator: str = "silver-human",
                              forms: Sequence[str] | None = ("ICC(2,k)",),
                              nan_policy: str = "omit",
                              raise_if_none: bool = True) -> pd.DataFrame:
    """ICC of one human pool's annotators, per meeting (the same annotators rate a meeting).

    Targets are responses, raters the individual annotators (rows with an ``annotator``). The
    paper reads ICC(2,k): two-way random effects, absolute agreement, mean of k annotators. A
    meeting without two annotators on two common responses gets a row with only its note.
    """
    rows = annotator_rows(df, evaluator)
    return icc_table(rows, _TARGET, "annotator", "score", group="meeting",
                     nan_policy=nan_policy, forms=forms, raise_if_none=raise_if_none)


def annotator_icc_overall(df: pd.DataFrame, evaluator: str = "silver-human",
                          forms: Sequence[str] | None = ("ICC(1,k)",),
                          nan_policy: str = "omit") -> pd.DataFrame:
    """ICC over all meetings when annotators differ across meetings (group ``"all"``).

    Every response's ratings become rater slots 1..k, so every response has k ratings; only
    the one-way model, ICC(1,k) or ICC(1), is meaningful since a slot is not one person, and
    it needs no shared raters. Two ways to fill the slots, whichever keeps more ratings (the
    meetings' on a tie): per meeting, its annotators kept (sorted by name), for studies where
    a meeting's annotators rate its responses together
    (:func:`~elitr_core.stats.icc_design.overall_slots`); per response, its first k ratings by
    annotator name, for random assignment (``--assignment random --batch 8``: three
    annotators a response, no two sharing a second one;
    :func:`~elitr_core.stats.icc_design.response_slots`). The ``note`` says which it used and
    what it left out; ``alpha`` is Krippendorff's alpha of every annotator rating.
    """
    rows = annotator_rows(df, evaluator)
    if nan_policy == "raise":
        return _overall_raising(rows, forms)
    slots, note = overall_slots(rows, _TARGET, "annotator", "score")
    by_response, response_note = response_slots(rows, _TARGET, "annotator", "score")
    if len(by_response) > len(slots):
        slots, note = by_response, response_note
    if slots.empty:
        raise DegenerateDataError(join_notes(
            f"{evaluator}: no response has two annotator ratings, so there is no overall ICC "
            "yet", note))
    out = icc_table(slots, _TARGET, "slot", "score", nan_policy="raise", forms=forms,
                    alpha=False)
    out["alpha"], alpha_note = alpha_cell(rows, _TARGET, "annotator", "score")
    out["note"] = [join_notes(note, n, alpha_note) for n in out["note"]]
    return out


def _overall_raising(rows: pd.DataFrame, forms: Sequence[str] | None) -> pd.DataFrame:
    """The overall ICC refusing incomplete targets (``nan_policy="raise"``)."""
    # the export's scores frame holds categorical text, which pandas refuses to rank
    names = rows["annotator"].astype(str)
    rows["slot"] = names.groupby(rows["meeting"], observed=True).rank(method="dense").astype(int)
    return icc_table(rows, _TARGET, "slot", "score", nan_policy="raise", forms=forms)


def evaluator_icc(df: pd.DataFrame, evaluators: Sequence[str] | None = None,
                  forms: Sequence[str] | None = None, nan_policy: str = "omit") -> pd.DataFrame:
    """ICC across evaluators treated as raters, one score per (response, evaluator).

    Scores come from :func:`~elitr_core.stats.frame.per_response` (an aggregate row for a human
    pool, the mean of samples for a judge). With ``nan_policy="omit"`` the targets are the
    responses every chosen evaluator scored.
    """
    check_not_empty(df)
    check_columns(df, ["evaluator"])
    if evaluators is not None:
        df = df[df["evaluator"].isin(list(evaluators))]
    scores = per_response(df)
    check_not_empty(scores, what="these evaluators")
    scores["_target"] = scores.groupby(list(RESPONSE_KEY), sort=False, dropna=False).ngroup()
    return icc_table(scores, "_target", "evaluator", "score", nan_policy=nan_policy,
                     forms=forms)


def krippendorff_alpha(df: pd.DataFrame, evaluator: str = "silver-human",
                       level: str = "interval") -> float:
    """Krippendorff's alpha of one human pool's annotators; missing ratings are allowed.

    Units are responses, coders the individual annotators (all meetings together: an annotator
    who did not rate a response simply has no value there).

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for
    Communication Departmental Papers 43.
    """
    if level not in KRIPPENDORFF_LEVELS:
        raise UserError(f"level must be one of {', '.join(KRIPPENDORFF_LEVELS)}, not {level!r}")
    check_not_empty(df)
    return alpha_of(annotator_rows(df, evaluator), _TARGET, "annotator", "score", level,
                    label=evaluator)
