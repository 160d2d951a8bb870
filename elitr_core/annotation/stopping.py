"""A study that says when to stop: its stopping rule, what the rule needs stored at creation,
and the check admission makes before seating a new participant.

``study create --stop-when "half-width <= 0.5"`` (each model's human mean), ``"bias
half-width <= 0.5"`` (the judge's bias) or ``"ppi half-width <= 0.5"`` (the prediction-powered
mean), repeatable: when the confidence sequence of every model for every rule is that narrow
(:mod:`elitr_core.stats.monitor`), the study admits nobody new; participants already seated
finish their task and their scores are kept. A confidence sequence stays valid however
often it is looked at, so stopping when it first looks narrow enough is allowed, unlike with
a fixed-n interval.

What the sequences need is stored with the study when it is created (``Study.filters``):
per model, the number of candidate responses, the sum and extremes of their selection
probabilities (the inverse-probability weights and their bounds) and the judge's mean over
them (the prediction-powered mean's known part).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlmodel import Session

from db import studies as sq
from db.models import Study
from elitr_core.errors import UserError

TARGET_WORDS = {"human": "human mean", "bias": "judge's bias", "ppi": "prediction-powered mean"}
_RULE = re.compile(r"^\s*(?:(human|bias|ppi)\s+)?half-width\s*<=\s*([0-9]*\.?[0-9]+)\s*$",
                   re.IGNORECASE)
MAX_HALF_WIDTH = 9.0


@dataclass(frozen=True)
class StopRule:
    """Stop when every model's sequence for ``target`` has at most this half-width."""

    target: str
    half_width: float

    def text(self) -> str:
        """The rule as ``--stop-when`` takes it."""
        return f"{self.target} half-width <= {self.half_width:g}"


def parse_rule(text: str) -> StopRule:
    """``"[human|bias|ppi] half-width <= W"`` -> :class:`StopRule`, else a clear error."""
    match = _RULE.match(text or "")
    if not match:
        raise UserError(f"cannot read the stopping rule {text!r}: write \"half-width <= 0.5\" "
                        "(each model's human mean), \"bias half-width <= 0.5\" or \"ppi "
                        "half-width <= 0.5\"")
    width = float(match.group(2))
    if not 0 < width <= MAX_HALF_WIDTH:
        raise UserError(f"the half-width of a stopping rule must lie in (0, {MAX_HALF_WIDTH:g}] "
                        f"points of the 1..10 scale, not {match.group(2)}")
    return StopRule((match.group(1) or "human").lower(), width)


def parse_rules(texts: tuple[str, ...]) -> tuple[StopRule, ...]:
    """Every rule, one per target (a target given twice is an error)."""
    rules = tuple(parse_rule(t) for t in texts)
    targets = [r.target for r in rules]
    if len(set(targets)) < len(targets):
        raise UserError("give one stopping rule per target (human, bias, ppi)")
    return rules


def rules_of(study: Study) -> tuple[StopRule, ...]:
    """The stopping rules stored with a study (none for a study created without one)."""
    return tuple(StopRule(r["target"], float(r["half_width"]))
                 for r in (study.filters or {}).get("stop_when", []))


def population(session: Session, rows: list[dict[str, Any]], probabilities: np.ndarray,
               judge: str) -> list[dict[str, Any]]:
    """Per model of the candidate ``rows``: N, the probabilities' sum and extremes, and the
    judge's mean over them (None unless the judge scored every one)."""
    values = sq.judge_values(session=session, slug=judge,
                             response_ids=[int(r["response_id"]) for r in rows])
    frame = pd.DataFrame(rows)[["response_id", "split", "setting", "mode", "model"]]
    frame["pi"] = probabilities
    frame["judge"] = [np.mean(values[r]) if r in values else np.nan
                      for r in frame["response_id"]]
    out = []
    for key, group in frame.groupby(["split", "setting", "mode", "model"], sort=True):
        judged = group["judge"].notna().all()
        out.append({"split": key[0], "setting": key[1], "mode": key[2], "model": key[3],
                    "responses": len(group), "pi_sum": float(group["pi"].sum()),
                    "pi_min": float(group["pi"].min()), "pi_max": float(group["pi"].max()),
                    "judge_mean": float(group["judge"].mean()) if judged else None})
    return out


def stop_fields(session: Session, rows: list[dict[str, Any]], probabilities: np.ndarray, *,
                texts: tuple[str, ...], judge: str, assignment: str) -> dict[str, Any]:
    """What a study with stopping rules stores at creation (``Study.filters``), after checks.

    Raises
    ------
    UserError
        A rule that cannot be read, a meeting-by-meeting assignment (its scores arrive one
        meeting at a time, not in a random order), or a bias/PPI rule whose judge did not
        score every candidate response.
    """
    rules = parse_rules(texts)
    if not rules:
        return {}
    if assignment != "random":
        raise UserError("a stopping rule needs --assignment random: a confidence sequence "
                        "treats the scores as arriving in a random order, and a study "
                        "assigned by meeting receives one meeting's responses together")
    pop = population(session, rows, probabilities, judge)
    if any(r.target != "human" for r in rules) and any(p["judge_mean"] is None for p in pop):
        raise UserError(f"a bias or ppi stopping rule needs the judge {judge} on every "
                        "candidate response: run it first (judge), or choose another --judge")
    return {"stop_when": [{"target": r.target, "half_width": r.half_width} for r in rules],
            "population": pop, "monitor_judge": judge}


