"""Models with no usable score of an evaluator in a table that reads it.

A model whose every score of an evaluator lapsed (the annotator's claim ran out), was excluded
or did not parse has no row in ``scores``, so the statistics never see it: left alone it would
vanish from the leaderboard and the evaluator means without a word. :func:`note_unusable` gives
it a row there, ``n`` 0 and its statistics empty, with a ``note`` counting what was stored and
why none of it counts (the rows themselves are listed by ``export unscored``). The tables that
pool models (correlation, calibration, ICC, silver aggregate) have no row of a model to give:
:func:`note_left_out` says in the note of each row reading that evaluator which models it left
out and why.
"""

from __future__ import annotations

import pandas as pd

#: the tables that say so, and the columns that identify one of their rows
UNUSABLE_KEYS: dict[str, tuple[str, ...]] = {
    "leaderboard": ("model", "setting", "mode", "split", "evaluator"),
    "evaluator-means": ("model", "evaluator"),
}

#: the tables that pool models, and the columns naming the evaluators a row reads (none: each
#: row reads every evaluator of the table, as the ICC's rater groups do)
LEFT_OUT_COLUMNS: dict[str, tuple[str, ...]] = {
    "evaluator-correlation": ("evaluator_a", "evaluator_b"),
    "calibration": ("reference", "evaluator"),
    "icc": (),
    "silver-aggregate": ("evaluator",),
}


def unusable_note(rows: pd.DataFrame) -> str:
    """The note of a row built from ``rows`` of ``export unscored`` (status, reason), e.g.
    "no usable score: 2 scores lapsed (idle past the study's lease); see export unscored"."""
    counts = rows.groupby(["status", "reason"], sort=True, dropna=False).size()
    parts = [f"{n} score{'s' if n != 1 else ''} {status} ({reason})"
             for (status, reason), n in counts.items()]
    return "no usable score: " + "; ".join(parts) + "; see export unscored"


def note_unusable(name: str, table: pd.DataFrame, unscored: pd.DataFrame) -> pd.DataFrame:
    """``table`` (``leaderboard`` or ``evaluator-means``, with its empty ``note`` column) and
    a row for every key of ``unscored`` (the ``unscored`` export under the same filters) that
    has no row in it: ``n`` 0, empty statistics, the :func:`unusable_note`. A key with some
    usable scores keeps its row as it is."""
    keys = list(UNUSABLE_KEYS[name])
    if unscored.empty:
        return table
    present = set(table[keys].astype(str).itertuples(index=False, name=None))
    added = []
    for key, rows in unscored.groupby(keys, sort=False, dropna=False, observed=True):
        if tuple(str(k) for k in key) not in present:
            added.append({**dict(zip(keys, key, strict=True)), "n": 0,
                          "note": unusable_note(rows)})
    if not added:
        return table
    extra = pd.DataFrame(added)
    for column in ("n_common", "n_seeds"):
        if column in table.columns:
            extra[column] = 0
    out = pd.concat([table, extra], ignore_index=True)[list(table.columns)]
    for column in ("n", "n_common", "n_seeds"):
        if column in out.columns:
            out[column] = out[column].astype("int64")
    return out


def note_left_out(name: str, table: pd.DataFrame, scores: pd.DataFrame,
                  unscored: pd.DataFrame) -> pd.DataFrame:
    """``table`` (one of :data:`LEFT_OUT_COLUMNS`) with, in the ``note`` of each row reading
    an evaluator, every model of ``unscored`` that has no usable score of it in ``scores``
    (the ``scores`` the table was computed from): "Gamma-70B left out, no usable score: 2
    scores lapsed (...); see export unscored". A model with some usable scores is not named."""
    if unscored.empty or table.empty:
        return table
    usable = set(scores[["model", "evaluator"]].astype(str).itertuples(index=False, name=None))
    lost: dict[str, list[str]] = {}
    for (model, evaluator), rows in unscored.groupby(["model", "evaluator"], sort=True,
                                                     dropna=False, observed=True):
        if (str(model), str(evaluator)) not in usable:
            lost.setdefault(str(evaluator), []).append(
                f"{model} left out, {unusable_note(rows)}")
    if not lost:
        return table
    columns = LEFT_OUT_COLUMNS[name]
    out = table.copy()
    notes = out["note"].fillna("").astype(str).tolist()
    for i, row in enumerate(out.itertuples(index=False)):
        read = {str(getattr(row, c)) for c in columns} if columns else set(lost)
        added = [text for evaluator in sorted(read & set(lost)) for text in lost[evaluator]]
        if added:
            notes[i] = "; ".join([notes[i], *added] if notes[i] else added)
    out["note"] = pd.Series(notes, index=out.index).astype(table["note"].dtype)
    return out
