"""Creating a human scoring study: what a researcher chooses (:class:`StudySpec`), its checks,
the items drawn and cut into task units, the units' seats, and the link for Prolific.

A study picks responses (split, setting, mode, models, meetings), cuts them into task units
(one meeting, the paper's task, or random batches of N) and needs ``per_item`` annotators per
unit, each taking one seat of a unit (:mod:`elitr_core.annotation.admission`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from sqlmodel import Session

from db import admission as aq
from db import studies as sq
from db.evaluators import annotator_pool, evaluator_for
from db.keyed import save
from db.models import Study
from elitr_core.annotation.admission import (
    DEFAULT_JOIN_LIMIT,
    DEFAULT_JOIN_WINDOW_MINUTES,
    DEFAULT_LEASE_MINUTES,
)
from elitr_core.errors import UserError
from elitr_core.vocab import ATTENTION_RATE_DEFAULT

POOLS: dict[str, str] = {"gold": "gold-human", "silver": "silver-human"}
ASSIGNMENTS = ("meeting", "random")
MAX_ATTENTION_RATE = 0.5


@dataclass(frozen=True)
class StudySpec:
    """What a researcher chooses when creating a study (CLI flags, page widgets)."""

    name: str
    pool: str = "silver"
    per_item: int = 1
    split: str | None = None
    setting: str | None = None
    mode: str | None = None
    models: tuple[str, ...] | None = None
    meetings: tuple[str, ...] | None = None
    assignment: str = "meeting"
    batch: int | None = None
    seed: int = 0
    prolific_code: str | None = None
    prolific_study_id: str | None = None
    attention_rate: float = ATTENTION_RATE_DEFAULT
    max_concurrent: int | None = None
    #: a budget: draw about this many responses instead of all (``selection.sample_items``)
    sample: int | None = None
    selection: str = "uniform"  # uniform | active (favours the judge's uncertain responses)
    judge: str = "gpt-4"  # whose uncertainty drives the active selection
    #: minutes without an answer before a claim lapses (None: the pool's default, silver
    #: DEFAULT_LEASE_MINUTES, gold none; 0: never)
    lease_minutes: int | None = None
    #: new participants per client address per window (None: the pool's default, silver
    #: DEFAULT_JOIN_LIMIT, gold none; 0: no limit)
    join_limit: int | None = None
    join_window_minutes: int = DEFAULT_JOIN_WINDOW_MINUTES
    #: stopping rules (``"[human|bias|ppi] half-width <= W"``, :mod:`.stopping`): the study
    #: admits nobody new once every model's confidence sequence is that narrow
    stop_when: tuple[str, ...] = ()


def _check_spec(spec: StudySpec) -> None:
    if not spec.name.strip():
        raise UserError("a study needs a name")
    if spec.pool not in POOLS:
        raise UserError(f"pool must be gold or silver, not {spec.pool!r}")
    if spec.per_item < 1:
        raise UserError(f"--per-item must be at least 1, not {spec.per_item}")
    if spec.assignment not in ASSIGNMENTS:
        raise UserError(f"assignment must be meeting or random, not {spec.assignment!r}")
    if spec.assignment == "random" and (spec.batch is None or spec.batch < 1):
        raise UserError("random assignment needs --batch N (items per annotator), N >= 1")
    if not 0 <= spec.attention_rate <= MAX_ATTENTION_RATE:
        raise UserError(f"the attention-check rate must lie in 0..{MAX_ATTENTION_RATE}")
    if spec.max_concurrent is not None and spec.max_concurrent < 1:
        raise UserError("the cap on concurrent participants must be at least 1")
    for label, value in (("--lease-minutes", spec.lease_minutes),
                         ("--join-limit", spec.join_limit)):
        if value is not None and not 0 <= value <= 100_000:
            raise UserError(f"{label} must lie in 0..100000 (0 turns it off), not {value}")
    if not 1 <= spec.join_window_minutes <= 100_000:
        raise UserError("--join-window-minutes must lie in 1..100000, "
                        f"not {spec.join_window_minutes}")


def _pool_default(value: int | None, silver: int, pool: str) -> int | None:
    """A lease or join limit as stored: the pool's default when unset, None when 0 (off)."""
    if value is None:
        return silver if pool == "silver" else None
    return value or None


def _through_gate(spec: StudySpec) -> StudySpec:
    """The spec's stored options checked by the typed gate (``data.records``): names NFC and
    free of invisible characters, numbers within their columns; names normalised."""
    from elitr_core.data import records

    checked = records.check_options(records.STUDY, {
        "name": spec.name, "order_seed": spec.seed, "per_item": spec.per_item,
        "batch_size": spec.batch, "max_concurrent": spec.max_concurrent,
        "prolific_code": spec.prolific_code, "prolific_study_id": spec.prolific_study_id,
    }, what="study")
    names = records.check_options(records.STUDY_NAMES, {
        "models": list(spec.models) if spec.models else None,
        "meetings": list(spec.meetings) if spec.meetings else None}, what="study")
    # the study's evaluator slug is "<pool slug>:<name>" and must fit its column as well
    records.check_options(records.EVALUATOR_SLUG, f"{POOLS[spec.pool]}:{checked['name']}",
                          what="study name with its pool")
    return replace(spec, name=checked["name"], prolific_code=checked["prolific_code"],
                   prolific_study_id=checked["prolific_study_id"],
                   models=tuple(names["models"]) if names["models"] else spec.models,
                   meetings=tuple(names["meetings"]) if names["meetings"] else spec.meetings)