def monitor_inputs(session: Session, study: Study) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's observations (scored responses in arrival order, with the judge's score)
    and its population (stored at creation; for a study created before, computed now from
    its filters with the judge ``gpt-4``)."""
    assert study.id is not None
    filters = study.filters or {}
    judge = filters.get("monitor_judge") or filters.get("judge") or "gpt-4"
    pop = filters.get("population") or _population_now(session, filters, judge)
    obs = pd.DataFrame(sq.scores_in_order(session=session, study_id=study.id,
                                          evaluator_id=study.evaluator_id),
                       columns=["response_id", "split", "setting", "mode", "model", "value",
                                "probability", "created_at"])
    values = sq.judge_values(session=session, slug=judge,
                             response_ids=[int(r) for r in obs["response_id"]])
    obs["human"] = obs["value"].astype(float)
    obs["judge"] = [np.mean(values[int(r)]) if int(r) in values else np.nan
                    for r in obs["response_id"]]
    obs["probability"] = obs["probability"].astype(float)
    population_frame = pd.DataFrame(pop)
    population_frame["judge_mean"] = population_frame["judge_mean"].astype(float)
    return obs, population_frame


def _population_now(session: Session, filters: dict[str, Any],
                    judge: str) -> list[dict[str, Any]]:
    from elitr_core.annotation.selection import candidate_probabilities

    rows = sq.candidate_responses(
        session=session, split=filters.get("split"), setting=filters.get("setting"),
        mode=filters.get("mode"), models=tuple(filters.get("models") or ()) or None,
        meetings=tuple(filters.get("meetings") or ()) or None)
    if not rows:
        raise UserError("none of the study's candidate responses is left in the database")
    pi = (candidate_probabilities(session, rows, sample=int(filters["sample"]),
                                  selection=filters.get("selection", "uniform"), judge=judge)
          if filters.get("sample") else np.ones(len(rows)))
    return population(session, rows, pi, judge)


def targets_of(study: Study, default: float) -> dict[str, float]:
    """Target -> half-width: the study's rules, ``default`` for the targets without one."""
    from elitr_core.stats.monitor import TARGETS

    wanted = {r.target: r.half_width for r in rules_of(study)}
    return {t: wanted.get(t, default) for t in TARGETS}


def check_stop(session: Session, study: Study, confidence: float = 0.95) -> str | None:
    """Why the study admits nobody new (every rule is met by the scores stored now), else
    None. Computed from the scores each time: excluding an annotator takes their scores out
    of the sequences, which may widen them and admit participants again."""
    rules = rules_of(study)
    if not rules:
        return None
    from elitr_core.stats.monitor import first_reached

    obs, pop = monitor_inputs(session, study)
    now = first_reached(obs, pop, {r.target: r.half_width for r in rules}, confidence)
    if now.empty or now["at"].isna().any():
        return None
    return (f"every model's {confidence:.0%} confidence sequence reached its target ("
            + "; ".join(f"{TARGET_WORDS[r.target]} half-width <= {r.half_width:g}"
                        for r in rules)
            + f") after {len(obs)} scored responses (reached after: "
            + ", ".join(f"{m} {t} {a:.0f}" for m, t, a in
                        now[["model", "target", "at"]].itertuples(index=False)) + ")")


def stop_state(session: Session, study_name: str) -> tuple[tuple[StopRule, ...], str | None]:
    """A study's stopping rules and why it admits nobody new (None: it still admits, or it
    has no rule), for the Studies page."""
    study = sq.study_by_name(session=session, name=study_name)
    if study is None:
        raise UserError(f"no study called {study_name!r}")
    return rules_of(study), check_stop(session, study)


def monitor_table(session: Session, study_name: str, table: str, *, half_width: float = 0.5,
                  confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """``study-monitor`` (where each model's sequences stand, the study's targets, else
    ``half_width``) or ``study-monitor-sequences`` (each after every scored response)."""
    from elitr_core.stats.monitor import study_monitor, study_sequences

    study = sq.study_by_name(session=session, name=study_name)
    if study is None:
        raise UserError(f"no study called {study_name!r}: `python -m elitr_core study status` "
                        "takes the names the Studies page lists")
    if not 0 < half_width <= MAX_HALF_WIDTH:
        raise UserError(f"the target half-width must lie in (0, {MAX_HALF_WIDTH:g}], "
                        f"not {half_width}")
    obs, pop = monitor_inputs(session, study)
    if table == "study-monitor-sequences":
        return study_sequences(obs, pop, confidence)
    return study_monitor(obs, pop, targets_of(study, half_width), confidence, seed)
