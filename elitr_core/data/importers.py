"""Storing ELITR-Bench data: benchmark files, generated responses, scores CSVs, transcripts.

Every function writes inside the caller's session; the caller (CLI, page) wraps one import in
one transaction (``db.transaction.writing``) so a bad file leaves nothing half-written.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sqlmodel import Session

from db import benchmark as bq
from db import keyed
from db import responses as pq
from db.evaluators import evaluator_for
from db.models import NO_SEED, Meeting, Question, QuestionTranslation, Response, Run
from db.scores import SCORE_KEY, score_row, upsert_scores
from elitr_core.data.benchmark import (
    ARCHIVE_PASSWORD,
    BenchmarkFile,
    ResponseRecord,
    read_path,
)
from elitr_core.data.overwrite import (
    Guard,
    guard_scores,
    refuse_disagreements,
    refuse_other_question,
    refuse_other_split,
)
from elitr_core.data.report import ImportReport
from elitr_core.data.scores_csv import import_scores_csv
from elitr_core.errors import DataFileError

#: Evaluators of the bundled data: slug -> (kind, description).
BUNDLED_EVALUATORS: dict[str, tuple[str, str]] = {
    "gpt-4": ("llm", "GPT-4 judge, 10-point rubric (ELITR-Bench release)"),
    "prometheus": ("llm", "Prometheus-13B judge, 5-point rubric x2 (ELITR-Bench release)"),
    "gold-human": ("human", "Expert annotator (ELITR-Bench release)"),
    "silver-human": ("human", "Mean of 10 Prolific annotators (ELITR-Bench release)"),
}


def import_paths(
    session: Session, paths: Iterable[Path], *, password: bytes = ARCHIVE_PASSWORD,
    replace: bool = False,
) -> ImportReport:
    """Import benchmark/response JSON files, ZIPs of them, or tidy scores CSVs.

    A stored value the files would change is refused unless ``replace`` (``--replace``); what
    was replaced is listed in the report (``overwrite``).
    """

    report = ImportReport()
    parsed: list[BenchmarkFile] = []
    tables = []
    for path in paths:
        if path.suffix.lower() == ".csv":
            tables.append(path)
            continue
        files = list(read_path(path, password))
        if not files:
            raise DataFileError(path, "holds no ELITR-Bench JSON file")
        parsed += files
    import_files(session, parsed, report, replace=replace)
    guard = Guard(replace, report)
    for path in tables:  # after the JSON files: their scores refer to the responses
        import_scores_csv(session, path, report, guard=guard)
    return report


def import_files(
    session: Session, files: list[BenchmarkFile], report: ImportReport | None = None, *,
    replace: bool = False,
) -> ImportReport:
    """Store parsed files: English questions, then translations, then responses and scores.

    Files that disagree with each other are refused; a stored value they would change is
    refused unless ``replace`` (then listed in ``report.replaced``).
    """
    report = report or ImportReport()
    refuse_disagreements(files)
    guard = Guard(replace, report)
    order = sorted(
        files, key=lambda f: (f.kind != "questions", f.language != "en", f.setting != "qa")
    )
    responses = []
    for f in order:
        report.files.append(f.name)
        if f.kind == "questions" and f.language == "en":
            _import_questions(session, f, report, guard)
        elif f.kind == "questions":
            _import_translations(session, f, report, guard)
        else:
            responses.append(f)
    # all responses files at once (they come last in ``order``): a ZIP of 20,000 small files
    # made 18 statements per file, 159 s; its look-ups and writes are now a few statements
    _import_responses(session, responses, report, guard)
    return report


def _meeting_splits(session: Session, files: list[BenchmarkFile]) -> None:
    """Refuse a meeting of ``files`` stored in another split (``overwrite.refuse_other_split``)."""
    meetings = sorted({m for f in files for m in f.meetings})
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(meetings), _IN_LIST):
        stored |= keyed.stored_rows(session=session, table=Meeting, keys=["external_id"],
                                    columns=["split"],
                                    where={"external_id": meetings[start:start + _IN_LIST]})
    for f in files:
        for meeting in dict.fromkeys(f.meetings):
            row = stored.get((meeting,))
            refuse_other_split(f.name, meeting, row["split"] if row else None, f.split)


def _import_questions(session: Session, f: BenchmarkFile, report: ImportReport,
                      guard: Guard) -> None:
    _meeting_splits(session, [f])
    keyed.upsert(
        session=session,
        table=Meeting,
        keys=["external_id"],
        update=[],
        rows=[{"external_id": m, "split": f.split} for m in dict.fromkeys(f.meetings)],
    )
    meetings = keyed.id_map(session=session, table=Meeting, keys=["external_id"])
    stored = keyed.stored_rows(
        session=session, table=Question, keys=["meeting_id", "number"],
        columns=["question_type", "answer_position", "qa_text", "conv_text", "reference"],
        where={"meeting_id": [meetings[(m,)] for m in set(f.meetings)]})
    text_column = "qa_text" if f.setting == "qa" else "conv_text"
    update = ["question_type", "answer_position", "reference", text_column]
    rows = []
    for q in f.questions:
        row = {
            "meeting_id": meetings[(q.meeting,)],
            "number": q.number,
            "question_type": q.question_type,
            "answer_position": q.answer_position,
            "reference": q.reference,
            "language": "en",
            # a Conv file imported alone still needs a QA text: its own, until the QA file
            "qa_text": q.text,
            text_column: q.text,
        }
        old = stored.get((row["meeting_id"], q.number))
        if old is not None and f.setting == "conv":  # the reference is the QA file's
            row |= {"reference": old["reference"], "qa_text": old["qa_text"]}
        guard.check(path=f.name, what=f"meeting {q.meeting} question {q.number}", stored=old,
                    new=row, columns=update)
        rows.append(row)
    keyed.upsert(
        session=session, table=Question, rows=rows, keys=["meeting_id", "number"], update=update
    )
    report.counts["meetings"] += len(set(f.meetings))
    report.counts["questions"] += len(rows)


def _lookup_questions(session: Session,
                      files: list[BenchmarkFile]) -> dict[tuple[str, int], int]:
    """(meeting, number) -> id of every stored question; a question of ``files`` not stored is
    refused."""
    known = bq.question_ids(session=session)
    for f, q in ((file, q) for file in files for q in file.questions):
        if (q.meeting, q.number) not in known:
            raise DataFileError(
                f.name,
                f"unknown question id {q.number} of meeting {q.meeting}: import the benchmark "
                "questions first (python -m elitr_core init)",
            )
    return known


def _import_translations(session: Session, f: BenchmarkFile, report: ImportReport,
                         guard: Guard) -> None:
    known = _lookup_questions(session, [f])
    text_column = "qa_text" if f.setting == "qa" else "conv_text"
    stored = keyed.stored_rows(
        session=session, table=QuestionTranslation, keys=["question_id"],
        columns=[text_column, "reference"],
        where={"language": f.language})
    rows = []
    for q in f.questions:
        row = {
            "question_id": known[(q.meeting, q.number)],
            "language": f.language,
            text_column: q.text,
            "reference": q.reference,
        }
        old = stored.get((row["question_id"],))
        if old is not None and f.setting == "conv" and old["reference"] is not None:
            row["reference"] = old["reference"]  # the reference is the QA file's
        guard.check(path=f.name, what=f"the {f.language} translation of meeting {q.meeting} "
                    f"question {q.number}", stored=old, new=row,
                    columns=[text_column, "reference"])
        rows.append(row)
    keyed.upsert(
        session=session,
        table=QuestionTranslation,
        rows=rows,
        keys=["question_id", "language"],
        update=[text_column, "reference"],
    )
    report.counts[f"translations ({f.language})"] += len(rows)


def _import_responses(session: Session, files: list[BenchmarkFile], report: ImportReport,
                      guard: Guard) -> None:
    """Store the responses files of one import together: each look-up and write is one
    statement (or a few, in chunks) for all of them."""
    if not files:
        return
    _meeting_splits(session, files)
    known = _lookup_questions(session, files)
    _refuse_other_questions(session, files, known)
    runs = _store_runs(session, files)
    found = [(f, r) for f in files for r in f.responses]
    rows: list[dict[str, Any]] = [
        {"run_id": runs[(r.model, f.setting, f.mode, f.split)],
         "question_id": known[(r.meeting, r.number)], "text": r.text, "meta": {}}
        for f, r in found
    ]
    run_ids = sorted(set(runs.values()))
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(run_ids), _IN_LIST):
        stored |= keyed.stored_rows(session=session, table=Response,
                                    keys=["run_id", "question_id"], columns=["text"],
                                    where={"run_id": run_ids[start:start + _IN_LIST]})
    for (f, r), row in zip(found, rows, strict=True):
        guard.check(path=f.name, what=_describe(r), columns=["text"], new=row,
                    stored=stored.get((row["run_id"], row["question_id"])))
    # files of one import agree (refuse_disagreements): one row per key, as one statement
    # may not touch a row twice on PostgreSQL
    unique = {(row["run_id"], row["question_id"]): row for row in rows}
    keyed.upsert(session=session, table=Response, rows=list(unique.values()),
                 keys=["run_id", "question_id"], update=["text"])
    _import_scores(session, found, rows, guard)
    report.counts["responses"] += len(rows)
    report.counts["scores"] += sum(len(r.scores) for _, r in found)


#: Values in one ``IN (...)`` list: bounded on both backends.
_IN_LIST = 1000
_RUN_KEY = ["model", "setting", "mode", "split", "seed", "variant", "language"]


def _store_runs(session: Session,
                files: list[BenchmarkFile]) -> dict[tuple[Any, ...], int]:
    """Create the imported runs of ``files`` (the first file naming a run is its source);
    (model, setting, mode, split) -> run id."""
    new: dict[tuple[Any, ...], dict[str, Any]] = {}
    for f in files:
        assert f.mode is not None  # set for every responses file by classify()
        for r in f.responses:
            new.setdefault((r.model, f.setting, f.mode, f.split), {
                "model": r.model, "setting": f.setting, "mode": f.mode, "split": f.split,
                "seed": NO_SEED, "variant": "", "language": "en", "backend": "import",
                "status": "done", "source": f.name[:512],
                "config": {"source": "ELITR-Bench release", "file": f.name}})
    keyed.upsert(session=session, table=Run, keys=_RUN_KEY, rows=list(new.values()))
    ids = keyed.id_map(session=session, table=Run, keys=_RUN_KEY,
                       where={"seed": NO_SEED, "variant": "", "language": "en"})
    return {key: ids[(*key, NO_SEED, "", "en")] for key in new}


def _refuse_other_questions(session: Session, files: list[BenchmarkFile],
                            known: dict[tuple[str, int], int]) -> None:
    """The questions a responses file repeats must have the stored type and position."""
    ids = sorted({known[(q.meeting, q.number)] for f in files for q in f.questions})
    stored: dict[tuple[Any, ...], dict[str, Any]] = {}
    for start in range(0, len(ids), _IN_LIST):
        stored |= keyed.stored_rows(
            session=session, table=Question, keys=["id"],
            columns=["question_type", "answer_position"],
            where={"id": ids[start:start + _IN_LIST]})
    for f in files:
        for q in f.questions:
            refuse_other_question(f.name, q, stored.get((known[(q.meeting, q.number)],)))


def _describe(r: ResponseRecord, slug: str | None = None) -> str:
    what = f"the response of model {r.model} to meeting {r.meeting} question {r.number}"
    return f"the {slug} score of {what[4:]}" if slug else what


def _import_scores(session: Session, found: list[tuple[BenchmarkFile, ResponseRecord]],
                   rows: list[dict[str, Any]], guard: Guard) -> None:
    response_ids = pq.response_ids(
        session=session, pairs=list(dict.fromkeys((row["run_id"], row["question_id"])
                                                  for row in rows)))
    evaluators = {
        slug: evaluator_for(session=session, slug=slug, kind=kind, source="release",
                            description=desc)
        for slug, (kind, desc) in BUNDLED_EVALUATORS.items()
    }
    score_rows, names, paths = [], [], []
    for (f, r), row in zip(found, rows, strict=True):
        response_id = response_ids[(row["run_id"], row["question_id"])]
        for slug, value in r.scores.items():
            score_rows.append(
                score_row(response_id=response_id, evaluator_id=evaluators[slug], value=value)
            )
            names.append(_describe(r, slug))
            paths.append(f.name)
    guard_scores(session, guard, path=paths.__getitem__, rows=score_rows,
                 describe=names.__getitem__)
    unique = {tuple(row[k] for k in SCORE_KEY): row for row in score_rows}
    upsert_scores(session=session, rows=list(unique.values()))


def import_bundled(session: Session) -> ImportReport:
    """Import the three bundled archives (data, Czech, generated responses)."""
    from elitr_core.data.benchmark import BUNDLED_ARCHIVES, DATA_DIR

    return import_paths(session, [DATA_DIR / name for name in BUNDLED_ARCHIVES])


def database_is_empty(session: Session) -> bool:
    """True when no question is stored yet (first start of the app)."""
    return not bq.has_questions(session=session)
