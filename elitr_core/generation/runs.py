"""Generation runs with the ELITR-Bench protocol, resumable and idempotent.

A run is one ``Run`` row, keyed by model, setting, mode, split, seed, variant and language,
whose JSON ``config`` records how every answer was made (backend, decoding, prompt options,
prompt hash, library versions, truncation policy) and the run's life (status, process,
failures). Each answer is written in its own short transaction as soon as the backend returns
it, so a killed run loses at most the answers in flight; running the same command again asks
only what is missing (single-turn: the missing questions; multi-turn: the conversation goes on
from the stored answers) and never writes a duplicate (``Response`` is unique per run and
question).

Protocol (docs/protocol.md §2): ``st`` starts a fresh conversation per question; ``mt`` asks
a meeting's questions in file order in one conversation. ``conv`` questions only make sense in
``mt``. The Czech variant (``language="cs"``) keeps the English transcript and prompt and asks
the Czech question.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, Protocol

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import benchmark as bq
from db import keyed
from db import responses as pq
from db import runs as rq
from db.fillers import filler_counts
from db.models import Response, utcnow
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion, Conversation
from elitr_core.data.model_text import as_generated
from elitr_core.errors import UserError
from elitr_core.generation.interleave import check_span
from elitr_core.generation.interleaved import Interleaved
from elitr_core.generation.interleaved_run import ask_interleaved_run, stored_conversations
from elitr_core.generation.retrieval import question_context
from elitr_core.generation.run_config import GenerationConfig
from elitr_core.generation.spec import (
    GenerationSpec,
    MeetingWork,
    QuestionItem,
    load_work,
    of_task,
)
from elitr_core.passes.lifecycle import PassReport, ResumablePass
from elitr_core.passes.records import (
    NullProgress,
    Progress,
    completion_meta,
    library_versions,
    now_iso,
    process_info,
    with_failure,
)
from elitr_core.passes.store import Store, Storing
from elitr_core.prompts.assembly import (
    multi_turn_plan,
    single_turn_messages,
)
from elitr_core.vocab import setting_mode_label

logger = logging.getLogger(__name__)

class Asked(Protocol):
    """A conversation a run asks (a question alone, a meeting's questions, an interleaved
    group's): which question a turn's answer is to, with what in its meta."""

    @property
    def conversation(self) -> Conversation: ...

    def answered(self, turn: int,
                 completion: Completion) -> tuple[QuestionItem, dict[str, Any]]: ...


@dataclass(frozen=True)
class SingleTurn:
    """One question asked alone, with its context's retrieval details (kept in its meta)."""

    question: QuestionItem
    conversation: Conversation
    retrieval: dict[str, Any]

    def answered(self, turn: int,
                 completion: Completion) -> tuple[QuestionItem, dict[str, Any]]:
        return self.question, self.retrieval


@dataclass(frozen=True)
class MultiTurn:
    """A meeting's conversation: turn ``t`` answers its question ``t`` (a resumed one starts
    after its stored answers)."""

    questions: Sequence[QuestionItem]
    conversation: Conversation

    def answered(self, turn: int,
                 completion: Completion) -> tuple[QuestionItem, dict[str, Any]]:
        return self.questions[turn], {"turn": turn}


@dataclass(frozen=True)
class RunAnswers:
    """Where a run's answers go: :meth:`put` makes an answer's ``Response`` row and hands it
    to the pass's store step (``passes/store.py``: the storage policy, an altered answer's
    original noted in its meta, the batch writer, the counts and the progress)."""

    store: Store
    run_id: int

    def put(self, question: QuestionItem, completion: Completion,
            extra: dict[str, Any]) -> None:
        """Store ``completion`` as the answer to ``question``, ``extra`` in its meta (its
        turn, its context's retrieval, its span)."""
        self.store.put({  # an altered answer keeps what the model said in its meta
            "run_id": self.run_id, "question_id": question.question_id,
            "text": completion.text, "meta": completion_meta(completion, **extra),
            "created_at": utcnow()}, original=completion.text)

    def put_turn(self, asked: Asked, turn: int, completion: Completion) -> None:
        """Store the answer to ``asked``'s ``turn`` (the pass's callback for each answer)."""
        question, extra = asked.answered(turn, completion)
        self.put(question, completion, extra)


@dataclass
class GenerationReport(PassReport):
    """What a generation call did (``written``: answers stored by this call)."""

    outputs: ClassVar[str] = "answer(s)"

    run_id: int = 0
    label: str = ""
    #: the run's answered fillers (all stored, this call's and earlier ones'): replies, those
    #: that gave every sum right, sums right of sums asked (``None``: no answered filler)
    fillers: tuple[int, int, int, int] | None = None

    @property
    def written(self) -> int:
        return self.asked

    def notes(self) -> list[str]:
        """The answered fillers' line: whether the model followed them."""
        if self.fillers is None:
            return []
        replies, followed, right, asked = self.fillers
        share = f" ({followed / replies:.0%})" if replies else ""
        return [f"fillers (stored apart, never scored): {replies} answered, {followed} with "
                f"every sum right{share}; {right} of {asked} sums right"]

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"run #{self.run_id} {self.label}: {self.written} answer(s) written, "
                f"{self.skipped} already stored, {self.total} question(s) in all; "
                f"tokens: {self.tokens() or 'not reported'}; {self.seconds:.1f} s; "
                f"status {self.status}")


