"""An interleaved run's conversations as asked (``generation/interleave.py`` plans them):
built from a stored plan, each turn's span made of what was said before it, and asked from
the first unanswered turn.

With answered fillers (``--answered-filler``, ``generation/fillers.py``) each filler is a turn
the model answers, and a later transcript with its acknowledgement is said before the turn
that follows its place (``Conversation.inserted``); an answer's span then counts the replies
said after its transcript, as it counts the benchmark's answers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from elitr_core.backends.base import Backend, Completion, Conversation, DecodingConfig, Message
from elitr_core.generation import fillers
from elitr_core.generation.interleave import (
    ANSWER_ESTIMATE,
    Counter,
    GroupPlan,
    filler_pairs,
    letters_of,
    question_text,
    tokens_of,
    transcript_messages,
)
from elitr_core.generation.spec import Interleaving, MeetingWork, QuestionItem
from elitr_core.passes.lifecycle import ResumablePass


@dataclass
class Interleaved:
    """One interleaved conversation as asked: the fixed ``history`` (the first transcript, its
    acknowledgement, and without answered fillers every transcript and filler), the turns in
    asking order (``kinds[t]``: the question, or the answered filler, turn ``t`` asks;
    ``inserted``: the fixed messages said before a turn, a later transcript among answered
    fillers), the benchmark's ``questions`` in asking order, and what each question's span is
    made of (see :meth:`span`; ``planned_answers``: the tokens each turn's answer is planned
    at)."""

    key: str
    history: list[Message]
    turns: list[str]
    kinds: list[QuestionItem | fillers.FillerTurn]
    inserted: dict[int, list[Message]]
    leads: list[int]  # per turn: tokens said since its transcript, answers not counted
    after: list[int]  # per turn: the first turn after its transcript (answers counted from it)
    planned_answers: list[int]
    meetings: list[str | None]  # per turn: the meeting its question is about (None: filler)

    @property
    def questions(self) -> list[QuestionItem]:
        """The benchmark's questions, in asking order."""
        return [kind for kind in self.kinds if isinstance(kind, QuestionItem)]

    def span(self, turn: int, answer_tokens: Sequence[int]) -> int:
        """Tokens between the end of ``turn``'s transcript message and its question, given
        the tokens of the answers to the turns before it."""
        return self.leads[turn] + sum(answer_tokens[self.after[turn]:turn])

    def planned_span(self, turn: int) -> int:
        """The span ``turn`` is planned at: every answer before it of its planned tokens."""
        return self.span(turn, self.planned_answers)


class _Said:
    """A conversation as it is built: fixed messages go to the history until the first turn,
    then before the next turn (``inserted``); ``fixed``: the tokens said, answers not
    counted."""

    def __init__(self, count: Counter) -> None:
        self.count, self.fixed = count, 0
        self.history: list[Message] = []
        self.pending: list[Message] = []
        self.inserted: dict[int, list[Message]] = {}
        self.turns: list[str] = []
        self.kinds: list[QuestionItem | fillers.FillerTurn] = []
        self.before: list[int] = []  # fixed tokens said before each turn's question
        self.planned: list[int] = []
        self.meetings: list[str | None] = []  # each turn's meeting (None: a filler)

    def say(self, messages: Sequence[Message]) -> None:
        (self.pending if self.turns else self.history).extend(messages)
        self.fixed += tokens_of(messages, self.count)

    def ask(self, text: str, kind: QuestionItem | fillers.FillerTurn, planned: int,
            meeting: str | None = None) -> None:
        if self.pending:
            self.inserted[len(self.turns)], self.pending = self.pending, []
        self.before.append(self.fixed)
        self.turns.append(text)
        self.kinds.append(kind)
        self.planned.append(planned)
        self.meetings.append(meeting)
        self.fixed += self.count(text)


