"""What a generation run is: its settings (:class:`GenerationSpec`) and what it asks, the run's
meetings with their transcripts and questions in the run's language and setting
(docs/protocol.md §2), checked before anything is asked. ``runs.py`` runs it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from sqlmodel import Session

from db import benchmark as bq
from db.models import Meeting, QuestionTranslation
from elitr_core.backends.base import Backend, DecodingConfig
from elitr_core.data.summaries import SUMMARY_REQUEST, SUMMARY_TYPE, ensure_summary_questions
from elitr_core.errors import UserError
from elitr_core.generation.retrieval import CONTEXT_POLICIES, DEFAULT_CHUNK_TOKENS, DEFAULT_TOP_K
from elitr_core.generation.run_config import RunIdentity
from elitr_core.passes.records import DEFAULT_SEED
from elitr_core.prompts.assembly import protocol_prompt_hash, reference_word_count
from elitr_core.vocab import (
    INTERLEAVE_KS,
    LANGUAGES,
    MODES,
    REFUSED_PAIRS,
    SETTINGS,
    SPLITS,
    TASKS,
)


@dataclass(frozen=True)
class Interleaving:
    """An interleaved run's settings: ``k`` meetings a conversation, the memory ``span`` in
    tokens (0: no filler), a switch of meeting every ``switch`` questions, whether each
    question names its meeting (``named``), and whether the model answers the fillers
    (``answered_filler``: each filler a turn of its own, ``generation/fillers.py``)."""

    k: int
    span: int = 0
    switch: int = 1
    named: bool = False
    answered_filler: bool = False

    def checked(self) -> Interleaving:
        """These settings, or a :class:`UserError` naming the bad one."""
        if self.k not in INTERLEAVE_KS:
            raise UserError(f"--interleave takes 2 or 3 meetings a conversation, got {self.k}")
        if self.span < 0 or self.switch < 1:
            raise UserError(f"--span must be >= 0 tokens and --switch-every >= 1 question "
                            f"(got {self.span}, {self.switch})")
        if self.answered_filler and not self.span:
            raise UserError("--answered-filler asks the fillers that set the span: give "
                            "--span TOKENS too")
        return self

    @property
    def mode(self) -> str:
        """The run's mode: ``int2`` or ``int3`` (its label ``Conv-int2``)."""
        return f"int{self.k}"

    def span_label(self) -> str:
        """``16k`` for 16000 tokens, ``16.384k`` for 16384, ``""`` without a span."""
        return f"{self.span / 1000:g}k" if self.span else ""

    def to_dict(self) -> dict[str, Any]:
        """What the run's identity records (``answered_filler`` only when set, so a run
        stored before the option existed keeps its identity)."""
        values = asdict(self)
        if not self.answered_filler:
            del values["answered_filler"]
        return values


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
    interleave: Interleaving | None = None

    @property
    def run_mode(self) -> str:
        """The mode in the run's key: ``mode``, or ``int2``/``int3`` when interleaved."""
        return self.interleave.mode if self.interleave else self.mode

    @property
    def run_variant(self) -> str:
        """The variant in the run's key: an interleaved run's span (``16k``) before
        ``variant``, so runs at two spans are two runs (and two rows of every table)."""
        span = self.interleave.span_label() if self.interleave else ""
        return " ".join(part for part in (span, self.variant) if part)

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
        refused = REFUSED_PAIRS.get((self.setting, self.mode))
        if refused is not None:
            raise UserError(f"{refused}: use --mode mt with --setting {self.setting}")
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
        if self.interleave is not None:
            self._check_interleaving(self.interleave)
        return replace(self, decoding=replace(d, seed=self.seed))

    def _check_interleaving(self, interleave: Interleaving) -> None:
        interleave.checked()
        if self.mode != "mt" or self.task != "qa" or self.context != "full":
            raise UserError("--interleave asks the questions of K meetings in one "
                            "conversation: use it with --mode mt, --task qa and --context full")
        if self.system_prompt:
            raise UserError("--system-prompt holds one transcript; an interleaved "
                            "conversation gives each transcript in its own user message: "
                            "leave --system-prompt out")

    def identity(self, backend: Backend) -> RunIdentity:
        """The settings that shape every answer, the backend's declared options among them;
        a resumed run must have the same."""
        return RunIdentity.model_validate({
            "backend_name": backend.name,
            "backend_options": backend.answer_options(),
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
            "interleave": None if self.interleave is None else {
                **self.interleave.to_dict(), "span_unit": backend.token_unit},
        })


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


def of_task(task: str) -> tuple[str | None, str | None]:
    """The question types a task keeps (only, except): the summary questions, or the
    benchmark's."""
    return (SUMMARY_TYPE, None) if task == "summary" else (None, SUMMARY_TYPE)


def _questions(session: Session, meeting: Meeting, spec: GenerationSpec) -> list[QuestionItem]:
    assert meeting.id is not None
    only, but = of_task(spec.task)
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
