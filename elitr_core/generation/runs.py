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
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, ClassVar

from sqlalchemy.engine import Engine
from sqlmodel import Session

from db import benchmark as bq
from db import crud
from db import runs as rq
from db.models import Meeting, QuestionTranslation, Response, utcnow
from db.transaction import writing
from elitr_core.backends.base import Backend, Completion, Conversation, DecodingConfig
from elitr_core.data.model_text import as_generated, storable_row
from elitr_core.data.summaries import SUMMARY_REQUEST, SUMMARY_TYPE, ensure_summary_questions
from elitr_core.errors import UserError
from elitr_core.generation.retrieval import (
    CONTEXT_POLICIES,
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_TOP_K,
    question_context,
)
from elitr_core.passes.lifecycle import PassReport, ResumablePass
from elitr_core.passes.records import (
    DEFAULT_SEED,
    NullProgress,
    Progress,
    completion_meta,
    library_versions,
    now_iso,
    process_info,
    with_failure,
)
from elitr_core.passes.writer import BatchWriter
from elitr_core.prompts.assembly import (
    multi_turn_plan,
    protocol_prompt_hash,
    reference_word_count,
    single_turn_messages,
)
from elitr_core.vocab import LANGUAGES, MODES, SETTINGS, SPLITS, TASKS, setting_mode_label

logger = logging.getLogger(__name__)

#: Config keys that must match when a stored run is resumed (they shape every answer).
IDENTITY_KEYS: tuple[str, ...] = (
    "backend_name", "decoding", "chat_template", "system_prompt", "qa_markers",
    "length_instruction", "truncation", "prompt_hash", "context", "task",
)


@dataclass(frozen=True)
class GenerationSpec:
    """What to generate and how (one run).

    ``decoding.seed`` is replaced by ``seed``; ``temperature == 0`` means greedy.
    ``meetings`` limits the run to some meetings of the split (empty: all of them).
    """

    model: str
    setting: str
    mode: str
    split: str
    seed: int = DEFAULT_SEED
    language: str = "en"
    variant: str = ""
    meetings: tuple[str, ...] = ()
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    chat_template: bool = True
    system_prompt: bool = False
    qa_markers: bool = False
    length_instruction: bool = False
    truncation: str | None = None
    context: str = "full"
    task: str = "qa"
    top_k: int = DEFAULT_TOP_K
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS

    def context_policy(self) -> dict[str, Any] | None:
        """The retrieval policy recorded with the run (``None``: the whole transcript)."""
        if self.context == "full":
            return None
        return {"policy": self.context, "top_k": self.top_k, "chunk_tokens": self.chunk_tokens,
                "token_count": "whitespace words", "retriever": "bm25s (Lucene BM25)"}

    def checked(self) -> GenerationSpec:
        """This spec with the seed in its decoding; :class:`UserError` when inconsistent."""
        if not self.model.strip():
            raise UserError("a run needs a model name (--model)")
        if self.task not in TASKS:
            raise UserError(f"unknown --task {self.task!r}; use qa or summary")
        if self.task == "summary" and (self.setting, self.mode) != ("summary", "st"):
            raise UserError("--task summary asks one question per meeting: its runs have "
                            "setting summary and mode st (leave --setting out)")
        settings = ("summary",) if self.task == "summary" else SETTINGS
        for name, value, allowed in (("setting", self.setting, settings),
                                     ("mode", self.mode, MODES),
                                     ("split", self.split, SPLITS),
                                     ("language", self.language, LANGUAGES)):
            if value not in allowed:
                raise UserError(f"unknown {name} {value!r}; use one of {', '.join(allowed)}")
        if self.setting == "conv" and self.mode == "st":
            raise UserError("conv questions rely on the previous turns: use --mode mt with "
                            "--setting conv (the benchmark reports QA-st, QA-mt and Conv-mt)")
        d = self.decoding
        if not 1 <= d.max_new_tokens <= 4096 or d.temperature < 0 or not 0 < d.top_p <= 1:
            raise UserError("decoding: max_new_tokens must be 1..4096, temperature >= 0 and "
                            f"top_p in (0, 1] (got {d.max_new_tokens}, {d.temperature}, {d.top_p})")
        if d.repetition_penalty <= 0:
            raise UserError(f"repetition penalty must be > 0 (got {d.repetition_penalty})")
        if self.context not in CONTEXT_POLICIES:
            raise UserError(f"unknown --context {self.context!r}; use full or bm25")
        if self.context != "full":
            if self.mode != "st":
                raise UserError("--context bm25 needs --mode st: each question gets its own "
                                "passages, while a multi-turn conversation shares one context")
            if self.top_k < 1 or self.chunk_tokens < 1:
                raise UserError(f"--top-k and --chunk-tokens must be positive (got "
                                f"{self.top_k}, {self.chunk_tokens})")
        return replace(self, decoding=replace(d, seed=self.seed))

    def identity(self, backend: Backend) -> dict[str, Any]:
        """The settings that shape every answer; a resumed run must have the same."""
        return {
            "backend_name": backend.name,
            "decoding": self.decoding.to_dict(),
            "chat_template": self.chat_template,
            "system_prompt": self.system_prompt,
            "qa_markers": self.qa_markers,
            "length_instruction": self.length_instruction,
            "truncation": self.truncation,
            "prompt_hash": protocol_prompt_hash(),
            "context": self.context_policy(),
            "task": {"task": "summary", "request": SUMMARY_REQUEST}
            if self.task == "summary" else None,
        }


