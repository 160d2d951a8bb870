"""Quality control of a study: attention checks, too-fast answers, agreement with gold,
exclusion and replacement, the silver aggregate, and the annotators' reliability.

Excluding an annotator never deletes anything: their scores get status ``excluded`` (kept, left
out of every analysis), their participation is marked excluded, which frees its task unit for a
replacement, and the study's aggregate (mean over the included annotators, stored with no
annotator under the study's evaluator, as ``silver-human`` is in the bundled data) is recomputed.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from db import queue as q
from db import studies as sq
from db.evaluators import evaluator_slug
from db.keyed import save
from db.models import Study
from db.runs import ScoreFilter
from db.scores import score_rows
from elitr_core.data.fields import lookup_name
from elitr_core.errors import DegenerateDataError, UserError
from elitr_core.stats import icc

TOO_FAST_SECONDS = 5.0
"""An answer faster than this is flagged (reading a question, reference and response takes
longer)."""
MIN_GOLD_R = 0.5
"""Default agreement threshold: under this Pearson r with gold an annotator is flagged."""
CHECK_RANGES: dict[str, tuple[float, float]] = {
    "attention-high": (9.0, 10.0),  # the reference answer itself
    "attention-low": (1.0, 2.0),  # an answer to another question
}
REPORT_COLUMNS = ("annotator", "annotator_id", "status", "answered", "items", "median_seconds",
                  "too_fast", "checks", "checks_failed", "gold_n", "gold_r", "gold_mae", "flags")


def get_study(session: Session, name: str) -> Study:
    """The study called ``name`` or a UserError listing what exists."""
    study = sq.study_by_name(session=session, name=lookup_name(name))
    if study is None:
        names = ", ".join(s.name for s in sq.list_studies(session=session)) or "none yet"
        raise UserError(f"no study called {name!r} (studies: {names})")
    return study


def check_passed(kind: str, value: float) -> bool:
    """Whether an attention-check answer lies in its expected range."""
    low, high = CHECK_RANGES[kind]
    return low <= value <= high


def _gold_agreement(scores: pd.DataFrame, gold: dict[int, float]) -> tuple[int, float, float]:
    """(n, Pearson r, mean absolute error) of one annotator against gold on shared items."""
    shared = scores[scores["response_id"].isin(gold.keys())]
    n = len(shared)
    if n == 0:
        return 0, float("nan"), float("nan")
    mine = shared["value"].to_numpy(float)
    ref = np.array([gold[r] for r in shared["response_id"]], float)
    mae = float(np.mean(np.abs(mine - ref)))
    if n < 3 or np.ptp(mine) == 0 or np.ptp(ref) == 0:
        return n, float("nan"), mae  # a correlation is undefined on constant or tiny samples
    return n, float(np.corrcoef(mine, ref)[0, 1]), mae


def quality_report(session: Session, study_name: str, *, too_fast: float = TOO_FAST_SECONDS,
                   min_gold_r: float = MIN_GOLD_R, gold: str = "gold-human") -> pd.DataFrame:
    """One row per annotator of a study: progress, speed, attention checks, agreement with gold.

    ``flags`` lists why an annotator may need excluding: failed checks, too-fast answers (more
    than a fifth of them), Pearson r with gold under ``min_gold_r``.
    """
    study = get_study(session, study_name)
    assert study.id is not None
    progress = pd.DataFrame(sq.progress_rows(session=session, study_id=study.id))
    if progress.empty:
        return pd.DataFrame(columns=list(REPORT_COLUMNS))
    scores = pd.DataFrame(sq.study_score_rows(session=session, evaluator_id=study.evaluator_id),
                          columns=["response_id", "annotator_id", "annotator", "value", "status",
                                   "seconds_spent", "meeting"])
    checks = pd.DataFrame(sq.check_rows(session=session, study_id=study.id),
                          columns=["annotator_id", "kind", "check_value"])
    gold_values = sq.reference_values(session=session, slug=gold)
    rows: list[dict[str, Any]] = []
    for annotator_id, part in progress.groupby("annotator_id", sort=False):
        mine = scores[scores["annotator_id"] == annotator_id]
        own_checks = checks[checks["annotator_id"] == annotator_id]
        failed = sum(not check_passed(k, v) for k, v in
                     zip(own_checks["kind"], own_checks["check_value"], strict=True))
        seconds = mine["seconds_spent"].dropna()
        fast = int((seconds < too_fast).sum())
        n, r, mae = _gold_agreement(mine, gold_values)
        flags = []
        if failed:
            flags.append(f"{failed} failed check(s)")
        if len(seconds) and fast > 0.2 * len(seconds):
            flags.append(f"{fast} answer(s) under {too_fast:g} s")
        if n and np.isfinite(r) and r < min_gold_r:
            flags.append(f"r with gold {r:.2f} < {min_gold_r:g}")
        statuses = set(part["status"])
        rows.append({
            "annotator": part["annotator"].iloc[0], "annotator_id": int(annotator_id),
            "status": "excluded" if statuses == {"excluded"} else
            ("active" if "active" in statuses else "done"),
            "answered": int(part["answered"].sum()), "items": int(part["items"].sum()),
            "median_seconds": float(seconds.median()) if len(seconds) else float("nan"),
            "too_fast": fast, "checks": len(own_checks), "checks_failed": int(failed),
            "gold_n": n, "gold_r": r, "gold_mae": mae, "flags": "; ".join(flags)})
    return pd.DataFrame(rows, columns=list(REPORT_COLUMNS))


def aggregate(session: Session, study_name: str,
              response_ids: Collection[int] | None = None) -> int:
    """Recompute the study's aggregate scores (mean over included annotators); return how many.

    With ``response_ids``, only the aggregates of those responses (what one finished task
    changed), so an annotator's last submit does not rewrite the whole study's aggregate.
    """
    study = get_study(session, study_name)
    assert study.id is not None
    q.lock_aggregate(session=session, study_id=study.id)  # no answer in flight meanwhile
    return sq.store_aggregates(session=session, evaluator_id=study.evaluator_id,
                              response_ids=response_ids)


def _set_excluded(session: Session, study_name: str, annotator: str, status: str,
                  reason: str | None) -> int:
    if reason is not None:  # the typed gate: clean text within its column
        from elitr_core.data import records

        reason = records.check_options(records.EXCLUSION_REASON, reason, what="reason")
    study = get_study(session, study_name)
    assert study.id is not None
    # before any score row: an answer in flight holds this lock and then writes its rows
    q.lock_aggregate(session=session, study_id=study.id)
    ids = {r["annotator_id"] for r in sq.progress_rows(session=session, study_id=study.id)
           if r["annotator"] == annotator}
    parts = [p for p in q.participations(session=session, study_id=study.id)
             if p.annotator_id in ids]
    if not parts:
        raise UserError(f"{annotator!r} has no task in study {study.name}: see `study status`")
    if all(p.status == status for p in parts):
        raise UserError(f"{annotator} is {status} in study {study.name} already: nothing "
                        "was changed")
    for part in parts:
        part.status = status
        part.reason = reason
    save(session=session, rows=parts)
    n = sq.set_scores_status(session=session, evaluator_id=study.evaluator_id,
                            annotator_id=parts[0].annotator_id,
                            status="excluded" if status == "excluded" else "ok")
    aggregate(session, study_name)
    return n


def exclude_annotator(session: Session, study_name: str, annotator: str,
                      reason: str = "excluded by the researcher") -> int:
    """Exclude an annotator: scores kept with status ``excluded``, their unit re-opened for a
    replacement, the aggregate recomputed; return the number of scores marked."""
    return _set_excluded(session, study_name, annotator, "excluded", reason)


def exclusion_report(session: Session, study_name: str, annotator: str, marked: int) -> str:
    """What an exclusion did, in one sentence: in an open study the task is open for a
    replacement; a closed study takes no replacement (its aggregate is stored anew)."""
    study = get_study(session, study_name)
    done = f"{annotator} excluded from study {study.name}: {marked} score(s) kept as excluded"
    if study.status == "open":
        return f"{done}; their task is open for a replacement."
    return (f"{done}; the stored aggregate is recomputed without them. The study is closed, "
            "so nobody replaces them unless you re-open it.")


def _with_reading(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out["reading"] = [icc.koo_li_reading(v) if np.isfinite(v) else "undefined"
                      for v in out["icc"]]
    return out


def study_agreement(session: Session, study_name: str) -> dict[str, Any]:
    """Reliability of the study's included annotators.

    Returns ``icc_per_meeting`` (ICC(2,k), same annotators within a meeting), ``icc_overall``
    (ICC(1,k) over meetings), ``alpha`` (Krippendorff, interval) and ``messages`` explaining any
    statistic that cannot be computed yet (too few annotators or items).
    """
    study = get_study(session, study_name)
    slug = evaluator_slug(session=session, evaluator_id=study.evaluator_id)
    df = pd.DataFrame(score_rows(session, ScoreFilter(evaluators=(slug,))))
    out: dict[str, Any] = {"icc_per_meeting": None, "icc_overall": None, "alpha": None,
                           "messages": []}
    if df.empty:
        out["messages"].append("no scores yet")
        return out
    per_meeting = []
    for meeting, part in df.groupby("meeting", sort=True):
        # one meeting short of annotators must not hide the others' ICC
        try:
            per_meeting.append(icc.annotator_icc_per_meeting(part, evaluator=slug))
        except (DegenerateDataError, UserError) as exc:
            out["messages"].append(f"ICC(2,k) {meeting}: {exc}")
    if per_meeting:
        out["icc_per_meeting"] = _with_reading(pd.concat(per_meeting, ignore_index=True))
    try:
        out["icc_overall"] = _with_reading(icc.annotator_icc_overall(df, evaluator=slug))
    except (DegenerateDataError, UserError) as exc:
        out["messages"].append(f"ICC(1,k) overall: {exc}")
    try:
        out["alpha"] = icc.krippendorff_alpha(df, evaluator=slug)
    except (DegenerateDataError, UserError) as exc:
        out["messages"].append(f"alpha: {exc}")
    return out
