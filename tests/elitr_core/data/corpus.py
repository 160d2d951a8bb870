"""The hostile-input corpus (issue 19): inputs an attacker or a careless export would send.

Each :class:`Case` writes some files and runs one CLI command against a small stored benchmark
(:func:`base_files`). Expected: one line ``error: ...`` holding ``expected``, exit 2 and every
table unchanged; or, for a documented acceptance (``expected`` is None), exit 0 and every table
unchanged too, because the input normalises to what is already stored (``GPT-4 `` is
``GPT-4``, an NFD name is its NFC form, a BOM or CRLF line ends change nothing).

``CASES`` is the list the test runs; other suites append their own cases to it (the CLI's error
boundary adds its cases here too).
"""

from __future__ import annotations

import copy
import io
import json
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Command line of a case: (its folder, the files written there, database URL) -> argv.
Argv = Callable[[Path, list[Path], str], list[str]]


def import_argv(folder: Path, paths: list[Path], url: str) -> list[str]:
    return ["import", *map(str, paths), "--db", url]


@dataclass(frozen=True)
class Case:
    """One hostile input: files to write (name -> bytes), the command, the expected refusal."""

    name: str
    files: dict[str, bytes]
    expected: str | None
    argv: Argv = import_argv


QUESTIONS_DEV = "elitr-bench-qa_dev.json"
CONV_DEV = "elitr-bench-conv_dev.json"
QUESTIONS_TEST2 = "elitr-bench-qa_test2.json"
RESPONSES_DEV = "elitr-bench-qa_dev_st_gpt-4-eval.json"
RESPONSES_TEST2 = "elitr-bench-qa_test2_st_all-eval.json"
NFC_MODEL = "Mod\u00e8le-7B"


def _question(number: int, text: str) -> dict[str, Any]:
    return {"id": str(number), "question-type": "who", "answer-position": "B",
            "question": text, "groundtruth-answer": f"reference {number}"}


def questions(split: str, conv: bool = False) -> dict[str, Any]:
    """A small questions file: two meetings of the split (two questions, then one)."""
    ask = "So, who {}?" if conv else "Who {}?"
    return {"split": split, "meetings": [
        {"id": f"meeting_en_{split}_001", "questions": [_question(1, ask.format("spoke")),
                                                         _question(2, ask.format("left"))]},
        {"id": f"meeting_en_{split}_002", "questions": [_question(1, ask.format("came"))]}]}


def responses(split: str, scores: tuple[str, ...] = ("gpt-4-eval_score",)) -> dict[str, Any]:
    """A responses file: two models answering every question of :func:`questions`."""
    data = questions(split)
    for meeting in data["meetings"]:
        for q in meeting["questions"]:
            q["generated-responses"] = [
                {"model": model, "generated-response": f"{model} says\n{q['id']}",
                 **{key: str(3 + i) for key in scores}}
                for i, model in enumerate(("GPT-4", NFC_MODEL))]
    return data


ALL_SCORES = ("gpt-4-eval_score", "prometheus-eval_score", "gold-human-eval_score",
              "silver-human-eval_score")


