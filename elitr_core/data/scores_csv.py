"""Import of a tidy scores CSV (the columns of the ``scores`` export) into the database.

This is how scores made elsewhere (another annotation tool, a judge run on another machine)
enter every comparison. Rows must refer to responses already stored.

The file is streamed, never read whole: :data:`BATCH_ROWS` rows at a time are checked by the
typed gate (:class:`~elitr_core.data.records.ScoreRowChecker`, column by column), resolved to
stored responses through maps of names to ids, and written to a staging table
(:class:`db.score_staging.ScoreStaging`: PostgreSQL ``COPY``, SQLite ``executemany``); the
database then finds a key given twice, and one statement merges the rows into ``score``.
Memory holds one batch and the name maps, whatever the size of the file; the caller's
transaction makes the import all or nothing (the first bad line refuses the whole file).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from db import benchmark as bq
from db import responses as pq
from db import runs as rq
from db import score_staging
from db.evaluators import OtherSource, annotator_ids, evaluator_for
from db.models import NO_SEED
from elitr_core.data.bounded import open_regular
from elitr_core.data.overwrite import Guard, refuse_other_facets
from elitr_core.data.records import ScoreRowChecker
from elitr_core.data.strict import refuse_duplicates
from elitr_core.errors import DataFileError, UserError
from elitr_core.vocab import REFUSED_PAIRS, SCORE_MAX, SCORE_MIN

if TYPE_CHECKING:
    from elitr_core.data.report import ImportReport

REQUIRED = ("meeting", "question_id", "split", "setting", "mode", "model", "evaluator", "score")
HUMAN_SUFFIX = "-human"
#: Rows checked, resolved and staged at a time: large enough that per-batch costs (a COPY, an
#: executemany, the column checks) vanish, small enough to bound memory (~20 MB a batch).
BATCH_ROWS = 20_000
#: Largest scores CSV read (about 40 million rows): streamed, so the size bounds time only.
MAX_CSV_BYTES = 4 * 1024**3
#: Longest line read: a line without an end (a file of junk) is refused, not read whole.
MAX_LINE_CHARS = 1024 * 1024

#: (meeting, question number, model, setting, mode, split, seed): what names a response.
ResponseKey = tuple[str, int, str, str, str, str, int]


def import_scores_csv(session: Session, path: Path, report: ImportReport, *,
                      guard: Guard | None = None) -> None:
    """Upsert every row of a scores CSV; any bad row aborts the whole import, and a stored
    score it would change is refused unless the ``guard`` replaces (``--replace``)."""
    guard = guard or Guard(False, report)
    checker = ScoreRowChecker(path=path)
    resolver = _Resolver(session, path)
    with score_staging.ScoreStaging(session) as staging:
        for first_line, count, cells in _batches(path):
            staging.write(resolver.resolve(checker.check_table(cells, count, first_line),
                                           first_line))
        if not staging.rows:  # as an archive without benchmark files is refused
            raise DataFileError(path, "holds no scores, only its header: add the rows "
                                      "(one score a line) or pass the file that has them")
        duplicate = staging.first_duplicate()
        if duplicate is not None:
            raise _duplicate_error(path, checker, *duplicate)
        # another source's evaluator: a row may only repeat its stored score (an export of
        # this database imported back changes nothing); anything it would add is refused
        added = staging.first_not_stored(list(resolver.foreign))
        if added is not None:
            raise DataFileError(path, f"line {added[0]}: {resolver.foreign[added[1]]}")
        for line, old, new in staging.changed_values(first_only=not guard.replace):
            guard.check(path=path, what=f"line {line}: the score", stored={"value": old},
                        new={"value": new}, columns=["value"])
        staging.merge()
    report.files.append(path.name)
    report.counts["scores"] += staging.rows


def _batches(path: Path) -> Iterator[tuple[int, int, dict[str, tuple[str, ...]]]]:
    """``(line of the first row, rows, cells by column)`` of at most :data:`BATCH_ROWS` rows,
    header checked; the line of a row is its number among the file's non-blank rows plus one
    (the header). Rows are kept as tuples and turned into columns once a batch, not into a
    dict each: a million dicts and the gate's 13 million look-ups in them were about 2 of the
    9 CPU seconds of a million-row import (bench/results/import-2026-11-24.md)."""
    line = 1
    # a regular file (never a FIFO or device), read up to MAX_CSV_BYTES even if it grows
    raw = open_regular(path, max_bytes=MAX_CSV_BYTES)
    try:
        with io.TextIOWrapper(raw, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(_lines(handle, path))
            header = _header(next(reader, []), path)
            width = len(header)
            batch: list[tuple[str, ...]] = []
            for cells in reader:
                if not cells:  # a blank line, skipped as csv.DictReader does
                    continue
                line += 1
                if len(cells) != width:
                    more = "more" if len(cells) > width else "fewer"
                    raise DataFileError(path, f"line {line}: {more} cells than the header's "
                                              f"{width} columns: fix the row")
                # a tuple of strings leaves the garbage collector's watch at its first pass; a
                # batch of the reader's lists stays watched and made the reading 2.6x slower
                batch.append(tuple(cells))
                if len(batch) == BATCH_ROWS:
                    yield line - BATCH_ROWS + 1, BATCH_ROWS, _columns(header, batch)
                    batch = []
            if batch:
                yield line - len(batch) + 1, len(batch), _columns(header, batch)
    except csv.Error as exc:
        raise DataFileError(path, f"unreadable CSV after line {line}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise DataFileError(path, f"not UTF-8 text ({exc}): save it as UTF-8") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot be read ({exc.strerror})") from None


def _columns(header: list[str], rows: list[tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The rows' cells by column (``zip(*rows)`` takes half as long again: its 20,000
    arguments)."""
    return {name: tuple(map(itemgetter(index), rows)) for index, name in enumerate(header)}


