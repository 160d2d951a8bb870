"""The storage policy of model text (``data/model_text.py``): what it replaces, what it keeps
exactly, how it cuts, and what it records; each case by hand, then properties over any text."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db import models
from elitr_core.data.bounds import MAX_TEXT_CHARS
from elitr_core.data.fields import clean_text
from elitr_core.data.model_text import (
    Stored,
    as_generated,
    storable,
    storable_row,
)


def replaced(char: str) -> bool:
    """What the policy replaces, written out: C0 controls but tab, newline and CR; DEL;
    surrogates."""
    code = ord(char)
    return (code < 0x20 and char not in "\t\n\r") or code == 0x7F or 0xD800 <= code <= 0xDFFF


REPLACED = [c for c in map(chr, range(0x80)) if replaced(c)] + [
    "\ud800", "\udbff", "\udc00", "\udfff"]
KEPT = [
    "", "   ", "tab\there", "line\nbreak", "crlf\r\nand lone\rcr", "\ufffd written by the model",
    "emoji \U0001F600 and \u00e9 and e\u0301", "bidi \u202e and zero width \u200b\u200d",
    "C1 control \x85 and no-break\u00a0space", "\ufeffBOM", "\U0010FFFF \uffff",
    "a backslash \\u0000 is just text",
]
MARKER = re.compile(r"\u2026\[([0-9,]+) characters not stored\]\Z")


@pytest.mark.parametrize("char", REPLACED, ids=[f"U+{ord(c):04X}" for c in REPLACED])
def test_each_unstorable_character_becomes_one_replacement_character(char: str) -> None:
    assert storable(f"before{char}after", 100) == Stored("before\ufffdafter", 1, 0)


@pytest.mark.parametrize("text", KEPT)
def test_everything_else_is_stored_exactly(text: str) -> None:
    assert storable(text, 100) == Stored(text, 0, 0)


def test_a_text_of_exactly_its_column_is_not_cut() -> None:
    assert storable("x" * 40, 40) == Stored("x" * 40)


def test_a_longer_text_keeps_its_start_and_names_what_was_cut() -> None:
    stored = storable("ab" * 25, 40)  # 50 characters in a place of 40
    assert stored == Stored("ab" * 6 + "a" + "\u2026[37 characters not stored]", 0, 37)
    assert len(stored.text) == 40 and stored.altered


def test_replacing_and_cutting_together() -> None:
    stored = storable("\x00" * 10 + "y" * 100, 60)
    assert stored == Stored("\ufffd" * 10 + "y" * 23 + "\u2026[77 characters not stored]", 10, 77)


def test_a_place_too_small_for_the_marker_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="cannot hold the cut marker"):
        storable("x" * 100, 10)


def test_a_row_is_bounded_by_its_columns_and_its_json_strings_walked() -> None:
    row = storable_row(models.PairwiseJudgment, {
        "evaluator_id": 1, "order": "ab", "status": "ok", "verdict": None, "support": {"a": [[1]]},
        "reason": "r" * 600,  # VARCHAR(512)
        "raw": "judge\x00output" + "z" * 600,  # Text: not cut
        "key_facts": ["fact\ud800 one", "fact two"],
    })
    assert row.values["reason"].startswith("r" * 400) and len(row.values["reason"]) == 512
    assert row.values["raw"] == "judge\ufffdoutput" + "z" * 600
    assert row.values["key_facts"] == ["fact\ufffd one", "fact two"]
    assert {k: row.values[k] for k in ("evaluator_id", "order", "status", "verdict",
                                       "support")} == {"evaluator_id": 1, "order": "ab",
                                                       "status": "ok", "verdict": None,
                                                       "support": {"a": [[1]]}}
    assert row.values["reason"].endswith("\u2026[116 characters not stored]")
    assert (row.replaced, row.cut) == (2, 116)


def test_a_json_field_keys_are_walked_too() -> None:
    row = storable_row(models.Response, {"text": "ok", "meta": {"id\x00": "x\x1b", "n": 3}})
    assert row.values == {"text": "ok", "meta": {"id\ufffd": "x\ufffd", "n": 3}}
    assert row.replaced == 2


def test_a_clean_row_is_unchanged() -> None:
    values = {"text": "An answer.\r\n\tIndented.", "meta": {"finish_reason": "stop", "n": 1}}
    row = storable_row(models.Response, values)
    assert (row.values, row.altered) == (values, False)


@pytest.mark.parametrize("original", [
    "a\x00b", "lone \ud800 high \udfff low", "del\x7f esc\x1b[0m", "\x00\U0001F600\u00e9\r\n",
    "\ufffd\x00"])
def test_an_altered_answer_keeps_its_original_and_reads_back_as_generated(original: str) -> None:
    row = storable_row(models.Response, {"text": original, "meta": {}})
    note = row.note(original)
    assert note["replaced"] >= 1 and note["cut"] == 0
    assert note["original"].isascii() and storable(note["original"], MAX_TEXT_CHARS).text == \
        note["original"]  # the kept original is itself storable
    assert as_generated(row.values["text"], {"altered": note}) == original


def test_a_cut_answer_keeps_no_original_and_reads_back_as_stored() -> None:
    original = "y" * (MAX_TEXT_CHARS + 5)
    row = storable_row(models.Response, {"text": original, "meta": {}})
    note = row.note(original)
    assert "original" not in note and note["cut"] > 5
    assert as_generated(row.values["text"], {"altered": note}) == row.values["text"]
    assert as_generated("stored", None) == as_generated("stored", {}) == "stored"


# Any text at all: surrogates and controls included.
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                 exclude_categories=()), max_size=80)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(ANY_TEXT, st.integers(min_value=40, max_value=120))
def test_any_text_becomes_storable_text_that_the_import_gate_accepts(text: str,
                                                                     limit: int) -> None:
    stored = storable(text, limit)
    stored.text.encode("utf-8")  # strict: no surrogate left
    assert "\x00" not in stored.text and len(stored.text) <= limit
    clean_text(stored.text)  # the typed gate of imports refuses none of it: exports import back
    kept = len(text) - stored.cut
    for given_char, kept_char in zip(text[:kept], stored.text[:kept], strict=True):
        assert kept_char == given_char or (kept_char == "\ufffd" and replaced(given_char))
    assert stored.replaced == sum(map(replaced, text))
    if stored.cut:
        match = MARKER.search(stored.text)
        assert match is not None and int(match.group(1).replace(",", "")) == stored.cut
        assert len(stored.text) == kept + len(match.group(0))
    else:
        assert len(stored.text) == len(text)
