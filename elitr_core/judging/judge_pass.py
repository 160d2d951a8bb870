"""What absolute and pairwise judge passes share: the spec's fields and checks
(:class:`JudgePassSpec`), the report (:class:`JudgePassReport`), and the record a pass keeps
in its evaluator's config (:class:`PassRecord`).

``Evaluator.config`` holds the judge's identity and its last :data:`MAX_PASSES` passes: when
each started and ended, its backend, filters, counters, token usage and failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from sqlmodel import Session

from db.evaluators import evaluator_by_id, evaluator_for
from db.keyed import save
from db.models import Evaluator
from elitr_core.backends.base import Backend
from elitr_core.data.credentials import without_credentials
from elitr_core.errors import UserError
from elitr_core.passes.lifecycle import PassReport
from elitr_core.passes.records import library_versions, now_iso, process_info, with_failure
from elitr_core.prompts.assembly import JUDGE_DECODING

#: Judge passes kept in an evaluator's config (the oldest are dropped).
MAX_PASSES = 20


@dataclass(frozen=True)
class JudgePassSpec:
    """A judge pass: the judge, its prompt style, the evaluator's slug, the responses'
    filters, samples per item and their seed (``seed``: sample 0's; sample ``s`` uses
    ``seed + s``; None: each judged run's own seed, else 2023), and the output's length."""

    #: The pass's kind in its error lines, and the styles it takes.
    kind: ClassVar[str] = "judge"
    styles: ClassVar[tuple[str, ...]] = ()

    judge_model: str
    style: str
    evaluator: str
    models: tuple[str, ...] = ()
    split: str | None = None
    setting: str | None = None
    mode: str | None = None
    language: str | None = None
    samples: int = 1
    seed: int | None = None
    max_new_tokens: int = JUDGE_DECODING.max_new_tokens

    def check(self) -> None:
        """Raise :class:`UserError` when the spec cannot run."""
        if self.style not in self.styles:
            raise UserError(f"unknown {self.kind} style {self.style!r}; use "
                            f"{' or '.join(self.styles)}")
        if not self.judge_model.strip():
            raise UserError("a judge pass needs a judge model (--judge-model)")
        slug = self.evaluator
        if not slug or len(slug) > 64 or not all(c.isalnum() or c in "-_." for c in slug):
            raise UserError(f"evaluator slug {slug!r}: use 1-64 letters, digits, '-', '_' or '.'")
        if not 1 <= self.samples <= 100:
            raise UserError(f"samples must be 1..100 (got {self.samples})")
        if not 1 <= self.max_new_tokens <= 8192:
            raise UserError(f"max_new_tokens must be 1..8192 (got {self.max_new_tokens})")

    def filters(self) -> dict[str, Any]:
        """The response filters, as stored with the pass."""
        return {"models": list(self.models), "split": self.split, "setting": self.setting,
                "mode": self.mode, "language": self.language}


@dataclass
class JudgePassReport(PassReport):
    """What a judge pass did: :class:`PassReport`'s counts, the evaluator, and the outputs
    read (``ok``) or not (``unparsed``)."""

    outputs: ClassVar[str] = "judge output(s)"

    evaluator: str = ""
    ok: int = 0
    unparsed: int = 0

    def judged(self, ok: bool) -> None:
        """Count one finished judgment, read or not."""
        self.ok += ok
        self.unparsed += not ok

    def counters(self, status: str | None) -> dict[str, Any]:
        """The counters the pass record keeps: ``done`` is what is stored while the pass runs
        (the asked ones may wait in the writer's queue) and every asked one at its end."""
        return {"todo": self.total - self.skipped,
                "done": self.asked if status is not None else self.stored, "ok": self.ok,
                "unparsed": self.unparsed, "altered": self.altered, "usage": dict(self.usage)}


def evaluator_of(session: Session, spec: JudgePassSpec, *, kind: str,
                 description: str) -> tuple[int, Evaluator]:
    """The id and row of the evaluator named by ``spec.evaluator``, created (of ``kind``,
    with ``description``) when there is none yet; the pass checks it is its judge, then
    :func:`open_pass`."""
    evaluator_id = evaluator_for(session=session, slug=spec.evaluator, kind=kind,
                                 source="judge", description=description)
    evaluator = evaluator_by_id(session=session, evaluator_id=evaluator_id)
    assert evaluator is not None
    return evaluator_id, evaluator


def open_pass(session: Session, evaluator: Evaluator, spec: JudgePassSpec, backend: Backend,
              identity: dict[str, Any], **details: Any) -> None:
    """Store the judge's ``identity`` in ``evaluator`` and open a pass record holding the
    backend, the spec's filters, samples and seed, then ``details``; save it (in the caller's
    transaction)."""
    start_pass(evaluator, identity, {"backend": backend.describe(), "filters": spec.filters(),
                                     "samples": spec.samples, "seed": spec.seed, **details})
    save(session=session, rows=[evaluator])


def start_pass(evaluator: Evaluator, identity: dict[str, Any], details: dict[str, Any]) -> None:
    """Store ``identity`` and open a new pass record holding ``details`` (not yet committed)."""
    config = dict(evaluator.config)
    config.update(identity)
    run: dict[str, Any] = {"started_at": now_iso(), "finished_at": None, "status": "running",
                           **details, "versions": library_versions(),
                           "process": process_info(), "todo": 0, "done": 0, "ok": 0,
                           "unparsed": 0, "usage": {}, "failures": []}
    config["passes"] = [*config.get("passes", []), run][-MAX_PASSES:]
    evaluator.config = without_credentials(config)  # a backend's details hold no secret


def record_pass(session: Session, evaluator_id: int, counters: dict[str, Any],
                status: str | None, error: BaseException | None) -> str | None:
    """Update the open pass with ``counters``; close it with ``status``; add ``error``."""
    evaluator = evaluator_by_id(session=session, evaluator_id=evaluator_id)
    assert evaluator is not None
    config = dict(evaluator.config)
    passes = list(config.get("passes", []))
    current = {**passes[-1], **counters}
    if status is not None:
        current.update({"status": status, "finished_at": now_iso()})
    if error is not None:
        current["failures"] = with_failure(current.get("failures"), error)
    config["passes"] = [*passes[:-1], current]
    evaluator.config = config
    save(session=session, rows=[evaluator])
    return status


@dataclass(frozen=True)
class PassRecord:
    """Keeps the open pass of ``evaluator_id`` with ``report``'s counters: after every batch
    of judgments, in its transaction (:meth:`batch`, the store step's ``after_batch``), so a
    reader never finds the counters apart from the rows; and at the end (:meth:`end`, the
    lifecycle's recorder), ``done`` when no error stopped it (unparsable outputs included:
    the next pass asks them again)."""

    evaluator_id: int
    report: JudgePassReport

    def batch(self, session: Session) -> None:
        record_pass(session, self.evaluator_id, self.report.counters(None), None, None)

    def end(self, session: Session, status: str | None,
            error: BaseException | None) -> str | None:
        status = status or "done"
        return record_pass(session, self.evaluator_id, self.report.counters(status), status,
                           error)
