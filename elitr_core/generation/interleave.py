"""Interleaved conversations at a set memory span: the LTM benchmark's method on ELITR-Bench.

The LTM benchmark (Castillo-Bolado et al., 2024) asks several tasks inside one long
conversation, their messages interleaved and spread apart by distraction so that the *memory
span* (tokens between the information and the question that needs it) is set. Here a task is
a meeting: one conversation holds the transcripts of K meetings (grouped at random from the
run's seed, the grouping stored with the run), then asks their questions interleaved, switching
meeting every ``switch`` questions. The span is set by distraction placed after each
transcript: the other meetings' transcripts and questions, and filler question/answer pairs
(sums of numbers, made from the seed) that sit in the conversation as fixed messages and are
never asked, stored as answers or scored.

Layout of one conversation (``T``: a transcript message and its fixed acknowledgement,
``F``: filler pairs, ``q``: the interleaved questions, each answered by the model)::

    T_1 F_1 T_2 F_2 ... T_K F_K  q q q ... q

Every question of a meeting must sit near ``span`` tokens after its transcript, and the
meetings' questions are interleaved, so all transcripts come first; each ``F_k`` is sized so
that the middle of meeting k's questions sits ``span`` tokens after its transcript. An answer's
span is the tokens of the messages' contents between its transcript's message and its question
(the chat template's few tokens per message not counted); it is measured when the answer
arrives and stored with it (``span``), as the planned answers' lengths are estimates. Two
limits, both recorded per answer rather than hidden: a meeting's questions drift apart by the
question section between them (a question asked later is further from its transcript), and a
meeting whose later transcripts alone are longer than ``span`` gets a longer span.

With ``--answered-filler`` the fillers are questions the model answers (``fillers.py``), a turn
each, sized the same way with each reply planned at the right reply's tokens; the
conversations as asked are built in ``interleaved.py``.

References
----------
Castillo-Bolado, D., Davidson, J., Gray, F., Rosa, M. (2024). Beyond Prompts: Dynamic
Conversational Benchmarking of Large Language Models. NeurIPS 2024 Datasets and Benchmarks.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from elitr_core.backends.base import Backend, Message
from elitr_core.errors import UserError
from elitr_core.generation import fillers
from elitr_core.generation.spec import Interleaving, MeetingWork
from elitr_core.prompts.assembly import answer_prompt, format_question

#: Tokens an answer is planned at (its real length is measured when it arrives; the
#: benchmark's reference answers are a sentence or two).
ANSWER_ESTIMATE = 32
#: The fixed reply after each transcript message (chat templates alternate user/assistant).
ACKNOWLEDGEMENT = "I have read the meeting transcript."
#: Sums per filler pair: a pair is a few hundred tokens, the last one cut to fit.
SUMS_PER_FILLER = 24
#: The longest memory span asked of a backend that does not know its model's context (the
#: fake and openai backends); a backend that knows it (hf) allows its context less the answer.
MAX_SPAN = 131_072
#: Letters that name the meetings of a conversation when questions name their meeting.
MEETING_NAMES = "ABC"

Counter = Callable[[str], int]


def group_meetings(meetings: Sequence[str], k: int, seed: int) -> tuple[list[list[str]],
                                                                        list[str]]:
    """The meetings shuffled from ``seed`` and cut into groups of ``k``; the few left over
    (fewer than ``k``) are returned apart, not asked."""
    order = sorted(meetings)
    random.Random(f"interleave:{seed}").shuffle(order)
    whole = len(order) - len(order) % k
    return [order[i : i + k] for i in range(0, whole, k)], order[whole:]


def question_order(counts: dict[str, int], meetings: Sequence[str],
                   switch: int) -> list[tuple[str, int]]:
    """``(meeting, index)`` in asking order: ``switch`` questions of a meeting, then the next
    meeting's, round the group, a meeting with no question left skipped."""
    taken = dict.fromkeys(meetings, 0)
    order: list[tuple[str, int]] = []
    while any(taken[m] < counts[m] for m in meetings):
        for meeting in meetings:
            stop = min(taken[meeting] + switch, counts[meeting])
            order += [(meeting, i) for i in range(taken[meeting], stop)]
            taken[meeting] = stop
    return order


def _filler_rng(seed: int, group: int, gap: int) -> random.Random:
    return random.Random(f"filler:{seed}:{group}:{gap}")


def _filler_pair(rng: random.Random, count: int, answered: bool = False) -> list[Message]:
    """The next filler question/answer pair of ``count`` sums drawn from ``rng`` (answered:
    a question the model answers, ``fillers.py``, with its right reply)."""
    if answered:
        terms = fillers.draw_terms(rng, count)
        return [{"role": "user", "content": fillers.question(terms)},
                {"role": "assistant", "content": ", ".join(str(a + b) for a, b in terms)}]
    terms = [(100 + int(rng.random() * 900), 100 + int(rng.random() * 900))
             for _ in range(count)]
    return [{"role": "user", "content": "What are these sums? "
             + ", ".join(f"{a} + {b}" for a, b in terms)},
            {"role": "assistant", "content": ", ".join(str(a + b) for a, b in terms) + "."}]


