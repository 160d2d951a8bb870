"""Pairwise judge prompts: CREAM's two steps and L-Eval's battle, as named-slot templates.

The texts are data files in ``elitr_core/prompts/texts/``; they are *our* wording of
the published methods, not verbatim copies, so (unlike the ELITR-Bench prompts) they carry no
comparability promise:

- CREAM [1]_ compares two answers without a reference in two chain-of-thought steps: (1) extract
  at most K key facts from the two answers together; (2) align every key fact with the numbered
  sentences of each answer. Completeness is the share of key facts an answer states,
  conciseness the share of its sentences that state a key fact
  (:mod:`elitr_core.judging.pairwise_parser`).
- L-Eval [2]_ asks for a verdict between two answers given the question and the reference
  answer (``[[A]]``, ``[[B]]`` or ``[[C]]`` for a tie), following MT-Bench's pairwise prompt
  with a reference [3]_; "details not in the reference answer are no advantage".

Both are asked in both orders by the runner (position bias, [3]_).

References
----------
.. [1] Gong, Z. et al. (2024). CREAM: Comparison-Based Reference-Free ELO-Ranked Automatic
   Evaluation for Meeting Summarization. arXiv:2409.10883.
.. [2] An, C. et al. (2024). L-Eval: Instituting Standardized Evaluation for Long Context
   Language Models. ACL 2024.
.. [3] Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena.
   NeurIPS 2023 Datasets and Benchmarks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources

from elitr_core.backends.base import Message
from elitr_core.errors import UserError

#: CREAM's cap on the number of key facts (``--max-key-facts``).
DEFAULT_MAX_KEY_FACTS = 16

PAIRWISE_TEMPLATE_FILES: dict[str, str] = {
    "cream_key_facts": "cream_key_facts.txt",
    "cream_alignment": "cream_alignment.txt",
    "leval_battle": "leval_battle.txt",
}
_SLOT_NAMES = ("question", "reference", "answer_a", "answer_b", "max_key_facts", "key_facts",
               "sentences_a", "sentences_b")
_SLOT_RE = re.compile(r"\{(" + "|".join(_SLOT_NAMES) + r")\}")
# A sentence ends at . ! or ? followed by whitespace; a line break always ends one (bullets).
_SENTENCE_END_RE = re.compile(r"(?<=[.!?])\s+(?=\S)")


@cache
def pairwise_template(name: str) -> str:
    """Return a pairwise template by short name (see :data:`PAIRWISE_TEMPLATE_FILES`)."""
    if name not in PAIRWISE_TEMPLATE_FILES:
        raise KeyError(f"unknown pairwise template {name!r}; known: "
                       f"{sorted(PAIRWISE_TEMPLATE_FILES)}")
    path = resources.files("elitr_core").joinpath("prompts", "texts",
                                                  PAIRWISE_TEMPLATE_FILES[name])
    return path.read_text(encoding="utf-8").replace("\r\n", "\n")


def _fill(name: str, values: Mapping[str, str]) -> str:
    """Fill every slot of template ``name`` in one pass (values are never re-scanned)."""
    template = pairwise_template(name)
    present = set(_SLOT_RE.findall(template))
    if present != set(values):
        raise KeyError(f"template {name} has slots {sorted(present)}, got {sorted(values)}")
    return _SLOT_RE.sub(lambda match: values[match.group(1)], template)


def split_sentences(text: str) -> list[str]:
    """Cut an answer into the sentences CREAM's alignment step numbers.

    Every non-empty line is cut after ``.``, ``!`` or ``?`` followed by whitespace; a line
    break always ends a sentence, so bullet items count one each. A hand-written rule on
    purpose: sentence splitters from NLTK or spaCy need model files downloaded at run time,
    and the judge only has to see the same numbering the parser counts.

    Examples
    --------
    >>> split_sentences("Paul will send it. Who? Maybe Anna.\\n- the budget")
    ['Paul will send it.', 'Who?', 'Maybe Anna.', '- the budget']
    """
    sentences: list[str] = []
    for line in text.splitlines():
        # the expression can only cut after a mark: a line without one is a sentence as it is
        # (found at memory speed, where the expression tries its look-behind at every position)
        marked = "." in line or "!" in line or "?" in line
        parts = _SENTENCE_END_RE.split(line) if marked else [line]
        sentences.extend(part.strip() for part in parts if part.strip())
    return sentences


def numbered(lines: Sequence[str]) -> str:
    """``[1] first``, ``[2] second`` ... one per line (``(empty answer)`` when none)."""
    if not lines:
        return "(empty answer)"
    return "\n".join(f"[{i}] {line}" for i, line in enumerate(lines, start=1))


def key_facts_messages(question: str, answer_a: str, answer_b: str, *,
                       max_key_facts: int = DEFAULT_MAX_KEY_FACTS) -> list[Message]:
    """CREAM step 1: the chat messages asking for at most ``max_key_facts`` key facts."""
    if isinstance(max_key_facts, bool) or not isinstance(max_key_facts, int) or max_key_facts < 1:
        raise UserError(f"--max-key-facts must be a positive integer, got {max_key_facts!r}")
    text = _fill("cream_key_facts", {"question": question.strip(), "answer_a": answer_a.strip(),
                                     "answer_b": answer_b.strip(),
                                     "max_key_facts": str(max_key_facts)})
    return [{"role": "user", "content": text}]


def alignment_messages(question: str, key_facts: Sequence[str], answer_a: str,
                       answer_b: str) -> list[Message]:
    """CREAM step 2: align the numbered key facts with each answer's numbered sentences.

    The key facts are listed ``1. fact``; sentences as in :func:`numbered` over
    :func:`split_sentences`, the numbering the parser checks against.
    """
    if not key_facts:
        raise ValueError("the alignment step needs at least one key fact")
    facts = "\n".join(f"{i}. {fact}" for i, fact in enumerate(key_facts, start=1))
    text = _fill("cream_alignment", {
        "question": question.strip(), "key_facts": facts,
        "sentences_a": numbered(split_sentences(answer_a)),
        "sentences_b": numbered(split_sentences(answer_b)),
    })
    return [{"role": "user", "content": text}]


def battle_messages(question: str, reference: str, answer_a: str,
                    answer_b: str) -> list[Message]:
    """L-Eval battle: question, reference answer and two answers; verdict A, B or tie."""
    text = _fill("leval_battle", {"question": question.strip(), "reference": reference.strip(),
                                  "answer_a": answer_a.strip(), "answer_b": answer_b.strip()})
    return [{"role": "user", "content": text}]
