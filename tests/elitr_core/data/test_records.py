"""The typed gate (``elitr_core.data.records``): bounds from the schema, names, text, scores."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from db import models
from elitr_core.data import records
from elitr_core.errors import DataFileError

ROW = {"meeting": "meeting_en_dev_001", "question_id": "3", "split": "dev", "setting": "qa",
       "mode": "st", "seed": "", "model": "GPT-4", "question_type": "who",
       "answer_position": "B", "evaluator": "gpt-4", "annotator": "", "sample": "0",
       "score": "6.5"}


def refused(row: dict[str, Any]) -> str:
    with pytest.raises(DataFileError) as info:
        records.check_score_rows([ROW, row], path="s.csv")
    message = str(info.value)
    assert message.startswith("s.csv: line 3: ") and "\n" not in message
    return message


def test_bounds_are_read_from_the_schema() -> None:
    assert records.integer_bounds(models.Run, "seed") == (-(2**31), 2**31 - 1)
    assert records.string_length(models.Run, "model") == 128
    assert records.string_length(models.Meeting, "external_id") == 64
    assert records.string_length(models.Question, "reference") == records.MAX_TEXT_CHARS


def test_a_good_row_is_typed_with_its_defaults() -> None:
    (row,) = records.check_score_rows([ROW], path="s.csv")
    assert row == {"meeting": "meeting_en_dev_001", "question_id": 3, "split": "dev",
                   "setting": "qa", "mode": "st", "model": "GPT-4", "evaluator": "gpt-4",
                   "score": 6.5, "seed": None, "annotator": None, "sample": 0,
                   "question_type": "who", "answer_position": "B"}
    minimal = {k: v for k, v in ROW.items()
               if k not in ("seed", "annotator", "sample", "question_type", "answer_position")}
    assert records.check_score_rows([minimal], path="s.csv")[0]["sample"] == 0


def test_columns_check_as_rows_do_and_an_absent_column_takes_its_default() -> None:
    """``check_table`` (a CSV batch by column) answers as ``check_columns`` (rows): a column
    absent from the file is the blank cell in every row, and a refusal names the same line."""
    checker = records.ScoreRowChecker(path="s.csv")
    rows = [ROW, {**ROW, "question_id": "4", "sample": "2"}, {**ROW, "score": "7"}]
    minimal = [{k: v for k, v in row.items() if k not in ("sample", "question_type")}
               for row in rows]
    columns = {name: tuple(row[name] for row in minimal) for name in minimal[0]}
    table = checker.check_table(columns, len(rows), 2)
    assert table == checker.check_columns(minimal, 2)
    assert table["sample"] == [0, 0, 0] and table["question_type"] == [None, None, None]
    assert table["question_id"] == [3, 4, 3] and table["score"] == [6.5, 6.5, 7.0]
    with pytest.raises(DataFileError, match=r"^s.csv: line 11: score 'x' "):
        checker.check_table({**columns, "score": ("6", "7", "x")}, len(rows), 9)
    with pytest.raises(DataFileError, match=r"^s.csv: line 9: missing evaluator"):
        checker.check_table({k: v for k, v in columns.items() if k != "evaluator"}, 3, 9)


@pytest.mark.parametrize(("column", "value", "expected"), [
    ("question_id", str(2**63), "above 2,147,483,647"),
    ("question_id", str(2**31), "above 2,147,483,647"),
    ("question_id", "3.0", "not a whole number"),
    ("question_id", "1_0", "not a whole number"),
    ("question_id", "\u0663", "not a whole number"),
    ("question_id", "-1", "below 0"),
    ("seed", "1" + "0" * 23, "more digits"),
    ("seed", "-1", "below 0"),
    ("sample", "true", "not a whole number"),
    ("score", "9" * 400, "outside 1..10"),
    ("score", "nan", "not a number"),
    ("score", "inf", "not a number"),
    ("score", "0.5", "outside 1..10"),
    ("score", "", "not a number"),
    ("model", "x" * 129, "129 characters, more than the 128"),
    ("meeting", "m" * 65, "more than the 64"),
    ("model", "GPT-4\u200b", "U+200B"),
    ("model", "\u202eGPT", "U+202E"),
    ("model", "\ufeffGPT", "U+FEFF"),
    ("evaluator", "gpt\x00", "U+0000"),
    ("annotator", "ann\nx", "U+000A"),
    ("model", "GPT\u00a04", "U+00A0"),
    ("model", "GPT\ud800", "lone surrogate"),
    ("model", "GPT\ufe0f", "U+FE0F"),
    ("model", "   ", "empty"),
    ("split", "dev2", "not one of dev, test2"),
    ("setting", "QA", "not one of qa, conv"),
    ("question_type", "why", "not one of who"),
])
def test_a_hostile_cell_is_refused_with_one_line(column: str, value: str, expected: str
                                                  ) -> None:
    assert expected in refused({**ROW, column: value})


def test_the_earliest_refused_line_is_named() -> None:
    rows = [ROW, {**ROW, "score": "11"}, {**ROW, "model": ""}]
    with pytest.raises(DataFileError, match="line 3: score"):
        records.check_score_rows(rows, path="s.csv")


def test_the_csv_exports_formula_escape_reads_back() -> None:
    rows = records.check_score_rows([{**ROW, "model": "'=cmd()", "annotator": "'-x"}],
                                    path="s.csv")
    assert (rows[0]["model"], rows[0]["annotator"]) == ("=cmd()", "-x")
    with pytest.raises(DataFileError, match="formula escape"):  # JSON names: never escaped
        records.validate(records.RESPONSE, {"model": "'=cmd()", "text": "t", "scores": {}},
                         path="r.json")


def test_names_are_normalised() -> None:
    assert records.clean_name("  GPT  4 ") == "GPT 4"
    assert records.clean_name("Cafe\u0301") == "Caf\u00e9"  # NFC
    assert records.clean_name("Mod\u00e8le") == "Mod\u00e8le"


def test_text_line_ends_are_normalised_and_tabs_kept() -> None:
    assert records.clean_text("a\r\nb\rc\td") == "a\nb\nc\td"
    for bad in ("a\x00", "a\x1b[31m", "a\ud800", "a\x7f"):
        with pytest.raises(Exception, match="control character"):
            records.clean_text(bad)


@pytest.mark.parametrize("value", [3.0, True, None, [3], "3.5", {"id": 3}])
def test_json_numbers_must_be_whole(value: Any) -> None:
    question = {"meeting": "m", "number": value, "question_type": "who",
                "answer_position": "B", "text": "t", "reference": "r"}
    with pytest.raises(DataFileError, match="not a whole number|missing"):
        records.validate(records.QUESTION, question, path="q.json")


def test_a_large_json_integer_score_is_refused_without_overflow() -> None:
    response = {"model": "m", "text": "t", "scores": {"gpt-4": 10**400}}
    with pytest.raises(DataFileError, match="outside 1..10"):
        records.validate(records.RESPONSE, response, path="r.json")


CELLS = st.one_of(
    st.text(max_size=12), st.sampled_from(["", " ", "3", "-1", "2147483648", "6.5", "1e1",
                                            "nan", "dev", "qa", "st", "who", "B", "GPT-4"]),
)


@settings(max_examples=300, derandomize=True, database=None)
@given(st.fixed_dictionaries({k: CELLS for k in ROW}))
def test_the_fast_checker_agrees_with_the_model(row: dict[str, str]) -> None:
    """The column-wise, cached checker gives exactly the pydantic model's answer."""
    try:
        expected = records.SCORE_ROW.validate_python(row)
    except Exception:
        with pytest.raises(DataFileError):
            records.check_score_rows([row], path="s.csv")
        return
    assert records.check_score_rows([row], path="s.csv") == [expected]


def test_an_annotators_comment_is_clean_text() -> None:
    from elitr_core.errors import UserError

    assert records.check_options(records.COMMENT, "ok\r\nfine", what="comment") == "ok\nfine"
    with pytest.raises(UserError) as info:
        records.check_options(records.COMMENT, "a\x00", what="comment")
    assert str(info.value) == ("comment 'a\\x00' holds the control character U+0000 at "
                               "character 2: remove it")