def check_span(settings: Interleaving, backend: Backend, max_new_tokens: int) -> None:
    """Refuse a memory span the model cannot hold, before the run is created or planned:
    beyond its context less the answer's ``max_new_tokens`` (a backend that knows its
    context), else beyond :data:`MAX_SPAN`."""
    context = backend.context_tokens()
    if context is not None and settings.span > context - max_new_tokens:
        raise UserError(f"--span {settings.span:,} does not fit the model's "
                        f"{context:,}-token context with --max-new-tokens {max_new_tokens:,}: "
                        f"give at most {max(context - max_new_tokens, 0):,}")
    if context is None and settings.span > MAX_SPAN:
        raise UserError(f"--span {settings.span:,} is more than the {MAX_SPAN:,} "
                        f"{backend.token_unit} planned for the {backend.name} backend, which "
                        "does not know its model's context: give at most "
                        f"{MAX_SPAN:,}")


def filler_pairs(seed: int, group: int, gap: int, sums: Sequence[int], *,
                 answered: bool = False) -> list[Message]:
    """The filler question/answer pairs of one gap, ``sums[i]`` sums in pair ``i``: the same
    messages for the same arguments (``random.random`` is stable across Python versions);
    ``answered``: the questions the model answers, each with its right reply."""
    rng = _filler_rng(seed, group, gap)
    return [message for count in sums for message in _filler_pair(rng, count, answered)]


def size_fillers(seed: int, group: int, gap: int, tokens: int, count: Counter, *,
                 answered: bool = False, reply_cap: int | None = None) -> list[int]:
    """Sums per filler pair so the gap's messages reach ``tokens`` (overshooting by at most
    one sum): whole pairs while a whole one fits, then one pair grown sum by sum.

    Linear in the pairs: each whole pair is drawn and counted once, from the random state the
    pairs before it left (as :func:`filler_pairs` draws them), and the last pair is redrawn
    from the state before it (at most :data:`SUMS_PER_FILLER` times). ``answered``: blocks of
    :data:`~elitr_core.generation.fillers.SUMS_PER_ANSWERED` sums the model answers, each
    reply planned at the right reply's tokens, at most ``reply_cap`` (``--max-new-tokens``).
    """
    rng = _filler_rng(seed, group, gap)
    size = fillers.SUMS_PER_ANSWERED if answered else SUMS_PER_FILLER
    sums: list[int] = []
    total = 0  # the tokens of the whole pairs so far (each pair counted once)
    while True:
        before = rng.getstate()
        whole = _pair_tokens(_filler_pair(rng, size, answered), count, reply_cap)
        if total + whole > tokens:
            break
        sums.append(size)
        total += whole
    last = grown = 0
    while total + last < tokens and grown < size:
        grown += 1
        rng.setstate(before)
        last = _pair_tokens(_filler_pair(rng, grown, answered), count, reply_cap)
    return [*sums, grown] if grown else sums


def tokens_of(messages: Sequence[Message], count: Counter) -> int:
    """The tokens of the messages' contents."""
    return sum(count(m["content"]) for m in messages)


def _pair_tokens(pair: Sequence[Message], count: Counter, reply_cap: int | None) -> int:
    """A filler pair's tokens, its reply counted at most ``reply_cap`` (an answered filler's
    reply is cut there by ``--max-new-tokens``)."""
    reply = count(pair[1]["content"])
    return count(pair[0]["content"]) + (reply if reply_cap is None else min(reply, reply_cap))


def transcript_messages(transcript: str, letter: str | None) -> list[Message]:
    """A transcript as said in the conversation: the answer prompt (named ``Meeting A`` when
    questions name their meeting) and the fixed acknowledgement."""
    prompt = answer_prompt(transcript)
    if letter is not None:
        prompt = f"Meeting {letter}.\n\n{prompt}"
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": ACKNOWLEDGEMENT}]


def question_text(question: str, letter: str | None, *, qa_markers: bool,
                  length_words: int | None) -> str:
    """A question as asked: formatted as in Conv-mt, prefixed ``About meeting A:`` when named."""
    text = format_question(question, qa_markers=qa_markers, length_words=length_words)
    return f"About meeting {letter}: {text}" if letter is not None else text


