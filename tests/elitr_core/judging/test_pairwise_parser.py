"""Tricky pairwise judge outputs: unreadable ones are unparsed with a reason, never a verdict."""

from __future__ import annotations

import pytest

from elitr_core.judging.pairwise_parser import parse_alignment, parse_battle, parse_key_facts

# (output, expected verdict or None, expected reason or None)
BATTLE_CASES: list[tuple[str | None, str | None, str | None]] = [
    ("A names the right person, B does not.\n[[A]]", "A", None),
    ("B is closer to the reference. [[B]]", "B", None),
    ("Both say the same. [[C]]", "tie", None),
    ("Both say the same. [[tie]]", "tie", None),
    ("Verdict: [[ b ]]", "B", None),
    ("**[[A]]**", "A", None),
    # a NUL, a lone surrogate and an escape in the explanation (the output as generated)
    ("A names\x00 the right\ud800 person\x1b[0m.\n[[A]]", "A", None),
    ("[[A]] A is better because ... Final verdict: [[A]]", "A", None),
    # the instruction echoed, then a verdict alone on the last line
    ('I must output "[[A]]" if A is better, "[[B]]" if B is better, "[[C]]" for a tie.\n'
     "A adds details not in the reference; B matches it.\n[[B]]", "B", None),
    # disagreeing markers, last line does not decide
    ("[[A]] ... on reflection [[B]] is better", None,
     "verdicts A and B disagree and the last line does not decide"),
    ("A or B? [[A]] [[B]]", None, "verdicts A and B disagree and the last line does not decide"),
    # no marker
    ("Assistant A is better.", None, "no [[A]], [[B]] or [[C]] verdict"),
    ("[A] is better", None, "no [[A]], [[B]] or [[C]] verdict"),
    ("[[D]]", None, "no [[A]], [[B]] or [[C]] verdict"),
    ("", None, "empty output"),
    ("   \n", None, "empty output"),
    (None, None, "empty output"),
]


@pytest.mark.parametrize(("text", "verdict", "reason"), BATTLE_CASES)
def test_battle_table(text: str | None, verdict: str | None, reason: str | None) -> None:
    result = parse_battle(text)
    assert (result.verdict, result.reason) == (verdict, reason)
    assert result.ok is (verdict is not None)
    assert result.raw == (text or "")


KEY_FACT_CASES: list[tuple[str, tuple[str, ...] | None, str | None]] = [
    ("Reasoning.\nKEY FACTS:\n1. Paul sends the slides.\n2. The demo is on Friday.",
     ("Paul sends the slides.", "The demo is on Friday."), None),
    # numbered reasoning before the marker is not taken
    ("1. A says Paul.\n2. B says Anna.\n**Key facts:**\n1) Paul sends the slides.",
     ("Paul sends the slides.",), None),
    # the last marker counts (the judge restarts its list)
    ("Key facts:\n1. draft\nKey Facts\n1. **final fact**", ("final fact",), None),
    # no marker: every numbered line
    ("1. One.\n2. Two.", ("One.", "Two."), None),
    ("KEY FACTS:\n1. Paul\x00 sends\ud800 it.", ("Paul\x00 sends\ud800 it.",), None),
    ("  - 1. Indented bullet.", ("Indented bullet.",), None),
    ("KEY FACTS:\n1. One.\n3. Three.", None, "key facts numbered 1, 3, expected 1, 2, 3 ..."),
    ("KEY FACTS:\n1. One.\n1. Again.", None, "key facts numbered 1, 1, expected 1, 2, 3 ..."),
    ("KEY FACTS:\n2. Starts at two.", None, "key facts numbered 2, expected 1, 2, 3 ..."),
    ("KEY FACTS:\n1.\n2. Two.", None, "an empty key fact"),
    ("KEY FACTS:\n" + "\n".join(f"{i}. fact {i}" for i in range(1, 5)), None,
     "4 key facts, more than the maximum 3"),
    ("The answers agree on nothing.", None, "no numbered key facts"),
    ("KEY FACTS:\n- Paul sends the slides.", None, "no numbered key facts"),
    ("", None, "empty output"),
]


@pytest.mark.parametrize(("text", "facts", "reason"), KEY_FACT_CASES)
def test_key_facts_table(text: str, facts: tuple[str, ...] | None, reason: str | None) -> None:
    result = parse_key_facts(text, max_key_facts=3)
    assert (result.facts, result.reason) == (facts, reason)


def test_exactly_max_key_facts_is_fine() -> None:
    text = "KEY FACTS:\n" + "\n".join(f"{i}. fact {i}" for i in range(1, 17))
    assert len(parse_key_facts(text, 16).facts or ()) == 16