def build_conversation(plan: GroupPlan, works: dict[str, MeetingWork], settings: Interleaving,
                       seed: int, group: int, count: Counter, *, qa_markers: bool = False,
                       answer_estimate: int = ANSWER_ESTIMATE,
                       reply_cap: int | None = None) -> Interleaved:
    """The conversation ``plan`` describes, with what each turn's span is made of. With
    answered fillers each filler is a turn of its own and a later transcript (with its
    acknowledgement) is said before the turn after it."""
    letters = letters_of(plan.meetings, settings.named)
    said = _Said(count)
    ends: dict[str, tuple[int, int]] = {}  # transcript message's end: tokens said, turns asked
    for k, meeting in enumerate(plan.meetings):
        transcript = transcript_messages(works[meeting].transcript, letters[meeting])
        said.say(transcript[:1])
        ends[meeting] = (said.fixed, len(said.turns))
        said.say(transcript[1:])
        pairs = filler_pairs(seed, group, k, plan.fillers[k],
                             answered=settings.answered_filler)
        if not settings.answered_filler:
            said.say(pairs)
            continue
        for index in range(0, len(pairs), 2):
            text, reply = pairs[index]["content"], pairs[index + 1]["content"]
            planned = count(reply) if reply_cap is None else min(count(reply), reply_cap)
            said.ask(text, fillers.FillerTurn(k, index // 2, text, fillers.sums_of(text)),
                     planned)
    for meeting, number in plan.order:
        q = next(q for q in works[meeting].questions if q.number == number)
        said.ask(question_text(q.text, letters[meeting], qa_markers=qa_markers,
                               length_words=q.length_words), q, answer_estimate, meeting)
    meetings = said.meetings
    leads = [said.before[t] - ends[m][0] if m else 0 for t, m in enumerate(meetings)]
    after = [ends[m][1] if m else t for t, m in enumerate(meetings)]
    return Interleaved("+".join(plan.meetings), said.history, said.turns, said.kinds,
                       said.inserted, leads, after, said.planned, meetings)


def conversations(plan: dict[str, Any], work: Sequence[MeetingWork], settings: Interleaving,
                  seed: int, count: Counter, *, qa_markers: bool = False) -> list[Interleaved]:
    """The conversations of a stored plan, built from the run's meetings."""
    by_meeting = {w.meeting: w for w in work}
    return [build_conversation(GroupPlan.from_dict(group), by_meeting, settings, seed, index,
                               count, qa_markers=qa_markers,
                               answer_estimate=int(plan.get("answer_estimate",
                                                            ANSWER_ESTIMATE)),
                               reply_cap=plan.get("reply_cap"))
            for index, group in enumerate(plan["groups"])]


@dataclass(frozen=True)
class InterleavedTurns:
    """An interleaved conversation as asked (its first turns may be stored answers), the
    ``group``-th of its run: an answer's ``span`` is measured as it arrives, from the tokens
    of the answers before it (``answer_tokens``, counted by ``count``; an answered filler's
    reply among them), and stored with ``span_target`` and the plan's ``span_planned``."""

    plan: Interleaved
    conversation: Conversation
    answer_tokens: list[int]
    count: Counter
    span_target: int
    group: int = 0

    def answered(self, turn: int, completion: Completion
                 ) -> tuple[QuestionItem | fillers.FillerTurn, dict[str, Any]]:
        """What ``turn`` asked (a question, or an answered filler) and its meta; the answer
        joins the span's count."""
        span = self.plan.span(turn, self.answer_tokens)
        self.answer_tokens.append(self.count(completion.text))
        kind = self.plan.kinds[turn]
        if isinstance(kind, fillers.FillerTurn):
            return kind, {"turn": turn}
        return kind, {"turn": turn, "span": span, "span_target": self.span_target,
                      "span_planned": self.plan.planned_span(turn)}


def ask_interleaved(settings: Interleaving, decoding: DecodingConfig, lifecycle: ResumablePass,
                    backend: Backend, asked: Sequence[Interleaved], done: dict[int, str],
                    store: Callable[[InterleavedTurns, int, Completion], None], *,
                    done_fillers: dict[tuple[int, int], str] | None = None) -> None:
    """Ask every conversation from its first unanswered turn (the stored answers join its
    history, as in Conv-mt; ``done_fillers``: the stored replies of answered fillers by
    conversation and turn); ``store(item, turn, completion)`` each answer, which
    :meth:`InterleavedTurns.answered` gives its turn and its measured ``span`` (and
    ``span_target``). Fixed fillers (the history) are never asked or stored."""
    todo = []
    replies = done_fillers or {}
    for group, conversation in enumerate(asked):
        previous: list[str] = []
        for turn, kind in enumerate(conversation.kinds):  # resumes after the stored prefix
            answer = (replies.get((group, turn)) if isinstance(kind, fillers.FillerTurn)
                      else done.get(kind.question_id))
            if answer is None:
                break
            previous.append(answer)
        if len(previous) < len(conversation.turns):
            todo.append(InterleavedTurns(
                conversation, Conversation(conversation.history, conversation.turns, previous,
                                           cache_key=conversation.key,
                                           inserted=conversation.inserted),
                [backend.count_tokens(a) for a in previous], backend.count_tokens,
                settings.span, group))

    lifecycle.ask(backend, todo, lambda item: item.conversation, lambda _: decoding, store)
