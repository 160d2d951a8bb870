"""Pairwise judge passes: CREAM's two steps or L-Eval battles, resumable, on any backend.

Like absolute judging (:mod:`elitr_core.judging.runner`): the evaluator (kind ``pairwise``)
records the judge's identity and each pass (backend, filters and scheduling, progress, token
usage, failures) in its config; every judgment is written as it arrives through the pass's
store step (``passes/store.py``), with the judge's full output; an unreadable output is
stored ``unparsed`` with the parser's reason and no verdict, and the next pass asks it again
alone. CREAM's key facts are written as soon as they are read, so a pass stopped
between the two steps resumes at the alignment step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db.models import PairwiseJudgment, utcnow
from db.pairwise import upsert_pairwise
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion, Conversation, Message
from elitr_core.errors import UserError
from elitr_core.judging.judge_pass import JudgePassReport, PassRecord, evaluator_of, open_pass
from elitr_core.judging.pairs import PairItem, PairwiseSpec, collect_pair_items
from elitr_core.judging.pairwise_parser import parse_alignment, parse_battle, parse_key_facts
from elitr_core.passes.lifecycle import ResumablePass
from elitr_core.passes.records import NullProgress, Progress
from elitr_core.passes.store import Storing
from elitr_core.prompts.assembly import JUDGE_DECODING, prompt_hash
from elitr_core.prompts.pairwise import (
    PAIRWISE_TEMPLATE_FILES,
    alignment_messages,
    battle_messages,
    key_facts_messages,
    pairwise_template,
    split_sentences,
)

_FROM_SHOWN = {("ab", "A"): "a", ("ab", "B"): "b", ("ba", "A"): "b", ("ba", "B"): "a"}


@dataclass
class PairwiseReport(JudgePassReport):
    """What a pairwise pass did (``total``: judgments scheduled; ``calls``: judge calls)."""

    calls: int = 0

    def counters(self, status: str | None) -> dict[str, Any]:
        return {**super().counters(status), "calls": self.calls}

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"evaluator {self.evaluator}: {self.asked} pairwise judgment(s) asked in "
                f"{self.calls} judge call(s) ({self.ok} read, {self.unparsed} unparsable), "
                f"{self.skipped} already judged, {self.total} scheduled; tokens: "
                f"{self.tokens()}; {self.seconds:.1f} s; status {self.status}")


def pairwise_identity(spec: PairwiseSpec) -> dict[str, Any]:
    """What makes two passes the same pairwise judge."""
    names = sorted(PAIRWISE_TEMPLATE_FILES)
    return {"kind": "pairwise-judge", "judge_model": spec.judge_model, "style": spec.style,
            "max_key_facts": spec.max_key_facts if spec.style == "cream" else None,
            "prompt_hash": prompt_hash([pairwise_template(n) for n in names])}


def prepare_pairwise_evaluator(session: Session, spec: PairwiseSpec, backend: Backend) -> int:
    """Create the evaluator or check it is this judge; start a pass record; return its id."""
    identity = pairwise_identity(spec)
    evaluator_id, evaluator = evaluator_of(
        session, spec, kind="pairwise",
        description=f"pairwise judge {spec.judge_model}, {spec.style} prompt")
    config = dict(evaluator.config)
    if evaluator.kind != "pairwise":
        raise UserError(f"evaluator {spec.evaluator!r} holds absolute scores: choose another "
                        "--evaluator slug for this pairwise judge")
    if config.get("kind") == "pairwise-judge":
        changed = [k for k in ("judge_model", "style", "max_key_facts")
                   if config.get(k) != identity[k]]
        if changed:
            raise UserError(f"evaluator {spec.evaluator!r} is another pairwise judge ("
                            f"{', '.join(f'{k} {config.get(k)!r}' for k in changed)}): choose "
                            "another --evaluator slug")
    open_pass(session, evaluator, spec, backend, identity)
    return evaluator_id


Handle = Callable[[PairItem, Completion], None]
"""What a step does with the judge's answer to an item: ``handle(item, completion)``."""


@dataclass(frozen=True)
class PairwiseJudgments:
    """One pairwise pass's way to its judge and back: :meth:`ask` puts a step's items to the
    backend, counting the judge calls; :meth:`put` stores a step's result and :meth:`final`
    a finished judgment, through the pass's store step (``passes/store.py``)."""

    lifecycle: ResumablePass
    backend: Backend
    report: PairwiseReport
    evaluator_id: int
    max_new_tokens: int

    def ask(self, batch: Sequence[PairItem], messages: Callable[[PairItem], list[Message]],
            handle: Handle) -> None:
        """Ask the judge ``messages(item)`` for every item; ``handle`` each answer."""
        self.lifecycle.ask(
            self.backend, batch, lambda i: Conversation.single(messages(i)),
            lambda i: replace(JUDGE_DECODING, seed=i.seed, max_new_tokens=self.max_new_tokens),
            partial(self._answered, handle))

    def _answered(self, handle: Handle, item: PairItem, _turn: int,
                  completion: Completion) -> None:
        self.report.calls += 1
        handle(item, completion)

    def put(self, item: PairItem, values: dict[str, Any], *, finished: bool = False) -> None:
        """Store a judgment: a step's result, or (``finished``) one no further step of this
        pass revisits; CREAM stores a judgment twice (key facts, then alignment)."""
        self.lifecycle.store.put({
            "evaluator_id": self.evaluator_id, "response_a_id": item.response_a_id,
            "response_b_id": item.response_b_id, "order": item.order, "sample": item.sample,
            "verdict": None, "completeness_a": None, "completeness_b": None,
            "conciseness_a": None, "conciseness_b": None, "key_facts": None, "support": None,
            "raw": None, "raw_facts": None, "reason": None, **values,
            "created_at": utcnow(), "updated_at": utcnow()}, finished=finished)

    def final(self, item: PairItem, values: dict[str, Any]) -> None:
        """Count and store a finished judgment."""
        self.report.judged(values.get("status") == "ok")
        self.put(item, values, finished=True)

    def battle(self, item: PairItem, completion: Completion) -> None:
        """A battle's answer: read, then stored finished."""
        self.final(item, _battle(item, completion))


