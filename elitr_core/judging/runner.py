"""Judge passes: an LLM judge scores stored responses, resumably, k samples per item.

An evaluator (slug chosen by the user, kind ``llm``) is one judge model with one prompt style;
its ``config`` holds the judge's identity and the history of its passes (backend, filters,
progress, token usage, failures). Each judgment is written as it arrives (the pass's store
step, ``passes/store.py``, writes whatever has arrived in one short transaction): the judge's
full output in ``Score.raw``; a parsable output as status ``ok`` with its 1..10 value
(Prometheus' 1..5 times 2); an unparsable one as status ``unparsed``, value NULL, with the
parser's reason, never -1. A later pass asks only the items with no score yet or an unparsed
one (``excluded`` items were set aside by a researcher and stay so).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import benchmark as bq
from db import responses as pq
from db.models import NO_SEED, Score, utcnow
from db.scores import has_scores, score_states, upsert_judgments
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion, Conversation
from elitr_core.data.summaries import SUMMARY_TYPE
from elitr_core.errors import UserError
from elitr_core.judging.judge_pass import (
    JudgePassReport,
    JudgePassSpec,
    PassRecord,
    evaluator_of,
    open_pass,
)
from elitr_core.judging.parser import parse_judgment
from elitr_core.passes.lifecycle import ResumablePass
from elitr_core.passes.records import (
    DEFAULT_SEED,
    NullProgress,
    Progress,
)
from elitr_core.passes.store import Store, Storing
from elitr_core.prompts.assembly import (
    JUDGE_DECODING,
    judge_messages,
    protocol_prompt_hash,
)
from elitr_core.vocab import JUDGE_SCALES, JUDGE_STYLES

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class JudgeSpec(JudgePassSpec):
    """Which responses to judge, with which judge and absolute prompt style."""

    styles: ClassVar[tuple[str, ...]] = JUDGE_STYLES


@dataclass(frozen=True)
class JudgeItem:
    """One judgment to ask: a response, a sample index and the judge's inputs."""

    response_id: int
    sample: int
    seed: int
    question: str
    response: str
    reference: str


@dataclass
class JudgeReport(JudgePassReport):
    """What a judge pass did (``total``: items in all; ``asked``: judgments asked now)."""

    @property
    def items(self) -> int:
        return self.total

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"evaluator {self.evaluator}: {self.asked} judgment(s) asked ({self.ok} scored, "
                f"{self.unparsed} unparsable), {self.skipped} already scored, {self.total} in "
                f"all; tokens: {self.tokens()}; {self.seconds:.1f} s; status {self.status}")


def judge_identity(spec: JudgeSpec) -> dict[str, Any]:
    """What makes two passes the same judge (stored once per evaluator)."""
    return {"kind": "judge", "judge_model": spec.judge_model, "style": spec.style,
            "prompt_hash": protocol_prompt_hash()}


def prepare_evaluator(session: Session, spec: JudgeSpec, backend: Backend) -> int:
    """Create the evaluator or check it is this judge; start a pass record; return its id."""
    identity = judge_identity(spec)
    top = JUDGE_SCALES[spec.style]
    scale = f"1..{top}" + (f" x{10 // top}" if top != 10 else "")  # "1..10", "1..5 x2"
    evaluator_id, evaluator = evaluator_of(
        session, spec, kind="llm",
        description=f"LLM judge {spec.judge_model}, {spec.style} prompt ({scale})")
    config = dict(evaluator.config)
    if config.get("kind") != "judge":
        if evaluator.kind != "llm" or has_scores(session=session, evaluator_id=evaluator_id):
            raise UserError(f"evaluator {spec.evaluator!r} holds imported or human scores: "
                            "choose another --evaluator slug for this judge")
    else:
        changed = [k for k in ("judge_model", "style") if config.get(k) != identity[k]]
        if changed:
            raise UserError(
                f"evaluator {spec.evaluator!r} is the judge {config.get('judge_model')!r} "
                f"with the {config.get('style')!r} prompt: choose another --evaluator slug")
    decoding = replace(JUDGE_DECODING, max_new_tokens=spec.max_new_tokens).to_dict()
    decoding.pop("seed")
    open_pass(session, evaluator, spec, backend, identity, decoding=decoding)
    return evaluator_id


