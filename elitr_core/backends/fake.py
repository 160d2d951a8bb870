"""A deterministic fake backend for demos and tests; never the default for a real run.

Its answers are derived from a hash of the last user message (plus the seed when sampling),
so the same input always gives the same output and no model or server is needed:

- an answer prompt gets ``"Answer <tag>: "`` followed by a few words echoed from the question;
- a 10-point judge prompt (one asking for a score in ``\\boxed{}``) gets a short feedback and
  ``\\boxed{N}`` with N in 1..10;
- a Prometheus-style judge prompt (``[RESULT]``) gets ``"Feedback: ... [RESULT] N"``, N in 1..5;
- pairwise prompts (:mod:`elitr_core.prompts.pairwise`): a battle gets ``[[A]]``, ``[[B]]`` or
  ``[[C]]``; CREAM's key-facts step gets 1..4 numbered key facts, its alignment step one
  ``Fact N: A: ... | B: ...`` line per key fact citing existing sentences.

``unparsable_rate`` makes that share of judge outputs carry no score, to demo unscored items.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from elitr_core.backends.base import (
    Backend,
    Completion,
    Conversation,
    DecodingConfig,
    Message,
    ResultCallback,
    turn_by_turn,
)
from elitr_core.errors import UserError

ECHO_WORDS = 6


def _digest(*parts: object) -> int:
    """A stable 64-bit integer from ``parts`` (``hash()`` is salted per process)."""
    text = "\x1f".join(str(part) for part in parts)
    # surrogatepass: a prompt may quote a model's lone surrogate (CREAM's key facts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8],
                          "big")


def _last_user(messages: list[Message]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message.get("content", "")
    raise UserError("every conversation must end with a user message (none found)")


class FakeBackend(Backend):
    """Deterministic answers and judge scores from a hash of the last user message.

    Parameters
    ----------
    unparsable_rate : float
        Share (0..1) of judge outputs written without any score.

    Examples
    --------
    >>> backend = FakeBackend()
    >>> conversation = [{"role": "user", "content": "Who chairs the meeting?"}]
    >>> from elitr_core.backends.base import complete
    >>> complete(backend, [conversation], DecodingConfig())[0].text.startswith("Answer")
    True
    """

    name = "fake"
    summary = "deterministic demo answers"
    demo = True

    def __init__(self, *, unparsable_rate: float = 0.0) -> None:
        if not 0.0 <= unparsable_rate <= 1.0:
            raise UserError(f"unparsable_rate must be between 0 and 1 (got {unparsable_rate})")
        self.unparsable_rate = unparsable_rate

    def generate(self, conversations: Sequence[Conversation], decoding: DecodingConfig,
                 on_result: ResultCallback) -> None:
        """Answer each turn deterministically, conversation after conversation.

        Greedy decoding ignores the seed (as a real greedy model would); sampling mixes the
        seed into the hash, so different seeds give different answers and scores.
        """
        turn_by_turn(conversations, on_result,
                     lambda messages, key: self._answer(messages, decoding, key))

    def describe(self) -> dict[str, Any]:
        """Backend name and the unparsable rate (nothing else shapes its output)."""
        return {"backend": self.name, "unparsable_rate": self.unparsable_rate}

    def _answer(
        self, conversation: list[Message], decoding: DecodingConfig, cache_key: str | None
    ) -> Completion:
        question = _last_user(conversation)
        seed = None if decoding.greedy else decoding.seed
        value = _digest(question, seed, decoding.temperature)
        if "ALIGNMENT:" in question or "KEY FACTS:" in question or "[[A]]" in question:
            text = self._pairwise_text(question, value)
        elif "[RESULT]" in question:
            text = self._judge_text(value, scale=5, template="Feedback: {feedback} [RESULT] {n}")
        elif "\\boxed" in question:
            text = self._judge_text(value, scale=10, template="{feedback} \\boxed{{{n}}}")
        else:
            echoed = " ".join(question.split()[:ECHO_WORDS])
            text = f"Answer {value % 10_000:04d}: {echoed}"
        words = text.split()
        finish = "stop"
        if len(words) > decoding.max_new_tokens:
            words, finish = words[: decoding.max_new_tokens], "length"
            text = " ".join(words)
        prompt_tokens = sum(len(m.get("content", "").split()) for m in conversation)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(words),
            cached_tokens=None,
            finish_reason=finish,
            metadata={"cache_key": cache_key} if cache_key is not None else {},
        )

    def _pairwise_text(self, prompt: str, value: int) -> str:
        if (_digest(value, "unparsable") % 1000) / 1000 < self.unparsable_rate:
            return "Both answers have merits."
        if "[[A]]" in prompt:
            return f"Compared with the reference. [[{'ABC'[value % 3]}]]"
        if "ALIGNMENT:" not in prompt:
            n = 1 + value % 4
            facts = "\n".join(f"{i}. Key fact {i} of the answers." for i in range(1, n + 1))
            return f"Reading both answers.\nKEY FACTS:\n{facts}"
        facts_part, _, answers = prompt.partition("### Answer A (numbered sentences):")
        part_a, _, part_b = answers.partition("### Answer B (numbered sentences):")
        n_facts = len(re.findall(r"^\d+\. ", facts_part.split("### Key facts:")[-1], re.M))
        sizes = [len(re.findall(r"^\[\d+\] ", part, re.M)) for part in (part_a, part_b)]
        lines = []
        for fact in range(1, n_facts + 1):
            cited = [str(1 + _digest(value, fact, side) % size)
                     if size and _digest(value, fact, side, "cite") % 3 else "none"
                     for side, size in enumerate(sizes)]
            lines.append(f"Fact {fact}: A: {cited[0]} | B: {cited[1]}")
        return "Aligning.\nALIGNMENT:\n" + "\n".join(lines)

    def _judge_text(self, value: int, *, scale: int, template: str) -> str:
        # A second hash picks unparsable items so they do not correlate with the score.
        if (_digest(value, "unparsable") % 1000) / 1000 < self.unparsable_rate:
            return "Feedback: the response could not be assessed."
        n = 1 + value % scale
        feedback = f"The response matches the reference to degree {n} of {scale}."
        return template.format(feedback=feedback, n=n)
