"""Tricky judge outputs: a failed parse is unscored with a reason, never a wrong score."""

from __future__ import annotations

import pytest

from elitr_core.errors import UserError
from elitr_core.judging import JudgeResult, parse_judgment

FEEDBACK = "The response names the right person but adds an unrelated date."

# (output, expected score or None, expected reason or None)
GPT4_CASES: list[tuple[str, float | None, str | None]] = [
    (f"{FEEDBACK}\n\\boxed{{8}}", 8.0, None),
    (f"{FEEDBACK} \\boxed{{ 8 }}", 8.0, None),
    (f"{FEEDBACK} \\boxed{{8/10}}", 8.0, None),
    (f"{FEEDBACK} \\boxed{{8 / 10}}", 8.0, None),
    (f"{FEEDBACK} $\\boxed{{8}}$", 8.0, None),
    (f"{FEEDBACK} \\\\boxed{{8}}", 8.0, None),  # JSON-escaped backslash
    (f"{FEEDBACK} \\boxed{{\\text{{8}}}}", 8.0, None),
    (f"{FEEDBACK} \\boxed{{10}}", 10.0, None),
    (f"{FEEDBACK} \\boxed{{1}}", 1.0, None),
    # Two boxes that agree, and an echoed empty box from the instructions.
    (f"Score \\boxed{{7}}. {FEEDBACK} Final: \\boxed{{7}}", 7.0, None),
    (f"I must give the score in \\boxed{{}}. {FEEDBACK} \\boxed{{6}}", 6.0, None),
    # Disagreeing boxes.
    (f"\\boxed{{7}} {FEEDBACK} \\boxed{{9}}", None, "two different boxed scores 7 and 9"),
    ("\\boxed{9} \\boxed{7} \\boxed{8}", None, "3 different boxed scores 7, 8 and 9"),
    # Out of range or not an integer.
    (f"{FEEDBACK} \\boxed{{11}}", None, "score 11 outside 1..10"),
    (f"{FEEDBACK} \\boxed{{0}}", None, "score 0 outside 1..10"),
    (f"{FEEDBACK} \\boxed{{-1}}", None, "score -1 outside 1..10"),
    (f"{FEEDBACK} \\boxed{{7.5}}", None, "score 7.5 is not an integer"),
    (f"{FEEDBACK} \\boxed{{good}}", None, "boxed content 'good' is not an integer score"),
    (f"{FEEDBACK} \\boxed{{4/5}}", None, "boxed content '4/5' is not an integer score"),
    # No box: a number in prose is never taken...
    ("I rate this a perfect 10!", None, "no \\boxed{} score"),
    (f"{FEEDBACK} It deserves 8 out of 10 in my view.", None, "no \\boxed{} score"),
    ("Score 7-8: The response to evaluate contains most of the reference answer",
     None, "no \\boxed{} score"),
    (FEEDBACK, None, "no \\boxed{} score"),
    # ...only an explicit final score line is (documented fallback).
    ("10/10", 10.0, None),
    (f"{FEEDBACK}\nScore: 8", 8.0, None),
    (f"{FEEDBACK}\n**Final score: 9/10**", 9.0, None),
    (f"{FEEDBACK}\n7/10\n", 7.0, None),
    (f"Score: 8\n{FEEDBACK}", None, "no \\boxed{} score"),  # not the last line
    (f"{FEEDBACK}\nScore: 12", None, "score 12 outside 1..10"),
    # Characters no stored text holds, in the explanation: the parser reads the output as
    # generated (the storage policy of model text applies only to what is written).
    (f"{FEEDBACK}\x00 names\ud800 \x1b[31m \\boxed{{6}}", 6.0, None),
    (f"{FEEDBACK}\x00\nScore: 5", 5.0, None),
    # Empty output.
    ("", None, "empty output"),
    ("  \n\t ", None, "empty output"),
]

PROMETHEUS_CASES: list[tuple[str, float | None, str | None]] = [
    (f"Feedback: {FEEDBACK} [RESULT] 4", 8.0, None),
    (f"Feedback: {FEEDBACK} [RESULT]4", 8.0, None),
    (f"Feedback: {FEEDBACK} [RESULT]: 4", 8.0, None),
    (f"Feedback: {FEEDBACK} [RESULT] (4)", 8.0, None),
    (f"Feedback: {FEEDBACK} [RESULT] 4/5", 8.0, None),
    (f"Feedback: {FEEDBACK} [RESULT] 5.", 10.0, None),
    (f"Feedback: {FEEDBACK} [RESULT] 1", 2.0, None),
    (f"Feedback: {FEEDBACK}\x00\udfff\x7f [RESULT] 3", 6.0, None),
    # The format line echoed before the real score is ignored (no number after it).
    ("[RESULT] (an integer number between 1 and 5)\nFeedback: ok [RESULT] 3", 6.0, None),
    ("[RESULT] 3 ... [RESULT] 3", 6.0, None),
    ("[RESULT] 3 ... [RESULT] 4", None, "two different [RESULT] scores 3 and 4"),
    (f"Feedback: {FEEDBACK} [RESULT] 6", None, "score 6 outside 1..5"),
    (f"Feedback: {FEEDBACK} [RESULT] 0", None, "score 0 outside 1..5"),
    (f"Feedback: {FEEDBACK} [RESULT] 3.5", None, "score 3.5 is not an integer"),
    (f"Feedback: {FEEDBACK} [RESULT]", None, "[RESULT] marker without a number"),
    (f"Feedback: {FEEDBACK} Score: 4", None, "no [RESULT] score"),
    (f"Feedback: {FEEDBACK} \\boxed{{4}}", None, "no [RESULT] score"),
    ("", None, "empty output"),
]


@pytest.mark.parametrize(("text", "score", "reason"), GPT4_CASES)
def test_gpt4_style(text: str, score: float | None, reason: str | None) -> None:
    result = parse_judgment(text, "gpt4")
    assert result == JudgeResult(score=score, reason=reason, raw=text)
    assert result.ok is (score is not None)


@pytest.mark.parametrize(("text", "score", "reason"), PROMETHEUS_CASES)
def test_prometheus_style(text: str, score: float | None, reason: str | None) -> None:
    assert parse_judgment(text, "prometheus") == JudgeResult(score=score, reason=reason, raw=text)


def test_never_negative_placeholder() -> None:
    # The reference code wrote 0 / -1 / -2 for failures; every failure here is None.
    texts = [case[0] for case in GPT4_CASES + PROMETHEUS_CASES]
    for style in ("gpt4", "prometheus"):
        for text in texts:
            result = parse_judgment(text, style)
            if result.score is None:
                assert result.reason
            else:
                assert 1.0 <= result.score <= 10.0 and result.reason is None


def test_none_output_is_empty() -> None:
    assert parse_judgment(None) == JudgeResult(score=None, reason="empty output", raw="")


def test_unknown_style_is_a_user_error() -> None:
    with pytest.raises(UserError, match="unknown judge style"):
        parse_judgment("\\boxed{8}", "gpt5")


def test_default_style_is_gpt4() -> None:
    assert parse_judgment("\\boxed{3}").score == 3.0