def create_study(session: Session, spec: StudySpec) -> dict[str, Any]:
    """Create a study and its items; return a summary (items, units, evaluator slug).

    Raises
    ------
    UserError
        Bad options, a name already taken, or filters matching no response.
    """
    _check_spec(spec)
    spec = _through_gate(spec)
    if sq.study_by_name(session=session, name=spec.name) is not None:
        raise UserError(f"a study called {spec.name!r} exists already: choose another name")
    rows = sq.candidate_responses(session=session, split=spec.split, setting=spec.setting,
                                 mode=spec.mode, models=spec.models, meetings=spec.meetings)
    if not rows:
        raise UserError("no response matches these filters: check split, setting, mode, "
                        "models and meetings (`python -m elitr_core export scores` lists them)")
    probabilities = None
    stop = _stop_fields(session, spec, rows)
    if spec.sample is not None:
        from elitr_core.annotation.selection import sample_items

        probabilities = sample_items(session, rows, sample=spec.sample,
                                     selection=spec.selection, judge=spec.judge, seed=spec.seed)
        rows = [r for r in rows if r["response_id"] in probabilities]
    pool_slug = POOLS[spec.pool]
    annotator_pool(session=session, slug=pool_slug)
    slug = f"{pool_slug}:{spec.name}"
    evaluator_id = evaluator_for(session=session, slug=slug, kind="human", source="study",
                                 description=f"{spec.pool} annotators of study {spec.name}")
    if spec.assignment == "meeting":
        items = [(r["response_id"], r["meeting"]) for r in rows]
    else:
        ids = [r["response_id"] for r in rows]
        random.Random(spec.seed).shuffle(ids)
        size = spec.batch or len(ids)
        items = [(rid, f"batch-{i // size + 1:03d}") for i, rid in enumerate(ids)]
    filters: dict[str, Any] = {
        "pool": spec.pool, "split": spec.split, "setting": spec.setting, "mode": spec.mode,
        "models": list(spec.models or []), "meetings": list(spec.meetings or [])}
    if spec.sample is not None:
        filters.update(sample=spec.sample, selection=spec.selection, judge=spec.judge)
    filters.update(stop)
    study = Study(name=spec.name, evaluator_id=evaluator_id, per_item=spec.per_item,
                  assignment=spec.assignment, batch_size=spec.batch, order_seed=spec.seed,
                  prolific_code=spec.prolific_code or None, max_concurrent=spec.max_concurrent,
                  filters=filters, attention_rate=spec.attention_rate,
                  prolific_study_id=spec.prolific_study_id or None,
                  lease_minutes=_pool_default(spec.lease_minutes, DEFAULT_LEASE_MINUTES,
                                              spec.pool),
                  join_limit=_pool_default(spec.join_limit, DEFAULT_JOIN_LIMIT, spec.pool),
                  join_window_minutes=spec.join_window_minutes)
    save(session=session, rows=[study])
    assert study.id is not None
    sq.add_study_items(session=session, study_id=study.id, items=items,
                      probabilities=probabilities)
    aq.add_seats(session=session, study_id=study.id, units={u for _, u in items},
                 per_item=spec.per_item)
    return {"study": spec.name, "evaluator": slug, "items": len(items),
            "units": len({u for _, u in items}), "per_item": spec.per_item}


def _stop_fields(session: Session, spec: StudySpec,
                 rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the stopping rules need stored (:func:`.stopping.stop_fields`), from every
    candidate's selection probability; nothing without a rule."""
    if not spec.stop_when:
        return {}
    import numpy as np

    from elitr_core.annotation.selection import candidate_probabilities
    from elitr_core.annotation.stopping import stop_fields

    pi = (candidate_probabilities(session, rows, sample=spec.sample, selection=spec.selection,
                                  judge=spec.judge)
          if spec.sample is not None else np.ones(len(rows)))
    return stop_fields(session, rows, pi, texts=spec.stop_when, judge=spec.judge,
                       assignment=spec.assignment)


def prolific_url(study_name: str, host: str = "https://YOUR-HOST") -> str:
    """The study URL to paste into Prolific (Prolific fills the ``{{%...%}}`` placeholders)."""
    from urllib.parse import quote

    return (f"{host.rstrip('/')}/?study={quote(study_name, safe='')}"
            "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}")