# 3 key facts; A has 4 sentences, B has 2.
ALIGN_OK: list[tuple[str, tuple[list[set[int]], list[set[int]]]]] = [
    ("ALIGNMENT:\nFact 1: A: 1, 2 | B: none\nFact 2: A: none | B: 2\nFact 3: A: 4 | B: 1",
     ([{1, 2}, set(), {4}], [set(), {2}, {1}])),
    ("**Fact 1:** A: [1], [2]; B: -\n**Fact 2:** A: n/a; B: [2]\n**Fact 3:** A: S4; B: S1",
     ([{1, 2}, set(), {4}], [set(), {2}, {1}])),
    ("Fact 1: A: 1-2 | B:\nFact 2: A: | B: B2\nFact 3: A: A4 | B: 1.",
     ([{1, 2}, set(), {4}], [set(), {2}, {1}])),
    ("Key fact 1: A: 1 and 2, B: none\nKey fact 2: A: none, B: 2\nKey fact 3: A: 4, B: 1",
     ([{1, 2}, set(), {4}], [set(), {2}, {1}])),
    # reasoning mentions facts before the marker; a repeated line that agrees is fine
    ("Fact 1: A: 3 | B: 2 (draft)\nALIGNMENT:\nFact 1: A: 1, 2 | B: none\n"
     "Fact 1: A: 2, 1 | B: none\nFact 2: A: none | B: 2\nFact 3: A: 4 | B: 1",
     ([{1, 2}, set(), {4}], [set(), {2}, {1}])),
]


@pytest.mark.parametrize(("text", "support"), ALIGN_OK)
def test_alignment_tolerated_forms(text: str, support: tuple[list[set[int]], ...]) -> None:
    result = parse_alignment(text, n_facts=3, n_sentences_a=4, n_sentences_b=2)
    assert result.reason is None
    assert [set(s) for s in result.support_a or ()] == support[0]
    assert [set(s) for s in result.support_b or ()] == support[1]


def test_alignment_scores_by_hand() -> None:
    text = "Fact 1: A: 1, 2 | B: none\nFact 2: A: none | B: 2\nFact 3: A: 4 | B: 1"
    r = parse_alignment(text, n_facts=3, n_sentences_a=4, n_sentences_b=2)
    # A states facts 1 and 3 (2/3) with sentences {1, 2, 4} of 4 (3/4);
    # B states facts 2 and 3 (2/3) with sentences {1, 2} of 2 (1).
    assert (r.completeness_a, r.completeness_b) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert (r.conciseness_a, r.conciseness_b) == (0.75, 1.0)


def test_empty_answer_has_zero_conciseness() -> None:
    r = parse_alignment("Fact 1: A: none | B: 1", n_facts=1, n_sentences_a=0, n_sentences_b=1)
    assert (r.completeness_a, r.conciseness_a, r.completeness_b, r.conciseness_b) == (
        0.0, 0.0, 1.0, 1.0)


ALIGN_BAD: list[tuple[str, str]] = [
    ("Fact 1: A: 1 | B: none\nFact 2: A: 2 | B: 1", "no line for key fact 3"),
    ("Fact 1: A: 1 | B: 1\nFact 2: A: 1 | B: 1\nFact 3: A: 1 | B: 1\nFact 4: A: 1 | B: 1",
     "unknown key fact 4"),
    ("Fact 1: A: 5 | B: 1\nFact 2: A: 1 | B: 1\nFact 3: A: 1 | B: 1",
     "key fact 1 cites sentence 5 of answer A, which has 4"),
    ("Fact 1: A: 1 | B: 3\nFact 2: A: 1 | B: 1\nFact 3: A: 1 | B: 1",
     "key fact 1 cites sentence 3 of answer B, which has 2"),
    ("Fact 1: A: 0 | B: 1\nFact 2: A: 1 | B: 1\nFact 3: A: 1 | B: 1",
     "key fact 1 cites sentence 0 of answer A, which has 4"),
    ("Fact 1: A: 1 | B: 1\nFact 1: A: 2 | B: 1\nFact 2: A: 1 | B: 1\nFact 3: A: 1 | B: 1",
     "key fact 1 aligned twice, differently"),
    ("Fact 1: A: the first one | B: 1", "key fact 1: cannot read sentences 'the first one' of A"),
    ("Fact 1: supported by A only", "key fact 1: expected 'A: ... | B: ...'"),
    ("Fact 1: B: 1 | A: 2", "key fact 1: expected 'A: ... | B: ...'"),
    ("Both answers state every fact.", "no 'Fact N: A: ... | B: ...' line"),
    ("", "empty output"),
]


@pytest.mark.parametrize(("text", "reason"), ALIGN_BAD)
def test_alignment_unparsed(text: str, reason: str) -> None:
    result = parse_alignment(text, n_facts=3, n_sentences_a=4, n_sentences_b=2)
    assert result.reason == reason
    assert not result.ok and result.completeness_a is None and result.support_a is None