def gap_tokens(transcripts: Sequence[int], ack: int, centres: Sequence[float],
               span: int) -> list[int]:
    """Filler tokens after each transcript so that the middle of meeting k's questions
    (``centres[k]`` tokens into the question section) sits ``span`` tokens after the end of
    its transcript message (``transcripts[k]``: that message's tokens; ``ack``: its reply's).

    Solved from the last meeting back: what already lies between a transcript and the section
    (the later transcripts and fillers) counts, and a gap never goes below 0. An earlier
    meeting whose later transcripts alone outgrow its span comes out ``excess`` long; the last
    gap (between every transcript and the section) is then cut by ``excess / 2``, so the
    meetings straddle the span instead of one meeting missing it by all of it.
    """
    if not span:
        return [0] * len(centres)
    gaps, excess, after = [0] * len(centres), 0.0, 0
    for k in range(len(centres) - 1, -1, -1):
        wanted = span - centres[k] - after - ack
        gaps[k] = max(0, round(wanted))
        excess = max(excess, -wanted)
        after += ack + gaps[k] + transcripts[k]
    gaps[-1] = max(0, gaps[-1] - round(excess / 2))
    return gaps


@dataclass(frozen=True)
class GroupPlan:
    """One conversation: its meetings in transcript order, its questions in asking order
    (``(meeting, question number)``) and the sums of each filler pair after each transcript.
    Stored with the run, so a resumed run asks the same conversation."""

    meetings: tuple[str, ...]
    order: tuple[tuple[str, int], ...]
    fillers: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict[str, Any]:
        """The JSON stored in the run's config."""
        return {"meetings": list(self.meetings), "order": [list(o) for o in self.order],
                "fillers": [list(f) for f in self.fillers]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupPlan:
        """The plan stored by :meth:`to_dict`."""
        return cls(tuple(data["meetings"]), tuple((str(m), int(n)) for m, n in data["order"]),
                   tuple(tuple(int(s) for s in f) for f in data["fillers"]))


def plan_group(works: Sequence[MeetingWork], settings: Interleaving, seed: int, group: int,
               count: Counter, *, answer_tokens: int = ANSWER_ESTIMATE,
               qa_markers: bool = False, reply_cap: int | None = None) -> GroupPlan:
    """Plan one conversation of ``works`` (in the seeded group order, which the questions
    follow): transcripts longest first, questions interleaved every ``settings.switch``, and
    fillers sized (:func:`gap_tokens`) for answers of ``answer_tokens`` tokens (answered
    fillers' replies at their right reply's tokens, at most ``reply_cap``)."""
    order = question_order({w.meeting: len(w.questions) for w in works},
                           [w.meeting for w in works], settings.switch)
    by_meeting = {w.meeting: w for w in works}
    ordered = sorted(works, key=lambda w: -count(w.transcript))
    letters = letters_of([w.meeting for w in ordered], settings.named)
    offsets: dict[str, list[int]] = {}
    offset = 0
    for meeting, index in order:
        offsets.setdefault(meeting, []).append(offset)
        q = by_meeting[meeting].questions[index]
        offset += count(question_text(q.text, letters[meeting], qa_markers=qa_markers,
                                      length_words=q.length_words)) + answer_tokens
    centres = [(min(offsets[w.meeting]) + max(offsets[w.meeting])) / 2 for w in ordered]
    transcripts = [count(transcript_messages(w.transcript, letters[w.meeting])[0]["content"])
                   for w in ordered]
    gaps = gap_tokens(transcripts, count(ACKNOWLEDGEMENT), centres, settings.span)
    sized = [size_fillers(seed, group, k, tokens, count, answered=settings.answered_filler,
                          reply_cap=reply_cap) if tokens else []
             for k, tokens in enumerate(gaps)]
    numbers = tuple((m, by_meeting[m].questions[i].number) for m, i in order)
    return GroupPlan(tuple(w.meeting for w in ordered), numbers,
                     tuple(tuple(f) for f in sized))


def letters_of(meetings: Sequence[str], named: bool) -> dict[str, str | None]:
    """Each meeting's letter (A, B, C) when questions name their meeting, else None."""
    return {m: MEETING_NAMES[i] if named else None for i, m in enumerate(meetings)}


def plan_run(work: Sequence[MeetingWork], settings: Interleaving, seed: int, count: Counter,
             *, max_new_tokens: int, qa_markers: bool = False) -> dict[str, Any]:
    """The run's conversations (stored in its config as ``interleave_plan``): its meetings
    grouped from ``seed``, each group planned for answers of :data:`ANSWER_ESTIMATE` tokens
    (or ``max_new_tokens`` when fewer; an answered filler's reply at its right reply's
    tokens, at most ``max_new_tokens``), and the meetings left over."""
    by_meeting = {w.meeting: w for w in work}
    groups, left_out = group_meetings(list(by_meeting), settings.k, seed)
    estimate = min(ANSWER_ESTIMATE, max_new_tokens)
    cap = max_new_tokens if settings.answered_filler else None
    plans = [plan_group([by_meeting[m] for m in group], settings, seed, index, count,
                        answer_tokens=estimate, qa_markers=qa_markers, reply_cap=cap).to_dict()
             for index, group in enumerate(groups)]
    extra = {"reply_cap": max_new_tokens} if settings.answered_filler else {}
    return {"groups": plans, "left_out": left_out, "answer_estimate": estimate, **extra}