def _lines(handle: Any, path: Path) -> Iterator[str]:
    """The file's lines, each at most :data:`MAX_LINE_CHARS` long (else refused)."""
    number = 0
    while line := handle.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise DataFileError(path, f"line {number} is longer than {MAX_LINE_CHARS:,} "
                                      "characters: not a scores CSV")
        yield line


def _header(header: list[str], path: Path) -> list[str]:
    refuse_duplicates(((name, f"column {n}") for n, name in enumerate(header, start=1)),
                      path=path, describe=lambda name: f"header {name!r}")
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise DataFileError(path, f"not a scores CSV: missing column(s) {', '.join(missing)} "
                                  f"(expected at least {', '.join(REQUIRED)})")
    return header


class _Resolver:
    """Turns checked rows into staged ones: names to ids, through maps built as rows come."""

    def __init__(self, session: Session, path: Path) -> None:
        self.session = session
        self.path = path
        self.questions = bq.question_ids(session=session)
        self.facets = bq.question_facets(session=session)
        self.facets_seen: set[tuple[str, int, str | None, str | None]] = set()
        self.runs = rq.run_ids(session)
        self.run_responses: dict[int, dict[int, int]] = {}  # run -> question -> response
        self.responses: dict[ResponseKey, int] = {}
        self.evaluators: dict[str, int] = {}
        #: evaluator id -> refusal, of the evaluators of another source the file names
        self.foreign: dict[int, str] = {}
        self.annotators: dict[tuple[int, str], int] = {}

    def resolve(self, columns: dict[str, list[Any]], first_line: int) -> list[tuple[Any, ...]]:
        """Rows for :meth:`db.score_staging.ScoreStaging.write` (order of
        ``score_staging.STAGED``)."""
        self._add_evaluators(columns["evaluator"])
        self._add_annotators(columns["evaluator"], columns["annotator"])
        evaluators, annotators, responses = self.evaluators, self.annotators, self.responses
        out = []
        for line, (meeting, number, model, setting, mode, split, seed, evaluator, annotator,
                   sample, score, question_type, position) in enumerate(zip(
                *(columns[c] for c in ("meeting", "question_id", "model", "setting", "mode",
                                       "split", "seed", "evaluator", "annotator", "sample",
                                       "score", "question_type", "answer_position")),
                strict=True), start=first_line):
            if question_type is not None or position is not None:
                self._check_facets((meeting, number, question_type, position), line)
            key = (meeting, number, model, setting, mode, split,
                   NO_SEED if seed is None else seed)
            response = responses.get(key)
            if response is None:
                response = responses[key] = self._response(key, line)
            evaluator_id = evaluators[evaluator]
            annotator_id = annotators[evaluator_id, annotator] if annotator else None
            out.append((line, response, evaluator_id, annotator_id, annotator_id or 0, sample,
                        score))
        return out

    def _check_facets(self, facets: tuple[str, int, str | None, str | None], line: int
                      ) -> None:
        """A question type or answer position given in a row must be the stored question's."""
        if facets not in self.facets_seen:
            meeting, number, question_type, position = facets
            refuse_other_facets(self.path, f"line {line}", {
                "question_id": number, "meeting": meeting, "question_type": question_type,
                "answer_position": position}, self.facets.get((meeting, number)))
            self.facets_seen.add(facets)

    def _response(self, key: ResponseKey, line: int) -> int:
        meeting, number, model, setting, mode, split, seed = key
        refused = REFUSED_PAIRS.get((setting, mode))
        if refused is not None:  # (once a response key: the first row of each is checked)
            raise DataFileError(self.path, f"line {line}: a {setting}-{mode} score: {refused}, "
                                "so no run has them and generate refuses them too")
        question = self.questions.get((meeting, number))
        if question is None:
            raise DataFileError(
                self.path, f"line {line}: unknown question id {number} of meeting {meeting!r}")
        run = self.runs.get((model, setting, mode, split, seed))
        if run is not None and run not in self.run_responses:
            self.run_responses[run] = {
                q: r for (_, q), r in pq.response_ids_of_runs(self.session, [run]).items()}
        response = self.run_responses[run].get(question) if run is not None else None
        if response is None:
            raise DataFileError(
                self.path, f"line {line}: no stored response of model {model!r} "
                f"({setting}-{mode} {split}) to question {number} of {meeting}: import the "
                "responses first")
        return response

    def _add_evaluators(self, slugs: list[str]) -> None:
        for slug in set(slugs).difference(self.evaluators):
            kind = "human" if slug.endswith(HUMAN_SUFFIX) else "llm"
            try:
                self.evaluators[slug] = evaluator_for(session=self.session, slug=slug,
                                                      kind=kind, source="csv")
            except OtherSource as exc:
                self.evaluators[slug] = exc.evaluator_id
                self.foreign[exc.evaluator_id] = str(exc)
            except UserError as exc:
                raise DataFileError(self.path, str(exc)) from None

    def _add_annotators(self, slugs: list[str], names: list[str | None]) -> None:
        pairs = {(self.evaluators[s], n) for s, n in zip(slugs, names, strict=True) if n}
        new = pairs.difference(self.annotators)
        if new:
            self.annotators.update(annotator_ids(self.session, new))


def _duplicate_error(path: Path, checker: ScoreRowChecker, first: int, second: int
                     ) -> DataFileError:
    """The refusal of a score key given twice, naming it as the row at ``first`` says it."""
    row = next(checker.check({name: cells[first - start] for name, cells in columns.items()},
                             first)
               for start, count, columns in _batches(path) if start <= first < start + count)
    return DataFileError(
        path, f"the score of model {row['model']!r} for {row['meeting']} question "
        f"{row['question_id']} ({row['setting']}-{row['mode']} {row['split']}) by "
        f"{row['evaluator']!r}" + (f" annotator {row['annotator']!r}" if row["annotator"] else "")
        + f" sample {row['sample']} appears twice (line {first} and line {second}): keep one")


__all__ = ["BATCH_ROWS", "MAX_CSV_BYTES", "import_scores_csv", "SCORE_MIN", "SCORE_MAX"]