@dataclass(frozen=True)
class QuestionItem:
    """One question as it will be asked (text in the run's language and setting)."""

    question_id: int
    number: int
    text: str
    length_words: int | None


@dataclass(frozen=True)
class MeetingWork:
    """A meeting's transcript and its questions in file order."""

    meeting: str
    transcript: str
    questions: list[QuestionItem]


Writer = Callable[[QuestionItem, Completion, dict[str, Any]], None]
"""Stores one answer: ``write(question, completion, extra_meta)``."""


@dataclass
class GenerationReport(PassReport):
    """What a generation call did (``written``: answers stored by this call)."""

    outputs: ClassVar[str] = "answer(s)"

    run_id: int = 0
    label: str = ""

    @property
    def written(self) -> int:
        return self.asked

    def summary(self) -> str:
        """One line for the CLI."""
        return (f"run #{self.run_id} {self.label}: {self.written} answer(s) written, "
                f"{self.skipped} already stored, {self.total} question(s) in all; "
                f"tokens: {self.tokens() or 'not reported'}; {self.seconds:.1f} s; "
                f"status {self.status}")


def load_work(session: Session, spec: GenerationSpec) -> list[MeetingWork]:
    """The meetings of the run with their transcripts and questions.

    Raises
    ------
    UserError
        Unknown meetings, meetings without a transcript (naming them and the
        ``transcripts`` command), or questions without a translation in ``spec.language``.
    """
    meetings = bq.meeting_rows(session=session, split=spec.split)
    if spec.meetings:
        known = {m.external_id for m in meetings}
        unknown = [m for m in spec.meetings if m not in known]
        if unknown:
            raise UserError(f"unknown meeting(s) in {spec.split}: {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known)) or 'none; run init'})")
        meetings = [m for m in meetings if m.external_id in spec.meetings]
    if not meetings:
        raise UserError(f"no meeting in split {spec.split}: run `python -m elitr_core init` first")
    missing = [m.external_id for m in meetings if not (m.transcript or "").strip()]
    if missing:
        raise UserError(
            f"{len(missing)} meeting(s) have no transcript: {', '.join(missing)}. Download the "
            "ELITR Minuting Corpus (LINDAT 11234/1-4692) and run `python -m elitr_core "
            "transcripts DIR`, or choose other meetings with --meetings")
    if spec.task == "summary":
        ensure_summary_questions(session, meetings)
    return [MeetingWork(m.external_id, m.transcript or "", _questions(session, m, spec))
            for m in meetings]


def _of_task(task: str) -> tuple[str | None, str | None]:
    """The question types a task keeps (only, except): the summary questions, or the
    benchmark's."""
    return (SUMMARY_TYPE, None) if task == "summary" else (None, SUMMARY_TYPE)


