"""Reading ELITR-Bench files: the encrypted archives, benchmark and generated-response JSON.

Parsing is separate from storing (``importers``): this module turns bytes into validated
records and raises :class:`DataFileError` naming the file and what is wrong.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elitr_core.data import records
from elitr_core.data.strict import refuse_duplicates
from elitr_core.data.validation import (
    MAX_ARCHIVE_BYTES,
    load_json,
    open_archive,
    read_bytes,
    read_member,
)
from elitr_core.errors import DataFileError
from elitr_core.vocab import REFUSED_PAIRS, SPLITS

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = PROJECT_ROOT / "data"
ARCHIVE_PASSWORD = b"utter"
BUNDLED_ARCHIVES: tuple[str, ...] = ("data.zip", "czech.zip", "generated-responses.zip")


#: Score keys of the generated-response files -> evaluator slugs.
EVALUATOR_KEYS: dict[str, str] = {
    "gpt-4-eval_score": "gpt-4",
    "prometheus-eval_score": "prometheus",
    "gold-human-eval_score": "gold-human",
    "silver-human-eval_score": "silver-human",
}

_QUESTIONS_NAME = re.compile(
    r"^elitr-bench-(?P<czech>czech-)?(?P<setting>qa|conv)_(?P<split>dev|test2)$"
)
_RESPONSES_NAME = re.compile(
    r"^elitr-bench-(?P<setting>qa|conv)_(?P<split>dev|test2)_(?P<mode>st|mt)_(?P<evalset>[\w.-]+)$"
)


@dataclass(frozen=True)
class QuestionRecord:
    """One question as written in a benchmark file."""

    meeting: str
    number: int
    question_type: str
    answer_position: str
    text: str
    reference: str


@dataclass(frozen=True)
class ResponseRecord:
    """One generated response with the scores the file carries (evaluator slug -> 1..10)."""

    meeting: str
    number: int
    model: str
    text: str
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class BenchmarkFile:
    """A parsed benchmark file: questions (``kind == "questions"``) or responses."""

    name: str
    kind: str
    setting: str
    split: str
    language: str = "en"
    mode: str | None = None
    eval_set: str | None = None
    meetings: list[str] = field(default_factory=list)
    questions: list[QuestionRecord] = field(default_factory=list)
    responses: list[ResponseRecord] = field(default_factory=list)
    #: where it was read (path, or archive:member), named when it disagrees with another file
    source: str = ""


def iter_archive(path: Path, password: bytes = ARCHIVE_PASSWORD) -> Iterator[tuple[str, bytes]]:
    """Yield ``(member name, bytes)`` of the JSON files of a (password-protected) ZIP, in place.

    Each member is streamed with a size cap (``validation.read_member``), never loaded whole.

    Raises
    ------
    DataFileError
        When the file is not a ZIP, the password is wrong or a member is too large.
    """
    budget = [MAX_ARCHIVE_BYTES]
    with open_archive(path) as archive:
        members = [i for i in archive.infolist() if not i.is_dir()
                   and i.filename.endswith(".json") and "__MACOSX" not in i.filename]
        # two members of one name (or one file name in two folders): never last-wins
        refuse_duplicates(((Path(i.filename).name, f"member {i.filename!r}") for i in members
                           if classify(i.filename) is not None),
                          path=path, describe=lambda name: f"archive file {name!r}")
        for info in sorted(members, key=lambda i: i.filename):
            name = info.filename
            try:
                yield name, read_member(archive, info, where=path, budget=budget,
                                        password=password)
            except RuntimeError as exc:  # zipfile raises RuntimeError for a bad password
                raise DataFileError(
                    path, f"cannot decrypt {name}: wrong ZIP password? ({exc})"
                ) from None
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError,
                    NotImplementedError, zlib.error) as exc:  # zlib: damaged deflate data
                raise DataFileError(path, f"damaged archive member {name}: {exc}") from None


def classify(name: str) -> dict[str, str] | None:
    """What a benchmark file is, from its name; None for names that are not ELITR-Bench files."""
    stem = Path(name).name.removesuffix(".json")
    match = _QUESTIONS_NAME.match(stem)
    if match:
        return {
            "kind": "questions",
            "setting": match["setting"],
            "split": match["split"],
            "language": "cs" if match["czech"] else "en",
        }
    match = _RESPONSES_NAME.match(stem)
    if match:
        return {"kind": "responses", "language": "en", **match.groupdict()}
    return None


def _require(obj: Any, key: str, kind: type, *, where: str, path: object) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DataFileError(path, f"{where}: missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind):
        raise DataFileError(path, f"{where}: {key!r} should be a {kind.__name__}")
    return value


#: The files' own key names, for messages about a record's fields.
_QUESTION_KEYS = {"question_type": "question-type", "answer_position": "answer-position",
                  "text": "question", "reference": "groundtruth-answer", "number": "id",
                  "meeting": "meeting id"}
_RESPONSE_KEYS = {"model": "model", "text": "generated-response", "scores": "",
                  **{slug: key for key, slug in EVALUATOR_KEYS.items()}}


def _fields(raw: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    """The record's fields present in ``raw`` (a JSON object keyed by the file's names)."""
    return {field: raw[key] for field, key in keys.items() if key in raw}


def _parse_question(raw: Any, meeting: str, path: object) -> QuestionRecord:
    where = f"meeting {meeting}"
    if not isinstance(raw, dict) or "id" not in raw:
        raise DataFileError(path, f"{where}: missing key 'id'")
    number = records.validate(records.QUESTION_NUMBER, raw["id"], path=path, where=where,
                              what="question id")
    checked = records.validate(
        records.QUESTION, {"meeting": meeting, **_fields(raw, _QUESTION_KEYS)}, path=path,
        where=f"{where} question {number}", labels=_QUESTION_KEYS)
    return QuestionRecord(**checked)


def _parse_responses(raw: Any, meeting: str, number: int, path: object) -> list[ResponseRecord]:
    where = f"meeting {meeting} question {number}"
    items = _require(raw, "generated-responses", list, where=where, path=path)
    found = []
    for index, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise DataFileError(path, f"{where} response {index}: should be an object")
        fields = {"model": item.get("model"), "text": item.get("generated-response"),
                  "scores": {slug: item[key] for key, slug in EVALUATOR_KEYS.items()
                             if key in item}}
        fields = {k: v for k, v in fields.items() if v is not None or k == "scores"}
        checked = records.validate(records.RESPONSE, fields, path=path,
                                   where=f"{where} response {index}", labels=_RESPONSE_KEYS)
        found.append(ResponseRecord(meeting, number, checked["model"], checked["text"],
                                    checked["scores"]))
    refuse_duplicates(((r.model, f"response {i}") for i, r in enumerate(found, start=1)),
                      path=path, describe=lambda model: f"{where}: model {model!r}")
    return found


_SPLIT_IN_ID = re.compile(r"(?:^|_)(" + "|".join(SPLITS) + r")(?:_|$)")


def _refuse_other_split(meeting: str, split: str, path: object) -> None:
    """A meeting id that names another split (``meeting_en_test2_001`` in a dev file)."""
    named = _SPLIT_IN_ID.search(meeting)
    if named and named.group(1) != split:
        raise DataFileError(
            path, f"meeting {meeting!r} is a {named.group(1)} meeting but the file is the "
            f"{split} split: put it in a {named.group(1)} file")


def parse_benchmark_file(name: str, data: bytes, *, path: object | None = None) -> BenchmarkFile:
    """Parse one ELITR-Bench JSON file (questions or generated responses).

    Raises
    ------
    DataFileError
        Malformed JSON, an unknown file name, a wrong shape, or a bad score.
    """
    where = path if path is not None else name
    info = classify(name)
    if info is None:
        raise DataFileError(
            where,
            "not an ELITR-Bench file name (expected elitr-bench-{qa,conv}_{dev,test2}.json, "
            "elitr-bench-czech-..., or elitr-bench-{qa,conv}_{split}_{st,mt}_{eval}.json)",
        )
    refused = REFUSED_PAIRS.get((info["setting"], info.get("mode", "")))
    if refused is not None:
        raise DataFileError(where, f"a {info['setting']}-{info['mode']} responses file: "
                            f"{refused}, so no run has them; generate refuses them too")
    content = load_json(data, where=where)
    meetings = _require(content, "meetings", list, where="top level", path=where)
    split = content.get("split", info["split"])
    if split != info["split"]:
        raise DataFileError(where, f"split {split!r} inside does not match the file name")
    parsed = BenchmarkFile(
        name=Path(name).name,
        kind=info["kind"],
        setting=info["setting"],
        split=info["split"],
        language=info["language"],
        mode=info.get("mode"),
        eval_set=info.get("evalset"),
        source=str(where),
    )
    for meeting_raw in meetings:
        if not isinstance(meeting_raw, dict) or "id" not in meeting_raw:
            raise DataFileError(where, "meeting: missing key 'id'")
        meeting = records.validate(records.MEETING_ID, meeting_raw["id"], path=where,
                                   what="meeting id")
        _refuse_other_split(meeting, parsed.split, where)
        parsed.meetings.append(meeting)
        for raw in _require(meeting_raw, "questions", list, where=f"meeting {meeting}", path=where):
            question = _parse_question(raw, meeting, where)
            parsed.questions.append(question)
            if parsed.kind == "responses":
                parsed.responses += _parse_responses(raw, meeting, question.number, where)
    refuse_duplicates(
        (((q.meeting, q.number), f"question entry {i}")
         for i, q in enumerate(parsed.questions, start=1)),
        path=where, describe=lambda key: f"meeting {key[0]} question {key[1]}",
    )
    return parsed


def read_path(path: Path, password: bytes = ARCHIVE_PASSWORD) -> Iterator[BenchmarkFile]:
    """Parse a JSON file or every ELITR-Bench JSON inside a ZIP archive."""
    if path.suffix.lower() == ".zip":
        for name, data in iter_archive(path, password):
            if classify(name) is not None:
                yield parse_benchmark_file(name, data, path=f"{path}:{name}")
        return
    yield parse_benchmark_file(path.name, read_bytes(path), path=path)


def bundled_files() -> list[BenchmarkFile]:
    """Every file of the bundled archives, questions first (responses refer to them)."""
    files = [f for archive in BUNDLED_ARCHIVES for f in read_path(DATA_DIR / archive)]
    return sorted(
        files, key=lambda f: (f.kind != "questions", f.language != "en", f.setting != "qa", f.name)
    )


def scores_frame(files: list[BenchmarkFile]) -> Any:
    """The long-format ``scores`` table (``elitr_core.vocab.SCORE_COLUMNS``) of parsed files, no db.

    A response that appears in several files (the ``all-eval`` and ``gpt-4-eval`` test2 files)
    counts once per evaluator, as in the database. Used by tests and benchmarks; the dashboard
    reads the same table from the database (``data.scores.scores_table``).
    """
    import pandas as pd

    from elitr_core.vocab import SCORE_COLUMNS

    questions = {
        (q.meeting, q.number): q
        for f in files
        if f.kind == "questions" and f.language == "en"
        for q in f.questions
    }
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    for f in files:
        if f.kind != "responses":
            continue
        for r in f.responses:
            q = questions.get((r.meeting, r.number))
            for slug, value in r.scores.items():
                key = (r.meeting, r.number, f.split, f.setting, f.mode, r.model, slug)
                rows[key] = {
                    "meeting": r.meeting,
                    "question_id": r.number,
                    "split": f.split,
                    "setting": f.setting,
                    "mode": f.mode,
                    "seed": None,
                    "model": r.model,
                    "question_type": q.question_type if q else None,
                    "answer_position": q.answer_position if q else None,
                    "evaluator": slug,
                    "annotator": None,
                    "sample": 0,
                    "score": value,
                }
    frame = pd.DataFrame(list(rows.values()), columns=list(SCORE_COLUMNS))
    frame["seed"] = frame["seed"].astype("Int64")
    return frame