def dump(data: Any) -> bytes:
    """UTF-8 JSON; a lone surrogate (which UTF-8 cannot hold) is written as a ``\\ud800``
    escape, as a hostile file would."""
    text = json.dumps(data, ensure_ascii=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(data).encode()


def base_files() -> dict[str, bytes]:
    """What the stored benchmark of every case holds (imported once per backend)."""
    return {QUESTIONS_DEV: dump(questions("dev")), CONV_DEV: dump(questions("dev", True)),
            QUESTIONS_TEST2: dump(questions("test2")),
            RESPONSES_DEV: dump(responses("dev")),
            RESPONSES_TEST2: dump(responses("test2", ALL_SCORES))}


def zipped(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")  # "Duplicate name": the point of one case
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _first_response(data: dict[str, Any]) -> dict[str, Any]:
    return data["meetings"][0]["questions"][0]["generated-responses"][0]


def response_with(key: str, value: Any) -> bytes:
    """The stored dev responses with one field of the first response changed."""
    data = responses("dev")
    _first_response(data)[key] = value
    return dump(data)


def question_with(key: str, value: Any, *, kind: str = "responses") -> bytes:
    """The dev responses (or questions) file with one field of its first question changed."""
    data = responses("dev") if kind == "responses" else questions("dev")
    data["meetings"][0]["questions"][0][key] = value
    return dump(data)


def raw_json(text: str, name: str = RESPONSES_DEV) -> dict[str, bytes]:
    return {name: text.encode()}


CASES: list[Case] = []


def case(name: str, files: dict[str, bytes], expected: str | None, **kw: Any) -> None:
    CASES.append(Case(name, files, expected, **kw))


# --- names: invisible, bidirectional, control, overlong, wrong type -------------------------
INVISIBLE = {"zero width space": "\u200b", "right-to-left override": "\u202e",
             "byte-order mark": "\ufeff", "word joiner": "\u2060", "soft hyphen": "\u00ad",
             "zero width joiner": "\u200d", "left-to-right mark": "\u200e",
             "arabic letter mark": "\u061c", "left-to-right isolate": "\u2066",
             "combining grapheme joiner": "\u034f", "variation selector": "\ufe0f",
             "tag letter": "\U000e0041", "hangul filler": "\u3164", "mongolian vs": "\u180b"}
for label, char in INVISIBLE.items():
    code = f"U+{ord(char):04X}"
    case(f"model with {label}", {RESPONSES_DEV: response_with("model", f"GPT-4{char}")}, code)
    _data = responses("dev")
    _data["meetings"][0]["id"] = f"meeting_en_dev_001{char}"
    case(f"meeting id with {label}", {RESPONSES_DEV: dump(_data)}, code)
for label, char in {"NUL": "\x00", "newline": "\n", "tab": "\t", "escape": "\x1b",
                    "DEL": "\x7f", "C1 NEL": "\x85", "no-break space": "\u00a0",
                    "ideographic space": "\u3000", "line separator": "\u2028",
                    "paragraph separator": "\u2029", "private use": "\ue000",
                    "lone surrogate": "\ud800"}.items():
    case(f"model with {label}", {RESPONSES_DEV: response_with("model", f"GPT{char}4")},
         f"U+{ord(char):04X}")
for label, value, expected in [
    ("empty model", "", "is empty"), ("blank model", "   ", "is empty"),
    ("model of 129 characters", "m" * 129, "129 characters, more than the 128"),
    ("model of 100,000 characters", "m" * 100_000, "more than the 128"),
    ("model a number", 4, "should be a text"), ("model a float", 4.5, "should be a text"),
    ("model true", True, "should be a text"), ("model null", None, "missing model"),
    ("model a list", ["GPT-4"], "should be a text"), ("model an object", {"n": 1},
                                                      "should be a text"),
    ("model in the export's formula escape", "'=HYPERLINK(1)", "formula escape"),
]:
    case(label, {RESPONSES_DEV: response_with("model", value)}, expected)

# --- response texts -------------------------------------------------------------------------
for label, value, expected in [
    ("response with NUL", "a\x00b", "U+0000"), ("response with lone surrogate", "a\udfff",
                                                 "lone surrogate"),
    ("response with ANSI escape", "\x1b[31mred", "U+001B"), ("response with DEL", "a\x7f",
                                                             "U+007F"),
    ("response with backspace", "a\x08", "U+0008"), ("response with form feed", "a\x0c",
                                                     "U+000C"),
    ("response a number", 5, "should be a text"), ("response a list", ["a"], "should be a text"),
    ("response an object", {"t": "a"}, "should be a text"),
    ("response null", None, "missing generated-response"),
    ("response over the text limit", "x" * 2_000_001, "more than the 2,000,000"),
]:
    case(label, {RESPONSES_DEV: response_with("generated-response", value)}, expected)

# --- scores: overflowing, non-finite, wrong types ---------------------------------------------
for label, value, expected in [
    ("score 11", "11", "outside 1..10"), ("score 0", 0, "outside 1..10"),
    ("score 0.999", "0.999", "outside 1..10"), ("score 10.0001", 10.0001, "outside 1..10"),
    ("score -5", "-5", "outside 1..10"), ("score 1e400", "1e400", "outside 1..10"),
    ("score of 400 digits (string)", "9" * 400, "outside 1..10"),
    ("score of 400 digits (integer)", 10 ** 399, "outside 1..10"),
    ("score 1e308", 1e308, "outside 1..10"), ("score 10**20", 10 ** 20, "outside 1..10"),
    ("score 'nan'", "nan", "not a number"), ("score 'inf'", "inf", "not a number"),
    ("score 'Infinity'", "Infinity", "not a number"), ("score true", True, "not a number"),
    ("score false", False, "not a number"), ("score null", None, "not a number"),
    ("score a list", [5], "not a number"), ("score an object", {"v": 5}, "not a number"),
    ("score empty", "", "not a number"), ("score blank", "  ", "not a number"),
    ("score with comma", "6,8", "not a number"), ("score 6.8.1", "6.8.1", "not a number"),
    ("score hex", "0x5", "not a number"), ("score arabic digit", "\u0665", "not a number"),
    ("score with underscore", "1_0", "not a number"), ("score five", "five", "not a number"),
    ("score fullwidth digit", "\uff15", "not a number"),
]:
    case(label, {RESPONSES_DEV: response_with("gpt-4-eval_score", value)}, expected)
for literal in ("NaN", "Infinity", "-Infinity"):
    case(f"score literal {literal}",
         {RESPONSES_DEV: dump(responses("dev")).replace(b'"gpt-4-eval_score": "3"',
                                                        f'"gpt-4-eval_score": {literal}'.encode(),
                                                        1)}, "not valid JSON")

# --- question ids: overflowing, floats for ints, booleans -------------------------------------
for label, value, expected in [
    ("question id 2**63", 2 ** 63, "above 2,147,483,647"),
    ("question id 2**31", str(2 ** 31), "above 2,147,483,647"),
    ("question id of 30 digits", "9" * 30, "more digits"),
    ("question id -1", -1, "below 0"), ("question id 3.0", 3.0, "not a whole number"),
    ("question id '3.0'", "3.0", "not a whole number"), ("question id 1e3", 1e3,
                                                         "not a whole number"),
    ("question id true", True, "not a whole number"), ("question id null", None,
                                                       "not a whole number"),
    ("question id empty", "", "not a whole number"), ("question id abc", "abc",
                                                      "not a whole number"),
    ("question id superscript two", "\u00b2", "not a whole number"),
    ("question id arabic digit", "\u0663", "not a whole number"),
    ("question id with underscore", "1_0", "not a whole number"),
    ("question id a list", [1], "not a whole number"),
]:
    case(label, {RESPONSES_DEV: question_with("id", value)}, expected)
for label, key, value, expected in [
    ("question-type why", "question-type", "why", "not one of who"),
    ("question-type null", "question-type", None, "not one of who"),
    ("answer-position X", "answer-position", "X", "not one of B"),
    ("answer-position number", "answer-position", 1, "not one of B"),
    ("question text NUL", "question", "Who\x00?", "U+0000"),
    ("question text a number", "question", 7, "should be a text"),
    ("reference null", "groundtruth-answer", None, "should be a text"),
    ("reference lone surrogate", "groundtruth-answer", "a\ud800", "lone surrogate"),
]:
    case(label, {QUESTIONS_DEV: question_with(key, value, kind="questions")}, expected)

# --- meeting ids, splits ----------------------------------------------------------------------
def _meeting_id(value: Any) -> bytes:
    data = questions("dev")
    data["meetings"][1]["id"] = value
    return dump(data)


for label, value, expected in [
    ("meeting id empty", "", "is empty"), ("meeting id a number", 7, "should be a text"),
    ("meeting id null", None, "should be a text"), ("meeting id of 65 characters", "m" * 65,
                                                    "more than the 64"),
    ("meeting id with NUL", "meeting\x00", "U+0000"),
    ("test2 meeting id in a dev file", "meeting_en_test2_009", "is a test2 meeting"),
]:
    case(label, {QUESTIONS_DEV: _meeting_id(value)}, expected)
_mixed = questions("dev")
_mixed["meetings"][1]["id"] = "meeting_extra_001"
case("one meeting in a dev and a test2 file", {
    QUESTIONS_TEST2: dump({"split": "test2", "meetings": [
        {"id": "meeting_extra_001", "questions": [_question(1, "Who?")]}]}),
    QUESTIONS_DEV: dump(_mixed)}, "split 'dev' disagrees with 'test2'")
_test2_in_dev = responses("dev")
_test2_in_dev["meetings"][0]["id"] = "meeting_en_test2_001"
case("dev responses file holding a test2 meeting", {RESPONSES_DEV: dump(_test2_in_dev)},
     "is a test2 meeting")
case("split inside disagrees with the name", {RESPONSES_DEV: dump(
    {**responses("dev"), "split": "test2"})}, "does not match the file name")

# --- structure, encodings, sizes --------------------------------------------------------------
for label, text, expected in [
    ("top level a list", "[]", "missing key 'meetings'"),
    ("meetings an object", '{"meetings": {}}', "'meetings' should be a list"),
    ("meeting a string", '{"meetings": ["m"]}', "missing key 'id'"),
    ("questions missing", '{"meetings": [{"id": "meeting_en_dev_001"}]}',
     "missing key 'questions'"),
    ("generated-responses an object", json.dumps({"meetings": [{"id": "meeting_en_dev_001",
     "questions": [{**_question(1, "Who spoke?"), "generated-responses": {}}]}]}),
     "'generated-responses' should be a list"),
    ("response a string", json.dumps({"meetings": [{"id": "meeting_en_dev_001", "questions": [
        {**_question(1, "Who spoke?"), "generated-responses": ["GPT-4"]}]}]}),
     "should be an object"),
    ("empty file", "", "malformed JSON"), ("truncated", dump(responses("dev")).decode()[:200],
                                          "malformed JSON"),
    ("nested 100,000 levels", "[" * 100_000 + "]" * 100_000, "nested 100000 levels"),
    ("repeated key in an object", '{"meetings": [], "meetings": [{"id": "x"}]}',
     "key 'meetings' appears twice"),
    ("repeated score key", dump(responses("dev")).decode().replace(
        '"gpt-4-eval_score": "3"', '"gpt-4-eval_score": "3", "gpt-4-eval_score": "9"', 1),
     "key 'gpt-4-eval_score' appears twice"),
]:
    case(label, raw_json(text), expected)
case("UTF-16 file", {RESPONSES_DEV: json.dumps(responses("dev")).encode("utf-16")},
     "not UTF-8")
case("Latin-1 file", {RESPONSES_DEV: dump(responses("dev")).decode().encode("latin-1")},
     "not UTF-8")
case("not an ELITR-Bench file name", {"answers.json": dump(responses("dev"))},
     "not an ELITR-Bench file name")
case("a folder instead of a file", {}, "is a folder",
     argv=lambda folder, paths, url: ["import", str(folder), "--db", url])
case("a missing file", {}, "no such file",
     argv=lambda folder, paths, url: ["import", str(folder / "nowhere" / QUESTIONS_DEV),
                                      "--db", url])

# --- duplicated, disagreeing, overwriting (item 2) --------------------------------------------
_twice = responses("dev")
_twice["meetings"][0]["questions"][0]["generated-responses"].append(
    copy.deepcopy(_first_response(_twice)))
case("same model twice for one question", {RESPONSES_DEV: dump(_twice)}, "appears twice")
_q_twice = questions("dev")
_q_twice["meetings"][0]["questions"].append(_question(1, "Who spoke?"))
case("same question twice in a file", {QUESTIONS_DEV: dump(_q_twice)}, "appears twice")
case("questions file replacing a stored text", {QUESTIONS_DEV: question_with(
    "question", "Who really spoke?", kind="questions")}, "pass --replace")
case("questions file replacing a stored reference", {QUESTIONS_DEV: question_with(
    "groundtruth-answer", "another reference", kind="questions")}, "pass --replace")
case("questions file changing a question type", {QUESTIONS_DEV: question_with(
    "question-type", "what", kind="questions")}, "pass --replace")
case("responses file replacing a stored response", {RESPONSES_DEV: response_with(
    "generated-response", "rewritten")}, "pass --replace")
case("responses file replacing a stored score", {RESPONSES_DEV: response_with(
    "gpt-4-eval_score", "9")}, "pass --replace")
case("two files disagreeing on a response", {
    RESPONSES_DEV: response_with("generated-response", "one"),
    "again/" + RESPONSES_DEV: response_with("generated-response", "two")}, "disagrees with")
case("two files disagreeing on a score", {
    "new/" + RESPONSES_DEV: dump(responses("dev")).replace(b"GPT-4", b"New-Model"),
    "newer/" + RESPONSES_DEV: dump(responses("dev")).replace(b"GPT-4", b"New-Model")
    .replace(b'"gpt-4-eval_score": "3"', b'"gpt-4-eval_score": "4"', 1)}, "disagrees with")
case("ZIP holding one member twice", {"twice.zip": zipped(
    [(RESPONSES_DEV, dump(responses("dev"))), (RESPONSES_DEV, response_with("model", "X"))])},
    "appears twice")
case("ZIP holding one file name in two folders", {"folders.zip": zipped(
    [("a/" + RESPONSES_DEV, dump(responses("dev"))), ("b/" + RESPONSES_DEV,
                                                      dump(responses("dev")))])},
    "appears twice")
case("ZIP with no benchmark file", {"empty.zip": zipped([("notes.txt", b"hello")])},
     "holds no ELITR-Bench JSON file")
case("ZIP that is not a ZIP", {"fake.zip": b"PK\x03\x04 not really"}, "not a readable ZIP")
case("responses file whose question type is not the stored one", {RESPONSES_DEV: question_with(
    "question-type", "when")}, "question-type 'when' disagrees with the stored question's")
case("responses file whose answer position is not the stored one", {
    RESPONSES_DEV: question_with("answer-position", "E")}, "answer-position 'E' disagrees")
case("responses and questions files disagreeing on a question type", {
    QUESTIONS_DEV: question_with("question-type", "what", kind="questions"),
    RESPONSES_DEV: question_with("question-type", "when")}, "disagrees with")
case("response to an unknown question", {RESPONSES_DEV: question_with("id", "99")},
     "unknown question id 99")

# --- documented acceptances: the input normalises to what is stored ---------------------------
for label, value in [("model with surrounding spaces", " GPT-4 "),
                     ("model with a tab and a newline around it", "\tGPT-4\n")]:
    case(f"accepted: {label}", {RESPONSES_DEV: response_with("model", value)}, None)
_nfd = responses("dev")
for _meeting in _nfd["meetings"]:
    for _q in _meeting["questions"]:
        _q["generated-responses"][1]["model"] = "Mode\u0300le-7B"
case("accepted: NFD model name stored as its NFC form", {RESPONSES_DEV: dump(_nfd)}, None)
case("accepted: UTF-8 byte-order mark", {RESPONSES_DEV: b"\xef\xbb\xbf" + dump(
    responses("dev"))}, None)
case("accepted: the same files again", base_files(), None)
case("accepted: integer scores and ids", {RESPONSES_DEV: dump(responses("dev")).replace(
    b'"3"', b"3").replace(b'"id": "2"', b'"id": 2')}, None)
case("accepted: CRLF line ends in texts", {RESPONSES_DEV: response_with(
    "generated-response", "GPT-4 says\r\n1")}, None)
case("accepted: a conv file's own reference does not replace the QA one", {
    CONV_DEV: dump(questions("dev", True)).replace(b"reference 1", b"conv reference 1")}, None)

# --- scores CSV rows (the columns of `export scores`) -----------------------------------------
SCORES_CSV = "scores.csv"
CSV_HEADER = ("meeting", "question_id", "split", "setting", "mode", "seed", "model",
              "question_type", "answer_position", "evaluator", "annotator", "sample", "score")
#: A row that repeats a stored score (GPT-4's gpt-4 score of dev meeting 1 question 1).
CSV_ROW = {"meeting": "meeting_en_dev_001", "question_id": "1", "split": "dev",
           "setting": "qa", "mode": "st", "seed": "", "model": "GPT-4", "question_type": "who",
           "answer_position": "B", "evaluator": "gpt-4", "annotator": "", "sample": "0",
           "score": "3"}


def csv_file(*rows: dict[str, str], header: tuple[str, ...] = CSV_HEADER) -> bytes:
    def cell(value: str) -> str:
        return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\r\n') \
            else value

    lines = [",".join(header)] + [",".join(cell(row.get(c, "")) for c in header) for row in rows]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


for column, value, expected in [
    ("question_id", str(2 ** 63), "above 2,147,483,647"), ("question_id", "1.0",
                                                            "not a whole number"),
    ("question_id", "-1", "below 0"), ("question_id", "", "not a whole number"),
    ("seed", "1" + "0" * 23, "more digits"), ("seed", str(2 ** 31), "above 2,147,483,647"),
    ("seed", "-1", "below 0"), ("seed", "2.5", "not a whole number"),
    ("sample", "-5", "below 0"), ("sample", "true", "not a whole number"),
    ("sample", str(2 ** 40), "above 2,147,483,647"),
    ("score", "9" * 400, "outside 1..10"), ("score", "nan", "not a number"),
    ("score", "-inf", "not a number"), ("score", "", "not a number"),
    ("score", "10.5", "outside 1..10"), ("score", "=1+1", "not a number"),
    ("model", "GPT-4\u200b", "U+200B"), ("model", "x" * 129, "more than the 128"),
    ("model", "", "is empty"), ("model", "\u202eGPT-4", "U+202E"),
    ("evaluator", "gpt-4\ufeff", "U+FEFF"), ("evaluator", "e" * 65, "more than the 64"),
    ("annotator", "ann\u2066", "U+2066"), ("annotator", "a" * 129, "more than the 128"),
    ("annotator", "ann\x00", "U+0000"), ("meeting", "meeting_en\u00a0dev_001", "U+00A0"),
    ("split", "train", "not one of dev, test2"), ("setting", "QA", "not one of qa, conv"),
    ("mode", "both", "not one of st, mt, int2, int3"), ("question_type", "why", "not one of who"),
    ("answer_position", "Z", "not one of B"), ("model", "GPT\ud800", "not UTF-8"),
]:
    case(f"scores CSV {column} {value[:20]!r}", {SCORES_CSV: csv_file(
        CSV_ROW, {**CSV_ROW, column: value})}, expected)
for label, data, expected in [
    ("header repeated", csv_file(CSV_ROW, header=(*CSV_HEADER, "score")), "appears twice"),
    ("header missing score", csv_file(CSV_ROW, header=CSV_HEADER[:-1]), "missing column"),
    ("more cells than the header", csv_file(CSV_ROW)[:-1] + b",extra\n", "more cells"),
    ("fewer cells than the header", b",".join(csv_file(CSV_ROW).split(b",")[:-2]) + b"\n",
     "fewer cells"),
    ("UTF-16", csv_file(CSV_ROW).decode().encode("utf-16"), "not UTF-8"),
    # (the release's gpt-4: a CSV only repeats its scores, never changes one, --replace or not)
    ("a stored score changed", csv_file({**CSV_ROW, "score": "9"}),
     "line 2: evaluator 'gpt-4' holds the ELITR-Bench release's llm scores"),
    ("the same score twice, disagreeing", csv_file({**CSV_ROW, "score": "4"},
                                                   {**CSV_ROW, "score": "5"}), "appears twice"),
    ("a score of an unknown question", csv_file({**CSV_ROW, "question_id": "77"}),
     "unknown question id 77"),
    ("a score of an unknown model", csv_file({**CSV_ROW, "model": "Nobody"}),
     "no stored response"),
    ("a question type other than the stored one", csv_file({**CSV_ROW, "question_type": "what"}),
     "question_type 'what' disagrees with the stored question 1"),
    ("an answer position other than the stored one", csv_file(
        {**CSV_ROW, "answer_position": "E"}), "answer_position 'E' disagrees"),
    ("two rows giving one question two types", csv_file(
        CSV_ROW, {**CSV_ROW, "evaluator": "other", "question_type": "when"}),
     "line 3: question_type 'when' disagrees"),
    ("a score of a test2 meeting filed as dev", csv_file(
        {**CSV_ROW, "meeting": "meeting_en_test2_001"}), "no stored response"),
]:
    case(f"scores CSV {label}", {SCORES_CSV: data}, expected)
case("accepted: scores CSV repeating a stored score", {SCORES_CSV: csv_file(CSV_ROW)}, None)
case("accepted: scores CSV with a BOM and CRLF", {SCORES_CSV: b"\xef\xbb\xbf" + csv_file(
    CSV_ROW).replace(b"\n", b"\r\n")}, None)
case("accepted: scores CSV with spaces around a name", {SCORES_CSV: csv_file(
    {**CSV_ROW, "model": " GPT-4 "})}, None)
case("accepted: scores CSV without the question facets", {SCORES_CSV: csv_file(
    {**CSV_ROW, "question_type": "", "answer_position": ""})}, None)


# --- transcripts ------------------------------------------------------------------------------
def transcripts_argv(folder: Path, paths: list[Path], url: str) -> list[str]:
    return ["transcripts", str(folder / "corpus"), "--db", url]


TRANSCRIPT = "corpus/dev/meeting_en_dev_001/transcript_MAN01.txt"
for label, data, expected in [
    ("with NUL", b"(PERSON1) Hello\x00", "U+0000"),
    ("with an escape sequence", b"(PERSON1) \x1b[2J", "U+001B"),
    ("not UTF-8", b"(PERSON1) caf\xe9", "not UTF-8"),
    ("with an encoded lone surrogate", b"(PERSON1) \xed\xa0\x80", "not UTF-8"),
    ("empty", b"  \n", "empty transcript"),
]:
    case(f"transcript {label}", {TRANSCRIPT: data}, expected, argv=transcripts_argv)
case("transcripts of a folder without meetings", {"corpus/readme.txt": b"x"},
     "no benchmark meeting folder found", argv=transcripts_argv)


# --- options a command stores -----------------------------------------------------------------
def cli(*args: str) -> Argv:
    return lambda folder, paths, url: [*args, "--db", url]


for label, args, expected in [
    ("annotator name with a bidi override", ("annotator", "add", "--name", "ann\u202ex",
                                             "--pool", "gold"), "U+202E"),
    ("annotator name of 129 characters", ("annotator", "add", "--name", "a" * 129, "--pool",
                                          "gold"), "more than the 128"),
    ("study name with a zero width space", ("study", "create", "--name", "s\u200b", "--pool",
                                            "gold", "--per-item", "1"), "U+200B"),
    ("study seed 10**23", ("study", "create", "--name", "s", "--pool", "gold", "--per-item",
                           "1", "--seed", str(10 ** 23)), "above 2,147,483,647"),
    ("study per-item 2**31", ("study", "create", "--name", "s", "--pool", "gold",
                              "--per-item", str(2 ** 31)), "above 2,147,483,647"),
    ("study name too long for its pool slug", ("study", "create", "--name", "s" * 60,
                                               "--pool", "silver", "--per-item", "1"),
     "more than the 64"),
    ("exclusion reason of 600 characters", ("study", "exclude", "s", "--annotator", "a",
                                            "--reason", "r" * 600), "more than the 512"),
    ("exclusion reason with an escape sequence", ("study", "exclude", "s", "--annotator", "a",
                                                  "--reason", "\x1b[2J"), "U+001B"),
    ("study filter naming an invisible model", ("study", "create", "--name", "s", "--pool",
                                                "gold", "--per-item", "1", "--models",
                                                "GPT-4\u2060"), "U+2060"),
]:
    case(f"option: {label}", {}, expected, argv=cli(*args))


# --- issue 27 item 11: archives and CSVs judged by what they are, not their names -----------
def _with_method(archive: bytes, method: int, flags: int = 0) -> bytes:
    """``archive`` with its (one) member's compression method and flag bits rewritten in the
    local and the central header, as WinZip (AES: 99) or a newer zip (zstd: 93) writes."""
    data = bytearray(archive)
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.index(signature) + offset
        data[at:at + 2] = (int.from_bytes(data[at:at + 2], "little") | flags).to_bytes(2, "little")
        data[at + 2:at + 4] = method.to_bytes(2, "little")
    return bytes(data)


_ONE_MEMBER = zipped([(RESPONSES_DEV, dump(responses("dev")))])
case("JSON with a ZIP appended, named .zip", {"elitr-bench.zip": dump(responses("dev")) +
                                              _ONE_MEMBER}, "does not start as one")
case("ZIP member AES-encrypted", {"elitr-bench.zip": _with_method(_ONE_MEMBER, 99, 1)},
     "AES-encrypted")
case("ZIP member of compression method 93 (zstd)", {"elitr-bench.zip": _with_method(
    _ONE_MEMBER, 93)}, "compression method 93")
case("scores CSV of only its header", {SCORES_CSV: csv_file()}, "holds no scores")


# --- the CLI's error boundary: its cases live with its tests ---------------------------------
from tests.elitr_core.cli import boundary_cases  # noqa: E402,F401  (appends its cases)