def _battle(item: PairItem, completion: Completion) -> dict[str, Any]:
    result = parse_battle(completion.text)
    verdict = result.verdict
    if verdict is not None and verdict != "tie":
        verdict = _FROM_SHOWN[(item.order, verdict)]
    return {"status": "ok" if result.ok else "unparsed", "reason": result.reason,
            "verdict": verdict, "raw": completion.text}


def _alignment(item: PairItem, facts: tuple[str, ...], raw_facts: str | None,
               completion: Completion) -> dict[str, Any]:
    first, second = item.shown
    result = parse_alignment(completion.text, len(facts), len(split_sentences(first)),
                             len(split_sentences(second)))
    values: dict[str, Any] = {"key_facts": list(facts), "raw_facts": raw_facts,
                              "raw": completion.text}
    if not result.ok:
        return {**values, "status": "unparsed", "reason": f"alignment: {result.reason}"}
    shown = {"A": (result.support_a, result.completeness_a, result.conciseness_a),
             "B": (result.support_b, result.completeness_b, result.conciseness_b)}
    side_a, side_b = ("A", "B") if item.order == "ab" else ("B", "A")
    return {**values, "status": "ok", "reason": None,
            "completeness_a": shown[side_a][1], "completeness_b": shown[side_b][1],
            "conciseness_a": shown[side_a][2], "conciseness_b": shown[side_b][2],
            "support": {side: [sorted(s) for s in shown[key][0] or ()]
                        for side, key in (("a", side_a), ("b", side_b))}}


@dataclass
class _Cream:
    """CREAM's two steps: key facts (step 1) for the items without them, then the alignment
    (step 2) for every item that has them. Key facts read are stored at once, unfinished (a
    pass stopped between the steps resumes at the alignment); unreadable key facts or an
    alignment finish the judgment."""

    judge: PairwiseJudgments
    max_key_facts: int
    #: id(item) -> (item, its key facts, the judge's output that gave them), in asking order
    ready: dict[int, tuple[PairItem, tuple[str, ...], str | None]] = field(
        default_factory=dict)

    def run(self, items: list[PairItem]) -> None:
        self.ready.update((id(i), (i, i.key_facts, i.raw_facts)) for i in items if i.key_facts)
        self.judge.ask([i for i in items if not i.key_facts], self._facts_messages,
                       self.facts_read)
        self.judge.ask([i for i, _, _ in self.ready.values()], self._alignment_messages,
                       self.aligned)

    def _facts_messages(self, item: PairItem) -> list[Message]:
        return key_facts_messages(item.question, *item.shown, max_key_facts=self.max_key_facts)

    def facts_read(self, item: PairItem, completion: Completion) -> None:
        """Step 1's answer: unreadable, the judgment ends; else its facts are stored."""
        result = parse_key_facts(completion.text, self.max_key_facts)
        if result.facts is None:
            self.judge.final(item, {"status": "unparsed", "reason": f"key facts: {result.reason}",
                                    "raw_facts": completion.text})
            return
        self.judge.put(item, {"status": "unparsed", "reason": "alignment not asked yet",
                              "key_facts": list(result.facts), "raw_facts": completion.text})
        self.ready[id(item)] = (item, result.facts, completion.text)

    def _alignment_messages(self, item: PairItem) -> list[Message]:
        return alignment_messages(item.question, self.ready[id(item)][1], *item.shown)

    def aligned(self, item: PairItem, completion: Completion) -> None:
        """Step 2's answer: read, then stored finished."""
        _, facts, raw_facts = self.ready[id(item)]
        self.judge.final(item, _alignment(item, facts, raw_facts, completion))


def pairwise_judge_run(engine: Engine, spec: PairwiseSpec, backend: Backend, *,
                       progress: Progress | None = None) -> PairwiseReport:
    """Run one pairwise judge pass; return what it did.

    Any exception (a dead server, Ctrl-C) marks the pass ``failed`` and propagates; what is
    stored stays, and the next pass asks only what is missing or unparsed.
    """
    spec.check()
    sink = progress or NullProgress()
    with writing(engine) as session:
        evaluator_id = prepare_pairwise_evaluator(session, spec, backend)
        items, total = collect_pair_items(session, spec, evaluator_id)
    report = PairwiseReport(evaluator=spec.evaluator, total=total, skipped=total - len(items))
    record = PassRecord(evaluator_id, report)
    lifecycle = ResumablePass(engine, report, sink, record.end, Storing(
        PairwiseJudgment, upsert_pairwise, name="pairwise-writer", after_batch=record.batch,
        key=("response_a_id", "response_b_id", "order", "sample")))
    judge = PairwiseJudgments(lifecycle, backend, report, evaluator_id, spec.max_new_tokens)
    with lifecycle.running(f"pairwise {spec.evaluator}"):
        if spec.style == "battle":
            judge.ask(items, lambda i: battle_messages(i.question, i.reference, *i.shown),
                      judge.battle)
        else:
            _Cream(judge, spec.max_key_facts).run(items)
    return report