def _questions(session: Session, meeting: Meeting, spec: GenerationSpec) -> list[QuestionItem]:
    assert meeting.id is not None
    only, but = _of_task(spec.task)
    questions = bq.meeting_questions(session=session, meeting_id=meeting.id, only_type=only,
                                     except_type=but)
    translations: dict[int, QuestionTranslation] = {}
    if spec.language != "en":
        found = bq.translations(session=session, languages=[spec.language],
                                question_ids=[q.id for q in questions if q.id is not None])
        translations = {qid: t for (qid, _), t in found.items()}
    items = []
    for q in questions:
        assert q.id is not None
        if spec.language == "en":
            text, reference = _phrasing(spec.setting, q.qa_text, q.conv_text) or "", q.reference
        else:
            t = translations.get(q.id)
            translated = _phrasing(spec.setting, t.qa_text, t.conv_text) if t else None
            if t is None or not translated:
                raise UserError(f"{meeting.external_id} question {q.number} has no "
                                f"{spec.language!r} translation: import czech.zip (`init`)")
            text, reference = translated, t.reference or ""
        words = reference_word_count(reference) if spec.length_instruction else None
        items.append(QuestionItem(q.id, q.number, text, words or None))
    return items


def _phrasing(setting: str, qa_text: str | None, conv_text: str | None) -> str | None:
    """The Conv phrasing in the conv setting (when it differs), else the QA one."""
    return (conv_text or qa_text) if setting == "conv" else qa_text


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
                                                  "variant": spec.variant}, what="run")
    key = {"model": checked["model"], "setting": spec.setting, "mode": spec.mode,
           "split": spec.split, "seed": checked["seed"], "variant": checked.get("variant", ""),
           "language": spec.language}
    with writing(engine) as session:
        crud.upsert_run(session=session, key=key,
                        values={"backend": backend.name, "status": "pending",
                                "config": {"kind": "generation", **identity},
                                "created_at": utcnow()})
        row = bq.run_by_key(session=session, key=key)
        config = dict(row.config)
        if row.backend == "import" or config.get("kind") != "generation":
            raise UserError(f"{_label(spec)} is an imported run: give this run a --variant name")
        changed = [k for k in IDENTITY_KEYS if config.get(k) != identity[k]]
        if changed:
            listed = ", ".join(f"{k} {config.get(k)!r} -> {identity[k]!r}" for k in changed)
            raise UserError(f"{_label(spec)} is stored with other settings ({listed}): rerun "
                            "with the stored settings to resume, or add --variant NAME")
        meetings = sorted(set(config.get("meetings", [])) | {w.meeting for w in work})
        expected = _expected_questions(session, spec, meetings)
        config.update(identity)
        config.update({
            "model": spec.model, "backend": backend.describe(), "language": spec.language,
            "meetings": meetings, "questions": expected, "versions": library_versions(),
            "process": process_info(), "started_at": now_iso(), "finished_at": None,
        })
        row.config, row.status, row.backend = config, "running", backend.name
        crud.save(session=session, rows=[row])
        assert row.id is not None
        return row.id


def _expected_questions(session: Session, spec: GenerationSpec, meetings: list[str]) -> int:
    only, but = _of_task(spec.task)
    return bq.question_count(session=session, split=spec.split, meetings=meetings,
                             only_type=only, except_type=but)


def stored_answers(engine: Engine, run_id: int) -> dict[int, str]:
    """Question id -> stored answer of a run, as its model generated it (the original an
    answer altered by the storage policy kept: ``model_text.as_generated``)."""
    with writing(engine) as session:
        stored = bq.run_answers(session=session, run_id=run_id)
    return {qid: as_generated(text, meta) for qid, (text, meta) in stored.items()}


def _store_answers(session: Session, rows: list[dict[str, Any]]) -> None:
    crud.upsert_responses(session=session, rows=rows)


