"""Answered fillers of an interleaved run (``generate --interleave K --answered-filler``): the
LTM benchmark's distraction, which the agent answers, a reply a filler message (GoodAI's
benchmark sends TriviaQA blocks).

A filler here is a block of sums of two-digit numbers drawn from the run's seed ("What are
these sums? Reply with the sums only, separated by commas: 34 + 58, 71 + 12"): its answers are
known, so each reply is checked (:func:`check_reply`) and a researcher sees whether the model
followed the conversation's distraction. Sums of two two-digit numbers stay under 200, so no
reply needs a thousands separator, which a comma-separated list could not tell apart. The
replies are stored apart from the benchmark's answers (``db.models.FillerAnswer``): never
scored, never exported as answers, and read back only to resume a conversation and to report
(``export fillers``).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

#: Sums per answered filler: a block of about 250 tokens with its reply (SmolLM2's
#: tokenizer), so that a reply a token or two off its planned length moves a span by well
#: under 1% of a turn, and a 16,000-token span takes about 60 turns, not 200.
SUMS_PER_ANSWERED = 24
QUESTION_START = "What are these sums? Reply with the sums only, separated by commas: "
#: ``a + b`` or ``a + b =`` echoed in a reply: its terms are not answers.
_ECHOED = re.compile(r"\d+\s*\+\s*\d+\s*=?")


@dataclass(frozen=True)
class FillerTurn:
    """One answered filler of a conversation: after transcript ``gap``, its ``index``-th
    block, the question asked and the sums expected in order."""

    gap: int
    index: int
    question: str
    expected: tuple[int, ...]

    @property
    def expected_text(self) -> str:
        """The right reply, as the plan counts it (``"92, 83"``)."""
        return ", ".join(str(s) for s in self.expected)


def draw_terms(rng: random.Random, count: int) -> list[tuple[int, int]]:
    """``count`` pairs of two-digit numbers drawn from ``rng``."""
    return [(10 + int(rng.random() * 90), 10 + int(rng.random() * 90)) for _ in range(count)]


def question(terms: list[tuple[int, int]]) -> str:
    """The filler question asking the sums of ``terms``."""
    return QUESTION_START + ", ".join(f"{a} + {b}" for a, b in terms) + "."


def sums_of(text: str) -> tuple[int, ...]:
    """The sums a filler question asks, read back from its text."""
    pairs = re.findall(r"(\d+) \+ (\d+)", text[len(QUESTION_START):])
    return tuple(int(a) + int(b) for a, b in pairs)


def given_sums(reply: str) -> list[int]:
    """The numbers a reply gives, in order (an echoed ``a + b =`` left out)."""
    return [int(n) for n in re.findall(r"\d+", _ECHOED.sub(" ", reply))]


def check_reply(expected: tuple[int, ...], reply: str) -> dict[str, Any]:
    """How a reply answers a filler: ``correct`` sums in their place (of ``total``), and
    ``followed`` when it gives exactly the expected sums, in order."""
    given = given_sums(reply)
    correct = sum(g == e for g, e in zip(given, expected, strict=False))
    return {"correct": correct, "total": len(expected),
            "followed": correct == len(expected) and len(given) == len(expected)}
