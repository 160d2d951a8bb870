"""What a harness's output becomes before it is stored: one :class:`HarnessRun` per log.

The readers (``inspect_logs``, ``lm_eval_samples``) turn a file into this shape; ``store``
checks it against the database and writes it through the project's import gate. Nothing here
imports a harness package: :func:`require` does, when a reader needs one.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from elitr_core.errors import UserError

#: How each harness's outputs are named in a run's ``backend`` column.
BACKENDS = {"inspect": "inspect_ai", "lm-eval": "lm-evaluation-harness"}


@dataclass(frozen=True)
class HarnessAnswer:
    """One answer of a log to the question ``number`` of ``meeting`` (``sample``: the log's
    own sample id, named in messages)."""

    meeting: str
    number: int
    text: str
    sample: str


@dataclass
class HarnessRun:
    """A log as a run: its key, config, answers, and its scorers' scores (scorer name ->
    (meeting, number, value)), each scorer's kind, description and identity (what made its
    scores: the grader model and its settings); ``skipped`` lists what was read but not
    imported, one line each (samples left out by ``--partial``, scorers whose values are not
    1..10 scores)."""

    source: str
    backend: str
    model: str
    split: str
    setting: str
    mode: str
    language: str
    config: dict[str, Any]
    answers: list[HarnessAnswer] = field(default_factory=list)
    scores: dict[str, list[tuple[str, int, float]]] = field(default_factory=dict)
    evaluators: dict[str, tuple[str, str]] = field(default_factory=dict)
    identities: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    #: scorers skipped as a whole (named in ``skipped``)
    dropped: set[str] = field(default_factory=set)


def evaluator_slug(backend: str, name: str, identity: dict[str, Any]) -> str:
    """The evaluator a harness scorer's scores go under, in the harness's own namespace:
    ``inspect:<scorer>[:<grader model>]``, ``lm-eval:<metric>``. No scorer can name a human,
    release or judge evaluator of the project, or one of another harness
    (``db.evaluators.evaluator_for`` refuses a namespace's slug to any other source); the
    grader's settings are the rest of its identity (stored with it, compared there)."""
    grader = identity.get("grader")
    return f"{backend}:{name}" + (f":{grader}" if grader else "")


def add_scores(run: HarnessRun, name: str, kind: str,
               values: list[tuple[str, int, Any]],
               identity: dict[str, Any] | None = None) -> None:
    """Add a scorer's values (meeting, number, value; NaN and None: unscored) as the scores of
    scorer ``name`` (made by ``identity``: its grader and settings); a scorer with any value
    that is not a 1..10 score is left out as a whole and listed in ``run.skipped``."""
    import math

    from elitr_core.data.fields import score_number

    if name in run.dropped:
        return
    try:
        checked = [(m, n, score_number(v)) for m, n, v in values
                   if v is not None and not (isinstance(v, float) and math.isnan(v))]
    except ValueError:  # pydantic's refusal of a score is a ValueError
        run.scores.pop(name, None)
        run.dropped.add(name)
        run.skipped.append(f"{run.source}: scorer {name} not imported (its values are not "
                           "scores on the 1..10 scale)")
        return
    run.scores.setdefault(name, []).extend(checked)
    identity = {"scorer": name, **(identity or {})}
    grader = f", graded by {identity['grader']}" if identity.get("grader") else ""
    description = f"{BACKENDS[run.backend]} scorer {name}{grader}"
    run.evaluators.setdefault(name, (kind, description))
    run.identities.setdefault(name, identity)


def require(module: str, package: str, what: str) -> ModuleType:
    """``module`` imported, or one line naming the package to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise UserError(f"reading {what} needs the {package} package, which is not installed: "
                        f"pip install {package}") from None