def generate_run(engine: Engine, spec: GenerationSpec, backend: Backend, *,
                 progress: Progress | None = None) -> GenerationReport:
    """Generate (or finish) one run; return what was done.

    Every answer is queued for storage as it arrives (a background writer commits whatever is
    queued, at once, so the backend's thread never waits for a transaction). Any exception (a
    dead server, Ctrl-C) marks the run ``failed`` with the error in its config and propagates;
    the answers stored so far stay.
    """
    spec = spec.checked()
    sink = progress or NullProgress()
    with writing(engine) as session:
        work = load_work(session, spec)
    run_id = prepare_run(engine, spec, backend, work)
    report = GenerationReport(run_id=run_id, label=_label(spec))
    done = stored_answers(engine, run_id)
    report.total = sum(len(w.questions) for w in work)
    report.skipped = sum(1 for w in work for q in w.questions if q.question_id in done)
    logger.info("%s: %d to ask, %d already stored", report.label,
                report.total - report.skipped, report.skipped)
    writer = BatchWriter(engine, _store_answers, name="answer-writer")
    lifecycle = ResumablePass(engine, report, sink, partial(_record_end, run_id=run_id),
                              writer=writer)

    def write(item: QuestionItem, completion: Completion, extra: dict[str, Any]) -> None:
        # the storage policy of model text: unstorable characters replaced, cut to the column
        stored = storable_row(Response, {
            "run_id": run_id, "question_id": item.question_id, "text": completion.text,
            "meta": completion_meta(completion, **extra), "created_at": utcnow()})
        if stored.altered:
            stored.values["meta"]["altered"] = stored.note(completion.text)
            report.altered += 1
        writer.put(stored.values)
        lifecycle.stored()

    with lifecycle.running(report.label):
        if spec.mode == "st":
            _single_turn(spec, lifecycle, backend, work, done, write)
        else:
            _multi_turn(spec, lifecycle, backend, work, done, write)
    return report


def _single_turn(spec: GenerationSpec, lifecycle: ResumablePass, backend: Backend,
                 work: Sequence[MeetingWork], done: dict[int, str], write: Writer) -> None:
    """Every meeting's unanswered questions go to the backend at once, each meeting's
    questions sharing its transcript (``cache_key``)."""
    todo = [(meeting, q, question_context(meeting.transcript, q.text, spec.context_policy()))
            for meeting in work for q in meeting.questions if q.question_id not in done]

    def conversation(item: tuple[MeetingWork, QuestionItem, Any]) -> Conversation:
        meeting, q, (text, _) = item
        return Conversation.single(single_turn_messages(
            text, q.text, system_prompt=spec.system_prompt, qa_markers=spec.qa_markers,
            length_words=q.length_words), cache_key=meeting.meeting)

    lifecycle.ask(backend, todo, conversation, lambda _: spec.decoding,
                  lambda item, _, completion: write(item[1], completion, item[2][1]))
    logger.info("%d answer(s) stored over %d meeting(s)", len(todo),
                len({meeting.meeting for meeting, _, _ in todo}))


def _multi_turn(spec: GenerationSpec, lifecycle: ResumablePass, backend: Backend,
                work: Sequence[MeetingWork], done: dict[int, str], write: Writer) -> None:
    """One conversation per meeting, resumed after its stored answers."""
    conversations = []
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
            conversations.append((meeting, Conversation(history, turns, previous,
                                                        cache_key=meeting.meeting)))
    lifecycle.ask(backend, conversations, lambda item: item[1], lambda _: spec.decoding,
                  lambda item, turn, c: write(item[0].questions[turn], c, {"turn": turn}))


def _record_end(session: Session, status: str | None, error: BaseException | None, *,
                run_id: int) -> str | None:
    """Record the end of a call: ``done`` when every expected question is answered, and how
    many stored answers the storage policy of model text altered (``altered_answers``)."""
    run = bq.run_by_id(session=session, run_id=run_id)
    if run is None:
        raise UserError(f"run #{run_id} disappeared from the database during the run")
    config = dict(run.config)
    if status is None:
        answered = bq.response_count(session=session, run_id=run_id)
        status = "done" if answered >= int(config.get("questions", 0)) else "pending"
    if error is not None:
        config["failures"] = with_failure(config.get("failures"), error)
    # counted from the stored answers, so resumed and killed calls are counted exactly
    metas = rq.metas_by_run(session=session, run_ids=[run_id])[run_id]
    config["altered_answers"] = sum(1 for meta in metas if meta.get("altered"))
    config["finished_at"] = now_iso()
    run.config, run.status = config, status
    crud.save(session=session, rows=[run])
    return status


def _label(spec: GenerationSpec) -> str:
    extra = "".join(f" {k} {v}" for k, v in (("variant", spec.variant),
                                             ("language", spec.language)) if v and v != "en")
    return (f"{spec.model} {setting_mode_label(spec.setting, spec.mode)} {spec.split} "
            f"seed {spec.seed}{extra}")
