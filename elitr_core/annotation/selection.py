"""Which responses a study sends to humans: all, a uniform sample, or an active sample.

With a budget (``StudySpec.sample``), each candidate response is drawn independently (Poisson
sampling) with probability ``sample / N`` (uniform) or with a probability that grows with the
judge's uncertainty about it (active: judge scores in the middle of the scale, or a judge's
samples that spread). The probability is stored with the item, so that the human-corrected
mean can weight each human score by its inverse (``export ppi-active``) and stay unbiased.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from db import studies as sq
from elitr_core.errors import UserError

SELECTIONS: tuple[str, ...] = ("uniform", "active")


def _uncertainty(values: list[list[float]]) -> np.ndarray:
    """Per response: the spread of the judge's samples when it has several, else how close its
    score is to the middle of the 1..10 scale (see :func:`elitr_core.stats.active.uncertainty`).
    """
    from elitr_core.vocab import SCORE_MAX, SCORE_MIN

    half = (SCORE_MAX - SCORE_MIN) / 2
    middle = np.array([1 - abs(np.mean(v) - (SCORE_MIN + half)) / half for v in values])
    spread = np.array([np.std(v) / half for v in values])
    several = np.array([len(v) > 1 for v in values])
    return np.clip(np.where(several, spread, middle), 0.0, 1.0)


def candidate_probabilities(session: Session, rows: list[dict[str, Any]], *, sample: int,
                            selection: str, judge: str) -> np.ndarray:
    """The probability with which each candidate of ``rows`` is drawn (in their order).

    Raises
    ------
    UserError
        An unknown selection, a budget outside 1..N, or (active) a judge that did not score
        every candidate response.
    """
    from elitr_core.stats.active import selection_probabilities

    if selection not in SELECTIONS:
        raise UserError(f"selection must be {' or '.join(SELECTIONS)}, not {selection!r}")
    ids = [int(r["response_id"]) for r in rows]
    if not 1 <= sample <= len(ids):
        raise UserError(f"--sample must lie between 1 and the {len(ids)} matching responses, "
                        f"not {sample}")
    if selection == "uniform":
        return np.full(len(ids), sample / len(ids))
    values = sq.judge_values(session=session, slug=judge, response_ids=ids)
    missing = len(ids) - len(values)
    if missing:
        raise UserError(f"active selection needs the judge {judge} on every response: "
                        f"{missing} of {len(ids)} have no score; run the judge first or "
                        "choose --selection uniform")
    return selection_probabilities(_uncertainty([values[i] for i in ids]), sample)


def sample_items(session: Session, rows: list[dict[str, Any]], *, sample: int,
                 selection: str, judge: str, seed: int) -> dict[int, float]:
    """Draw the study's items among the candidate ``rows``; response id -> probability
    (the errors of :func:`candidate_probabilities`)."""
    from elitr_core.stats.active import draw

    pi = candidate_probabilities(session, rows, sample=sample, selection=selection,
                                 judge=judge)
    ids = [int(r["response_id"]) for r in rows]
    drawn = draw(pi, np.random.default_rng(seed))
    if not drawn.any():  # Poisson sampling can draw nothing from a tiny budget
        raise UserError(f"the draw with seed {seed} picked no response: raise --sample or "
                        "change the seed")
    return {rid: float(p) for rid, p, chosen in zip(ids, pi, drawn, strict=True) if chosen}


def plan_budget(session: Session, *, split: str | None, setting: str | None,
                mode: str | None, models: tuple[str, ...] | None, judge: str, human: str,
                half_width: float) -> pd.DataFrame:
    """The ``ppi-budget`` table for a study's filters (human scores per model needed for a
    target interval half-width, PPI++ versus human-only), from the scores stored so far."""
    from db.runs import ScoreFilter
    from elitr_core.data.scores import scores_table
    from elitr_core.stats.budget import budget_plan

    flt = ScoreFilter(split=split, setting=setting, mode=mode, models=models,
                      evaluators=(judge, human))
    return budget_plan(scores_table(session, flt), judge, human, half_width)


def study_probabilities(session: Session, study: str) -> pd.DataFrame:
    """Response key and selection probability of each item of a sampled study."""
    from elitr_core.stats.frame import RESPONSE_KEY

    rows = sq.item_probabilities(session=session, study=study)
    if not rows:
        raise UserError(f"study {study!r} has no item drawn with a probability: create it with "
                        "--sample N (uniform or active selection)")
    from db.models import NO_SEED

    frame = pd.DataFrame(rows, columns=[*RESPONSE_KEY, "probability"])
    # the database stores a missing seed as NO_SEED; the scores table holds it as <NA>
    frame["seed"] = frame["seed"].astype("Int64").mask(frame["seed"] == NO_SEED)
    return frame