def prepare_run(engine: Engine, spec: GenerationSpec, backend: Backend,
                work: Sequence[MeetingWork]) -> int:
    """Create the run, or check a stored one has the same settings; mark it running.

    Raises
    ------
    UserError
        The key names an imported run, or a stored run made with other settings.
    """
    from elitr_core.data import records

    identity = spec.identity(backend)
    # the typed gate: the stored name, seed and variant within their columns, names clean
    checked = records.check_options(records.RUN, {"model": spec.model, "seed": spec.seed,
                                                  "variant": spec.run_variant}, what="run")
    key = {"model": checked["model"], "setting": spec.setting, "mode": spec.run_mode,
           "split": spec.split, "seed": checked["seed"], "variant": spec.run_variant,
           "language": spec.language}
    with writing(engine) as session:
        rq.upsert_run(session=session, key=key,
                      values={"backend": backend.name, "status": "pending",
                              "config": GenerationConfig.model_validate(
                                  identity.model_dump()).stored(),
                              "created_at": utcnow()})
        row = rq.run_by_key(session=session, key=key)
        if row.backend == "import" or row.config.get("kind") != "generation":
            raise UserError(f"{_label(spec)} is an imported run: give this run a --variant name")
        config = GenerationConfig.read(row.config)
        changed = config.identity().differences(identity)
        if changed:
            raise UserError(f"{_label(spec)} is stored with other settings "
                            f"({', '.join(changed)}): rerun with the stored settings to "
                            "resume, or add --variant NAME")
        meetings = sorted(set(config.meetings) | {w.meeting for w in work})
        config = config.model_copy(update={
            **identity.model_dump(), "model": spec.model, "backend": backend.describe(),
            "language": spec.language, "meetings": meetings,
            "questions": _expected_questions(session, spec, meetings),
            "versions": library_versions(), "process": process_info(),
            "started_at": now_iso(), "finished_at": None})
        row.config, row.status, row.backend = config.stored(), "running", backend.name
        keyed.save(session=session, rows=[row])
        assert row.id is not None
        return row.id


def _expected_questions(session: Session, spec: GenerationSpec, meetings: list[str]) -> int:
    only, but = of_task(spec.task)
    return bq.question_count(session=session, split=spec.split, meetings=meetings,
                             only_type=only, except_type=but)


def stored_answers(engine: Engine, run_id: int) -> dict[int, str]:
    """Question id -> stored answer of a run, as its model generated it (the original an
    answer altered by the storage policy kept: ``model_text.as_generated``)."""
    with writing(engine) as session:
        stored = pq.run_answers(session=session, run_id=run_id)
    return {qid: as_generated(text, meta) for qid, (text, meta) in stored.items()}


def generate_run(engine: Engine, spec: GenerationSpec, backend: Backend, *,
                 progress: Progress | None = None,
                 on_plan: Callable[[list[Interleaved], str], None] | None = None
                 ) -> GenerationReport:
    """Generate (or finish) one run; return what was done.

    Every answer is queued for storage as it arrives (a background writer commits whatever is
    queued, at once, so the backend's thread never waits for a transaction). Any exception (a
    dead server, Ctrl-C) marks the run ``failed`` with the error in its config and propagates;
    the answers stored so far stay. ``on_plan(conversations, unit)`` is given an interleaved
    run's conversations (their planned spans) and the backend's token unit before anything
    is asked.
    """
    spec = spec.checked()
    if spec.interleave is not None:
        check_span(spec.interleave, backend, spec.decoding.max_new_tokens)
    sink = progress or NullProgress()
    with writing(engine) as session:
        work = load_work(session, spec)
    run_id = prepare_run(engine, spec, backend, work)
    report = GenerationReport(run_id=run_id, label=_label(spec))
    done = stored_answers(engine, run_id)
    try:  # planning a long span takes time: a failure or Ctrl-C in it ends the run too
        interleaved = stored_conversations(engine, run_id, spec, backend, work, _label(spec))
    except BaseException as exc:
        with writing(engine) as session:
            _record_end(session, "failed", exc, run_id=run_id)
        raise
    if interleaved and on_plan is not None:
        on_plan(interleaved, backend.token_unit)
    asked = ([q for c in interleaved for q in c.questions] if spec.interleave
             else [q for w in work for q in w.questions])
    report.total = len(asked)
    report.skipped = sum(1 for q in asked if q.question_id in done)
    logger.info("%s: %d to ask, %d already stored", report.label,
                report.total - report.skipped, report.skipped)
    lifecycle = ResumablePass(
        engine, report, sink, partial(_record_end, run_id=run_id),
        Storing(Response, pq.upsert_responses, key=("question_id",), name="answer-writer",
                        note="meta"))
    answers = RunAnswers(lifecycle.store, run_id)
    with lifecycle.running(report.label):
        if spec.interleave is not None:
            ask_interleaved_run(engine, spec, lifecycle, backend, interleaved, done,
                                answers.put, answers.run_id)
        elif spec.mode == "st":
            _single_turn(spec, lifecycle, backend, work, done, answers)
        else:
            _multi_turn(spec, lifecycle, backend, work, done, answers)
    if spec.interleave is not None and spec.interleave.answered_filler:
        with writing(engine) as session:
            report.fillers = filler_counts(session=session, run_id=run_id)
    return report


