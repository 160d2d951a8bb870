"""Partial designs for the ICC: which raters and targets a complete table keeps, and why.

A live study is never a complete targets x raters table: a late annotator has scored three
items, an early study's annotators never overlap, an excluded annotator is not replaced. An ICC
needs a complete table, so something is left out; these functions choose what, by one rule, and
return a sentence saying what was left out and why (the ``note`` of the ICC table).

The rule: keep the raters that put the most ratings into the complete table (complete targets x
raters), dropping one rater at a time while that increases the count and at least two raters
remain. A rater who scored 3 of 36 targets is dropped (36 x 2 ratings beat 3 x 3); a rater
who missed 1 of 36 is kept and the one target is dropped (35 x 3 beat 36 x 2). Hand-written:
pingouin and krippendorff take the table as given, and no library chooses the raters.
"""

from __future__ import annotations

import pandas as pd

from elitr_core.errors import DegenerateDataError
from elitr_core.stats.frame import RESPONSE_KEY, by_named_annotator, check_columns


def _ratings_used(rated: pd.DataFrame, raters: list[object]) -> int:
    return int(rated[raters].all(axis=1).sum()) * len(raters)


def usable_raters(table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The raters of a targets x raters table (NaN = not rated) an ICC should keep.

    Returns
    -------
    tuple
        The table restricted to the kept raters (incomplete targets still in it) and a
        sentence naming the raters left out and why (empty when none is).

    Examples
    --------
    >>> t = pd.DataFrame({"A": [1, 2, 3, 4], "B": [2, 2, 4, 5], "E": [1, None, None, None]})
    >>> usable_raters(t)[1]
    'left out rater(s) E (rated 1 of 4 targets): with them 1 target(s) are complete, without 4'
    """
    rated = table.notna()
    kept = list(table.columns)
    dropped: list[object] = []
    current = _ratings_used(rated, kept)
    while len(kept) > 2:
        # the rater whose removal keeps the most ratings; on a tie the one who rated least
        best = max(kept, key=lambda r: (_ratings_used(rated, [c for c in kept if c != r]),
                                        -int(rated[r].sum())))
        after = _ratings_used(rated, [c for c in kept if c != best])
        if after <= current:
            break
        kept.remove(best)
        dropped.append(best)
        current = after
    if not dropped:
        return table, ""
    before = int(rated.all(axis=1).sum())
    now = int(rated[kept].all(axis=1).sum())
    names = ", ".join(f"{r} (rated {int(rated[r].sum())} of {len(table)} targets)"
                      for r in dropped)
    return table[kept], (f"left out rater(s) {names}: with them {before} target(s) are "
                         f"complete, without {now}")


def dropped_targets_note(n_dropped: int, n_targets: int) -> str:
    """The sentence for targets left out because a kept rater did not rate them."""
    if n_dropped == 0:
        return ""
    return (f"{n_dropped} of {n_targets} target(s) left out: not rated by every rater kept "
            "(an ICC needs a complete table)")


def join_notes(*notes: str) -> str:
    """Non-empty notes joined with '; '."""
    return "; ".join(n for n in notes if n)


def overall_slots(rows: pd.DataFrame, target: str, rater: str,
                  rating: str) -> tuple[pd.DataFrame, str]:
    """Rater slots 1..k over meetings whose annotators differ, keeping every target it can.

    Within each meeting the annotators kept by :func:`usable_raters` (and their complete
    targets) are ranked by name into slots 1..k. Meetings keep different numbers of
    annotators (one was excluded and not replaced): k is the fewest any meeting keeps, so that
    no meeting's targets are dropped; a meeting with more keeps its k annotators who rated most
    (then by name). A meeting with fewer than two annotators has no target to give.

    Returns
    -------
    tuple
        Long rows ``meeting, target, slot, rating`` forming a complete targets x slots table,
        and a sentence naming what was left out per meeting (empty when nothing was).
    """
    tables, notes = {}, []
    for meeting, part in rows.groupby("meeting", sort=True, observed=True):
        wide = part.pivot(index=target, columns=rater, values=rating)
        wide, note = usable_raters(wide)
        complete = wide.notna().all(axis=1)
        note = join_notes(note, dropped_targets_note(int((~complete).sum()), len(wide)))
        if wide.shape[1] < 2:
            note = join_notes(note, f"only {wide.shape[1]} annotator: its {len(wide)} "
                                    "target(s) left out")
        elif complete.any():
            tables[meeting] = wide[complete]
        if note:
            notes.append((meeting, note))
    k = min((t.shape[1] for t in tables.values()), default=0)
    long = []
    for meeting, wide in tables.items():
        if wide.shape[1] > k:
            order = sorted(wide.columns, key=lambda r: (-int(wide[r].notna().sum()), str(r)))
            left = sorted(map(str, order[k:]))
            notes.append((meeting, f"annotator(s) {', '.join(left)} left out of the overall "
                                   f"ICC (it uses {k} per meeting, the fewest a meeting has)"))
            wide = wide[order[:k]]
        slots = {r: i + 1 for i, r in enumerate(sorted(wide.columns, key=str))}
        part = wide.rename(columns=slots).rename_axis(index=target, columns="slot")
        long.append(part.stack().rename(rating).reset_index().assign(meeting=meeting))
    frame = (pd.concat(long, ignore_index=True) if long
             else pd.DataFrame(columns=["meeting", target, "slot", rating]))
    notes.sort(key=lambda item: str(item[0]))
    return frame, "; ".join(f"{m}: {n}" for m, n in notes)


def annotator_rows(df: pd.DataFrame, evaluator: str) -> pd.DataFrame:
    """Individual annotator scores of a human pool, one per (response, annotator): columns
    ``meeting``, ``_target`` (the response), ``annotator``, ``score``."""
    check_columns(df, [*RESPONSE_KEY, "evaluator", "annotator", "score"])
    pool = df[(df["evaluator"] == evaluator) & df["score"].notna()]
    pool = by_named_annotator(pool)
    if pool.empty:
        raise DegenerateDataError(
            f"no individual annotator score for {evaluator} (only aggregate rows, or none): "
            "import the per-annotator scores of the study first")
    out = pool.assign(_target=pool.groupby(list(RESPONSE_KEY), sort=False, dropna=False).ngroup())
    # several samples of one annotator on one response are averaged into one rating
    return out.groupby(["meeting", "_target", "annotator"], as_index=False,
                       observed=True)["score"].mean()


def response_slots(rows: pd.DataFrame, target: str, rater: str,
                   rating: str) -> tuple[pd.DataFrame, str]:
    """Rater slots 1..k per response: each response's first k ratings by rater name, for the
    one-way ICC of a study where raters are assigned at random (no two share a response).

    k (at least 2) is the one that puts the most ratings into the complete table, ``k`` times
    the responses with ``k`` ratings or more, the larger k on a tie (the rule of
    :func:`usable_raters`); responses with fewer are left out, and a response's ratings past
    the k-th are too.

    Returns
    -------
    tuple
        Long rows ``meeting, target, slot, rating`` (empty when no response has two ratings)
        and a sentence saying how the slots were filled and what was left out.
    """
    rated = rows[rows[rating].notna()].copy()
    rated["_name"] = rated[rater].astype(str)
    rated = rated.sort_values([target, "_name"], kind="stable")
    counts = rated.groupby(target).size()
    if counts.empty or counts.max() < 2:
        return pd.DataFrame(columns=["meeting", target, "slot", rating]), ""
    k = max(range(2, int(counts.max()) + 1), key=lambda c: (c * int((counts >= c).sum()), c))
    rated["slot"] = rated.groupby(target).cumcount() + 1
    keep = rated[target].map(counts >= k).astype(bool) & (rated["slot"] <= k)
    short, extra = int((counts < k).sum()), int((counts - k).clip(lower=0).sum())
    left = [f"{short} response(s) with fewer than {k} ratings" if short else "",
            f"{extra} rating(s) past the {k}th of a response" if extra else ""]
    note = join_notes(f"slots per response: each response's first {k} ratings by annotator "
                      "name (no shared raters needed for the one-way ICC)",
                      "left out " + " and ".join(x for x in left if x) if any(left) else "")
    return rated.loc[keep, ["meeting", target, "slot", rating]].reset_index(drop=True), note
