"""SQLModel tables: the data model (ARCHITECTURE.md, The data model).

Unique keys make every import and score write an idempotent upsert. Columns that take part in a
unique key are never NULL (NULLs are distinct in SQL unique constraints, so a NULL seed or
annotator would let duplicates in): ``Run.seed`` uses :data:`NO_SEED` and
``Score.annotator_key`` is 0 for judge rows and aggregates.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, String, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

NO_SEED = -1
"""Seed stored when a run did not record one (the bundled ELITR-Bench files)."""


def utcnow() -> datetime:
    """Timezone-aware now in UTC."""
    return datetime.now(UTC)


class Meeting(SQLModel, table=True):
    """One meeting of the benchmark (``meeting_en_dev_001``) and its transcript when imported."""

    id: int | None = Field(default=None, primary_key=True)
    external_id: str = Field(unique=True, index=True, max_length=64)
    split: str = Field(max_length=16)
    transcript: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    transcript_source: str | None = Field(default=None, max_length=512)


class Question(SQLModel, table=True):
    """A benchmark question with its QA and Conv texts (the same question, two phrasings)."""

    __table_args__ = (UniqueConstraint("meeting_id", "number", name="uq_question_meeting_number"),)

    id: int | None = Field(default=None, primary_key=True)
    meeting_id: int = Field(foreign_key="meeting.id", index=True)
    number: int
    question_type: str = Field(max_length=16)
    answer_position: str = Field(max_length=4)
    qa_text: str = Field(sa_column=Column(Text, nullable=False))
    conv_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    reference: str = Field(sa_column=Column(Text, nullable=False))
    language: str = Field(default="en", max_length=8)


class QuestionTranslation(SQLModel, table=True):
    """The question in another language (Czech: English transcript, Czech question and answer)."""

    __table_args__ = (
        UniqueConstraint("question_id", "language", name="uq_translation_question_language"),
    )

    id: int | None = Field(default=None, primary_key=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    language: str = Field(max_length=8)
    qa_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    conv_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    reference: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class Run(SQLModel, table=True):
    """One generation run: model + setting + mode + split + seed (+ variant) and its config."""

    __table_args__ = (
        UniqueConstraint(
            "model", "setting", "mode", "split", "seed", "variant", "language", name="uq_run_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    model: str = Field(max_length=128, index=True)
    setting: str = Field(max_length=8)  # qa | conv
    mode: str = Field(max_length=8)  # st | mt
    split: str = Field(max_length=16)  # dev | test2
    seed: int = Field(default=NO_SEED)
    variant: str = Field(default="", max_length=128)
    language: str = Field(default="en", max_length=8)
    backend: str = Field(default="import", max_length=32)
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    source: str | None = Field(default=None, max_length=512)
    status: str = Field(default="done", max_length=16)  # pending | running | done | failed
    created_at: datetime = Field(default_factory=utcnow)


class Response(SQLModel, table=True):
    """A model's answer to one question within a run."""

    __table_args__ = (UniqueConstraint("run_id", "question_id", name="uq_response_run_question"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    question_id: int = Field(foreign_key="question.id", index=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class FillerAnswer(SQLModel, table=True):
    """A reply to an answered filler of an interleaved run, never scored (``db/fillers.py``)."""

    __table_args__ = (UniqueConstraint("run_id", "conversation", "turn", name="uq_filler_turn"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="run.id", index=True)
    conversation: int
    turn: int
    gap: int
    question: str = Field(sa_column=Column(Text, nullable=False))
    expected: str = Field(sa_column=Column(Text, nullable=False))
    text: str = Field(sa_column=Column(Text, nullable=False))
    correct: int
    total: int
    followed: bool
    meta: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class Evaluator(SQLModel, table=True):
    """Who or what scores: an LLM judge, a human pool or a metric."""

    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(unique=True, index=True, max_length=64)
    kind: str = Field(max_length=16)  # llm | human | metric
    #: who writes its scores (db/evaluators.SOURCES): no other source may (evaluator_for)
    # the server's default, not SQLAlchemy's: an insert that leaves it out stays valid on a
    # database from before revision 0010 (the migration tests fill one so)
    source: str = Field(default="", sa_column=Column(String(16), nullable=False,
                                                     server_default=""))
    scale_min: float = 1.0
    scale_max: float = 10.0
    description: str = Field(default="", max_length=512)
    config: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Annotator(SQLModel, table=True):
    """A human scorer in a pool (an evaluator of kind human); names are unique per pool."""

    __table_args__ = (UniqueConstraint("evaluator_id", "name", name="uq_annotator_pool_name"),)

    id: int | None = Field(default=None, primary_key=True)
    evaluator_id: int = Field(foreign_key="evaluator.id", index=True)
    name: str = Field(max_length=128)
    external_id: str | None = Field(default=None, max_length=128, index=True)
    token_hash: str | None = Field(default=None, max_length=128, unique=True)
    created_at: datetime = Field(default_factory=utcnow)
    # when they closed the annotation page's keyboard walkthrough: it opens once per annotator
    tour_seen_at: datetime | None = None


class Score(SQLModel, table=True):
    """A score of one response by one evaluator (one annotator, one judge sample).

    ``value`` is NULL unless ``status`` is ``ok``, ``excluded`` or ``lapsed`` (an annotator
    whose claim on a task lapsed): an unparsable judge output is stored with status
    ``unparsed`` and its reason, never as -1.
    """

    __table_args__ = (
        UniqueConstraint(
            "response_id", "evaluator_id", "annotator_key", "sample", name="uq_score_key"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    # no index of its own: uq_score_key starts with it (migration 0007)
    response_id: int = Field(foreign_key="response.id")
    evaluator_id: int = Field(foreign_key="evaluator.id", index=True)
    annotator_id: int | None = Field(default=None, foreign_key="annotator.id", index=True)
    annotator_key: int = Field(default=0)  # annotator_id or 0: keeps the unique key NULL-free
    sample: int = Field(default=0)
    value: float | None = None
    status: str = Field(default="ok", max_length=16)  # ok | unparsed | excluded | lapsed
    reason: str | None = Field(default=None, max_length=512)
    raw: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    seconds_spent: float | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class Study(SQLModel, table=True):
    """A human scoring campaign."""

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(unique=True, max_length=128)
    evaluator_id: int = Field(foreign_key="evaluator.id")
    per_item: int = 1
    assignment: str = Field(default="meeting", max_length=16)  # meeting | random
    batch_size: int | None = None
    order_seed: int = 0
    prolific_code: str | None = Field(default=None, max_length=64)
    max_concurrent: int | None = None
    status: str = Field(default="open", max_length=16)  # open | closed
    filters: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    attention_rate: float = 0.0  # share of attention-check items mixed into each queue
    prolific_study_id: str | None = Field(default=None, max_length=64)  # STUDY_ID it must match
    # what the annotator's guidelines panel shows: {"examples": [{"question", "reference",
    # "response", "score", "why"}...]}; None means the paper's defaults
    guidelines: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    # a claim is a lease: a participant idle this long loses their task to the next arrival
    # (None: claims never expire, e.g. a gold study's experts)
    lease_minutes: int | None = None
    # at most join_limit new participants per client address within join_window_minutes
    # (None: no limit)
    join_limit: int | None = None
    join_window_minutes: int = 60


class StudySeat(SQLModel, table=True):
    """One place for an annotator in a task unit (``per_item`` seats per unit).

    Admission takes a free seat with ``SELECT ... FOR UPDATE SKIP LOCKED`` (PostgreSQL) and
    points it at the new participation: arrivals at the same study take different seats in
    parallel instead of queueing on the study row. A seat is free when it holds nobody, or its
    participation was excluded or lapsed, or (with a lease) has been idle past the lease.
    """

    __table_args__ = (UniqueConstraint("study_id", "unit", "seat", name="uq_study_seat"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    unit: str = Field(max_length=64)
    seat: int
    participation_id: int | None = Field(default=None, foreign_key="participation.id")


class StudyJoin(SQLModel, table=True):
    """A participant admitted to a study, with the client address they came from: the
    per-address join limit counts these rows (kept when a lapsed participant's rows go)."""

    __table_args__ = (Index("ix_studyjoin_client", "study_id", "client", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")
    client: str = Field(max_length=64)
    at: datetime = Field(default_factory=utcnow)


class PersonalLink(SQLModel, table=True):
    """The one study an annotator's personal link opens, for a link made for a study
    (``annotator add --study``, the Studies page); an annotator without one has a pool's
    link, which opens the studies of their pool."""

    id: int | None = Field(default=None, primary_key=True)
    annotator_id: int = Field(foreign_key="annotator.id", unique=True)
    study_id: int = Field(foreign_key="study.id")


class StudyItem(SQLModel, table=True):
    """A response a study has scored, in its task unit (a meeting, or a random batch).

    Every assignment of the item (one per annotator) shares its selection ``probability``, so
    it is stored once here; the inverse-probability-weighted PPI reads it from here.
    """

    __table_args__ = (UniqueConstraint("study_id", "response_id", name="uq_study_item"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    response_id: int = Field(foreign_key="response.id")
    unit: str = Field(max_length=64)
    # the probability with which the item was drawn for human scoring (a study created with a
    # --sample budget); None when the study scores every response of its filters
    probability: float | None = None


class Participation(SQLModel, table=True):
    """One annotator taking one task unit of a study (their queue order comes from its seed).

    ``status`` is ``active``, ``done`` or ``excluded``; an excluded participation frees its
    unit for a replacement annotator while its scores are kept (status ``excluded``).
    """

    __table_args__ = (
        UniqueConstraint("study_id", "annotator_id", "unit", name="uq_participation"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    unit: str = Field(max_length=64)
    order_seed: int
    status: str = Field(default="active", max_length=16)  # active|done|excluded|lapsed
    reason: str | None = Field(default=None, max_length=512)
    prolific_session_id: str | None = Field(default=None, max_length=64)
    prolific_study_id: str | None = Field(default=None, max_length=64)
    started_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None


class Assignment(SQLModel, table=True):
    """One item of an annotator's queue in a study, at a position of that queue.

    Items of kind ``item`` are scored into :class:`Score`; attention checks (``attention-high``:
    the reference answer shown as the response, ``attention-low``: an unrelated answer, shown
    from ``check_text``) keep their answer in ``check_value`` so they never pollute the scores.
    """

    __table_args__ = (
        UniqueConstraint(
            "study_id", "annotator_id", "response_id", "kind", name="uq_assignment_item"
        ),
        UniqueConstraint("study_id", "annotator_id", "position", name="uq_assignment_position"),
    )

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id", index=True)
    annotator_id: int = Field(foreign_key="annotator.id", index=True)
    response_id: int = Field(foreign_key="response.id")
    position: int
    kind: str = Field(default="item", max_length=16)  # item | attention-high | attention-low
    participation_id: int | None = Field(default=None, foreign_key="participation.id", index=True)
    check_text: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    check_value: float | None = None
    unclear: bool = False
    answered_at: datetime | None = None


class PairwiseJudgment(SQLModel, table=True):
    """One pairwise judgment: two responses to the same question, shown in one order.

    The pair is stored once whatever the scheduling: ``response_a_id < response_b_id``;
    ``order`` is ``ab`` when response a was shown first. ``verdict`` (battle: ``a``, ``b`` or
    ``tie``) and the CREAM scores are from response a's side. ``raw`` holds the judge's full
    output (CREAM: the alignment step), ``raw_facts`` CREAM's key-facts step; ``key_facts`` and
    ``support`` (per answer, the sentence numbers stating each key fact) what was read from
    them. An unreadable output is status ``unparsed`` with its reason and no verdict or score.
    """

    __table_args__ = (
        UniqueConstraint("evaluator_id", "response_a_id", "response_b_id", "order", "sample",
                         name="uq_pairwise_key"),
    )

    id: int | None = Field(default=None, primary_key=True)
    evaluator_id: int = Field(foreign_key="evaluator.id", index=True)
    response_a_id: int = Field(foreign_key="response.id", index=True)
    response_b_id: int = Field(foreign_key="response.id", index=True)
    order: str = Field(max_length=2)  # ab | ba
    sample: int = Field(default=0)
    status: str = Field(default="ok", max_length=16)  # ok | unparsed
    reason: str | None = Field(default=None, max_length=512)
    verdict: str | None = Field(default=None, max_length=8)  # a | b | tie
    completeness_a: float | None = None
    completeness_b: float | None = None
    conciseness_a: float | None = None
    conciseness_b: float | None = None
    # none_as_null: an absent value is SQL NULL, not the JSON text 'null'
    key_facts: list[str] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True))
    support: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON(none_as_null=True), nullable=True))
    raw: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    raw_facts: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class LoginAttempt(SQLModel, table=True):
    """One researcher login attempt (password form): who, when, whether it succeeded.

    The attempt limit counts these rows, so a reload or a server restart resets nothing.
    """

    id: int | None = Field(default=None, primary_key=True)
    client: str = Field(max_length=64, index=True)  # the client's address as the server saw it
    ok: bool = False
    at: datetime = Field(default_factory=utcnow, index=True)


class ResearcherSession(SQLModel, table=True):
    """A researcher's login, held by the browser as a signed, expiring cookie.

    Only SHA-256 digests of the session token and of the one-time ticket that sets the cookie
    are stored; logging out sets ``revoked_at``, after which the cookie opens nothing.
    """

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True)
    ticket_hash: str | None = Field(default=None, max_length=64, unique=True)
    ticket_expires_at: datetime | None = None
    client: str = Field(default="", max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    revoked_at: datetime | None = None


class ServerSecret(SQLModel, table=True):
    """A secret the server generated once (the session-cookie signing key), kept across
    restarts; ``ELITR_SESSION_SECRET`` in the environment takes precedence."""

    name: str = Field(primary_key=True, max_length=64)
    value: str = Field(max_length=128)
