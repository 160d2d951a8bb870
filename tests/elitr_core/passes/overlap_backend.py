"""A whole backend with one option in under 50 lines: what issues 21 and 30 ask a new
backend to cost.

It answers each question with the transcript line that shares the most words with it (a
retrieval baseline), cut to ``max_words`` if given. The pass-lifecycle tests register it with
one line in the registry's table and run it through the same generation and judge passes as
the real backends; its option shows in the command line's help and the Runs page's form, and
is part of the identity of every run made with it (a resume with another value is refused).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from elitr_core.backends.base import (
    Backend,
    BackendOption,
    Completion,
    Conversation,
    DecodingConfig,
    Message,
    ResultCallback,
    turn_by_turn,
)


class OverlapBackend(Backend):
    """The line of the conversation sharing most words with the last question."""

    name = "overlap"
    summary = "the line sharing most words with the question"
    options = (BackendOption("max_words", int, metavar="N", label="Max words",
                             shapes_answers=True,  # so every run's identity holds it
                             help="answer with at most N words (default: the whole line)"),)

    def __init__(self, *, max_words: int | None = None) -> None:
        self.max_words = max_words

    def generate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        turn_by_turn(conversations, on_result, lambda messages, _: self.answer(messages))

    def answer(self, messages: list[Message]) -> Completion:
        """The best-overlapping earlier line (the first one on a tie)."""
        *lines, question = "\n".join(m["content"] for m in messages).splitlines()
        words = set(re.findall(r"\w+", question.lower()))
        best = max(lines, key=lambda line: len(words & set(re.findall(r"\w+", line.lower()))))
        return Completion(text=" ".join(best.split()[:self.max_words]), finish_reason="stop")
