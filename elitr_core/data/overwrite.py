"""No silent overwrite and no silent last-wins in an import.

Two rules, applied before anything is written:

- **Within one import** (files, ZIP members, rows), the same record given twice with different
  values is refused, naming both places: :func:`refuse_disagreements`. The same record given
  twice with the same values is read once.
- **Against the database**, an import that would change a stored value (a question's text,
  type, answer position or reference, a translation, a response's text, a score) is refused,
  naming the stored record and both values, unless the user passes ``--replace``; then each
  replaced value is listed in the import report (``ImportReport.replaced``) and printed.
  Filling a value that was never stored (a Conv text, a new record) is not a replacement.

Policies that are not replacements: the reference answer of a question is its QA file's (the
ELITR-Bench Conv files phrase one reference differently); a Conv file sets it only for a
question it creates. A meeting stays in the split it was first stored in: a file of another
split that names it is refused, ``--replace`` or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from db import keyed
from db.models import Score
from db.scores import SCORE_KEY
from elitr_core.data.benchmark import BenchmarkFile
from elitr_core.data.report import ImportReport
from elitr_core.errors import DataFileError


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 50 else text[:40] + "...'"


def _question_facts(f: BenchmarkFile) -> Iterator[tuple[tuple[Any, ...], Any, str]]:
    for q in f.questions:
        place = f"{f.source or f.name} (meeting {q.meeting} question {q.number})"
        yield ("question", f.language, q.meeting, q.number, "question-type"), \
            q.question_type, place
        yield ("question", f.language, q.meeting, q.number, "answer-position"), \
            q.answer_position, place
        yield ("question", f.language, f.setting, q.meeting, q.number, "question"), q.text, place
        yield ("question", f.language, f.setting, q.meeting, q.number, "groundtruth-answer"), \
            q.reference, place


def _response_facts(f: BenchmarkFile) -> Iterator[tuple[tuple[Any, ...], Any, str]]:
    for r in f.responses:
        run = (f.split, f.setting, f.mode, r.model, r.meeting, r.number)
        place = f"{f.source or f.name} (meeting {r.meeting} question {r.number} model {r.model})"
        yield ("response", *run), r.text, place
        for slug, value in r.scores.items():
            yield ("score", *run, slug), value, place


_FACETS = ("question-type", "answer-position")


def refuse_disagreements(files: Iterable[BenchmarkFile]) -> None:
    """Refuse two files of one import that give one record different values.

    Raises
    ------
    DataFileError
        Naming the record, both values and both places.
    """
    seen: dict[tuple[Any, ...], tuple[Any, str]] = {}
    for f in files:
        splits = ((("meeting", m, "split"), f.split, f"{f.source or f.name} (meeting {m})")
                  for m in f.meetings)
        # a responses file repeats its questions: their type and position must agree
        facts = _question_facts(f) if f.kind == "questions" else (
            *(fact for fact in _question_facts(f) if fact[0][-1] in _FACETS),
            *_response_facts(f))
        for key, value, place in (*splits, *facts):
            if key not in seen:
                seen[key] = (value, place)
                continue
            first, where = seen[key]
            if first != value:
                what = key[-1] if key[0] in ("question", "meeting") else key[0]
                raise DataFileError(
                    place, f"{what} {_shown(value)} disagrees with {_shown(first)} in "
                    f"{where}: make the files agree or import them separately")


@dataclass
class Guard:
    """Compares what an import writes with what is stored: refuses a change, or with
    ``replace`` lets it through and records it in the report."""

    replace: bool
    report: ImportReport

    def check(self, *, path: object, what: str, stored: Mapping[str, Any] | None,
              new: Mapping[str, Any], columns: Iterable[str]) -> None:
        """Refuse (or note, with ``replace``) each of ``columns`` that ``new`` would change in
        the ``stored`` row (None: a new record, nothing to compare)."""
        if stored is None:
            return
        for column in columns:
            old = stored[column]
            if old is None or old == new[column]:
                continue
            change = f"{what}: {column} {_shown(old)} -> {_shown(new[column])}"
            if not self.replace:
                raise DataFileError(
                    path, f"{what} is stored with {column} {_shown(old)}; this file says "
                    f"{_shown(new[column])}: keep the stored value, or pass --replace to "
                    "replace it")
            self.report.replaced.append(f"{path}: {change}")


def refuse_other_question(path: object, question: Any,
                          stored: Mapping[str, Any] | None) -> None:
    """A responses file's copy of a question whose type or answer position differs from the
    stored question (a responses file never changes a question; its copies of the question
    text and reference are not read: the questions file's are stored)."""
    if stored is None:
        return
    for column, word in (("question_type", "question-type"),
                         ("answer_position", "answer-position")):
        given = getattr(question, column)
        if stored[column] != given:
            raise DataFileError(
                path, f"meeting {question.meeting} question {question.number}: {word} "
                f"{given!r} disagrees with the stored question's {stored[column]!r}: import "
                "the questions file (with --replace) first")


def refuse_other_facets(path: object, where: str, row: Mapping[str, Any],
                        stored: tuple[str, str] | None) -> None:
    """A scores-CSV row whose ``question_type`` or ``answer_position`` (columns of the
    ``scores`` export, optional on import) disagrees with its stored question."""
    if stored is None:
        return
    for column, value in zip(("question_type", "answer_position"), stored, strict=True):
        given = row.get(column)
        if given is not None and given != value:
            raise DataFileError(
                path, f"{where}: {column} {given!r} disagrees with the stored question "
                f"{row['question_id']} of {row['meeting']} ({value!r}): fix the row, or leave "
                "the cell empty")


def refuse_other_split(path: object, meeting: str, stored: str | None, split: str) -> None:
    """A meeting stored in one split, named by a file of the other (never replaced)."""
    if stored is not None and stored != split:
        raise DataFileError(
            path, f"meeting {meeting} is stored as a {stored} meeting but this is a {split} "
            f"file: a meeting belongs to one split (check the file's name and its meetings)")


def guard_scores(session: Session, guard: Guard, *, path: object | Callable[[int], object],
                 rows: Sequence[dict[str, Any]], describe: Callable[[int], str]) -> None:
    """Compare score rows (``score_row`` dicts) with the stored scores of their keys;
    ``describe(i)`` names row ``i`` in a message, ``path`` its file (or ``path(i)`` does)."""
    response_ids = sorted({row["response_id"] for row in rows})
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(response_ids), 1000):  # bounded IN lists on both backends
        stored |= keyed.stored_rows(
            session=session, table=Score, keys=SCORE_KEY, columns=["value"],
            where={"response_id": response_ids[start:start + 1000]})
    for index, row in enumerate(rows):
        key = tuple(row[k] for k in SCORE_KEY)
        guard.check(path=path(index) if callable(path) else path, what=describe(index),
                    stored=stored.get(key), new=row, columns=["value"])