def collect_items(
    session: Session, spec: JudgeSpec, evaluator_id: int
) -> tuple[list[JudgeItem], int]:
    """Items still to judge (no score or unparsed), and how many match the filters in all."""
    rows = pq.responses_to_judge(
        session=session, models=spec.models,
        filters={name: getattr(spec, name) for name in ("split", "setting", "mode", "language")},
        except_type=SUMMARY_TYPE)  # the 1-10 rubric is for answers, not meeting summaries
    if not rows:
        raise UserError(f"no stored response matches {spec.filters()}: check --model, --split, "
                        "--setting, --mode (`python -m elitr_core export scores` lists them)")
    translations = bq.translations(session=session, languages={r[4] for r in rows} - {"en"})
    status = score_states(session=session, evaluator_id=evaluator_id)
    items: list[JudgeItem] = []
    for rid, text, seed, setting, language, qid, qa, conv, reference in rows:
        if language != "en":
            t = translations.get((qid, language))
            if t is None:
                raise UserError(f"question {qid} has no {language!r} translation to judge with")
            qa, conv, reference = t.qa_text or qa, t.conv_text, t.reference or reference
        question = (conv or qa) if setting == "conv" else qa
        base = spec.seed if spec.seed is not None else (
            seed if seed != NO_SEED else DEFAULT_SEED)
        for sample in range(spec.samples):
            if status.get((rid, sample)) in ("ok", "excluded"):
                continue
            items.append(JudgeItem(rid, sample, base + sample, question, text, reference))
    return items, len(rows) * spec.samples


def judge_run(engine: Engine, spec: JudgeSpec, backend: Backend, *,
              progress: Progress | None = None) -> JudgeReport:
    """Run one judge pass over the matching responses; return what it did.

    Any exception (a dead server, Ctrl-C) marks the pass ``failed`` and propagates; the
    judgments stored so far stay, and the next pass asks only what is missing or unparsed.
    """
    spec.check()
    sink = progress or NullProgress()
    with writing(engine) as session:
        evaluator_id = prepare_evaluator(session, spec, backend)
        items, total = collect_items(session, spec, evaluator_id)
    report = JudgeReport(evaluator=spec.evaluator, total=total, skipped=total - len(items))
    record = PassRecord(evaluator_id, report)
    lifecycle = ResumablePass(engine, report, sink, record.end, Storing(
        Score, upsert_judgments, key=("response_id", "sample"), name="judge-writer",
        after_batch=record.batch))
    judgments = Judgments(lifecycle.store, report, evaluator_id, spec.style)
    with lifecycle.running(f"judge {spec.evaluator}"):
        lifecycle.ask(
            backend, items,
            lambda i: Conversation.single(
                judge_messages(i.question, i.response, i.reference, style=spec.style)),
            lambda i: replace(JUDGE_DECODING, seed=i.seed, max_new_tokens=spec.max_new_tokens),
            judgments.put)
    return report


@dataclass(frozen=True)
class Judgments:
    """Where a judge pass's outputs go: :meth:`put` reads an output with the pass's prompt
    ``style``, counts it in the report and hands its ``Score`` row to the pass's store step
    (``passes/store.py``)."""

    store: Store
    report: JudgeReport
    evaluator_id: int
    style: str

    def put(self, item: JudgeItem, _turn: int, completion: Completion) -> None:
        """Store the judge's ``completion`` for ``item`` (the backend's answer callback)."""
        result = parse_judgment(completion.text, self.style)  # the output as generated
        self.report.judged(result.ok)
        self.store.put({  # the output and the reason quoting it, by the policy
            "response_id": item.response_id, "evaluator_id": self.evaluator_id,
            "annotator_id": None, "annotator_key": 0, "sample": item.sample,
            "value": result.score, "status": "ok" if result.ok else "unparsed",
            "reason": result.reason, "raw": completion.text, "created_at": utcnow(),
            "updated_at": utcnow()})