def _single_turn(spec: GenerationSpec, lifecycle: ResumablePass, backend: Backend,
                 work: Sequence[MeetingWork], done: dict[int, str], answers: RunAnswers) -> None:
    """Every meeting's unanswered questions go to the backend at once, each meeting's
    questions sharing its transcript (``cache_key``)."""
    todo = []
    for meeting in work:
        for q in meeting.questions:
            if q.question_id in done:
                continue
            text, retrieval = question_context(meeting.transcript, q.text,
                                               spec.context_policy())
            todo.append(SingleTurn(q, Conversation.single(single_turn_messages(
                text, q.text, system_prompt=spec.system_prompt, qa_markers=spec.qa_markers,
                length_words=q.length_words), cache_key=meeting.meeting), retrieval))
    lifecycle.ask(backend, todo, _conversation, lambda _: spec.decoding, answers.put_turn)
    logger.info("%d answer(s) stored over %d meeting(s)", len(todo),
                len({item.conversation.cache_key for item in todo}))


def _multi_turn(spec: GenerationSpec, lifecycle: ResumablePass, backend: Backend,
                work: Sequence[MeetingWork], done: dict[int, str], answers: RunAnswers) -> None:
    """One conversation per meeting, resumed after its stored answers."""
    todo = []
    for meeting in work:
        history, turns = multi_turn_plan(
            meeting.transcript, [q.text for q in meeting.questions],
            system_prompt=spec.system_prompt, qa_markers=spec.qa_markers,
            length_words=[q.length_words for q in meeting.questions])
        previous: list[str] = []
        for q in meeting.questions:  # the conversation resumes after its stored prefix
            if q.question_id not in done:
                break
            previous.append(done[q.question_id])
        if len(previous) < len(meeting.questions):
            todo.append(MultiTurn(meeting.questions, Conversation(history, turns, previous,
                                                                  cache_key=meeting.meeting)))
    lifecycle.ask(backend, todo, _conversation, lambda _: spec.decoding, answers.put_turn)


def _conversation(asked: Asked) -> Conversation:
    return asked.conversation


def _record_end(session: Session, status: str | None, error: BaseException | None, *,
                run_id: int) -> str | None:
    """Record the end of a call: ``done`` when every expected question is answered, and how
    many stored answers the storage policy of model text altered (``altered_answers``)."""
    run = rq.run_by_id(session=session, run_id=run_id)
    if run is None:
        raise UserError(f"run #{run_id} disappeared from the database during the run")
    config = GenerationConfig.read(run.config)
    if status is None:
        answered = pq.response_count(session=session, run_id=run_id)
        status = "done" if answered >= config.questions else "pending"
    failures = with_failure(config.failures, error) if error is not None else config.failures
    # counted from the stored answers, so resumed and killed calls are counted exactly
    metas = rq.metas_by_run(session=session, run_ids=[run_id])[run_id]
    run.config = config.model_copy(update={
        "failures": failures, "finished_at": now_iso(),
        "altered_answers": sum(1 for meta in metas if meta.get("altered"))}).stored()
    run.status = status
    keyed.save(session=session, rows=[run])
    return status


def _label(spec: GenerationSpec) -> str:
    """``MODEL Conv-mt dev seed 0``; an interleaved run's span after its mode
    (``MODEL Conv-int2 16k dev seed 0``)."""
    extra = "".join(f" {k} {v}" for k, v in (("variant", spec.variant),
                                             ("language", spec.language)) if v and v != "en")
    span = f" {spec.interleave.span_label()}" if spec.interleave and spec.interleave.span else ""
    return (f"{spec.model} {setting_mode_label(spec.setting, spec.run_mode)}{span} "
            f"{spec.split} seed {spec.seed}{extra}")
