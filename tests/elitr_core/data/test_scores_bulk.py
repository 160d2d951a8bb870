"""The streamed, bulk-written scores CSV import (issue 19, item 4), on SQLite and PostgreSQL:
rows spread over many batches store exactly what a one-batch import stores, a key given twice
in two batches or a bad row in the last batch refuses the whole file, and a line without an end
is refused without being read whole. Speed and memory: ``bench/bench_import.py``."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from sqlalchemy import text

from db.engine import get_engine
from elitr_core.data import scores_csv
from elitr_core.data.database import open_database, writing
from elitr_core.data.report import ImportReport
from elitr_core.errors import DataFileError
from tests import small_db
from tests.dbstate import snapshot

HEADER = "meeting,question_id,split,setting,mode,seed,model,evaluator,annotator,sample,score\n"


def _rows() -> list[str]:
    """54 distinct scores of the small benchmark's responses: judges, samples, annotators."""
    rows = []
    for n, model, (evaluator, annotator, sample) in itertools.product(
            range(1, 7), ("A", "B", "C"),
            (("judge-x", "", 0), ("judge-x", "", 1), ("crowd-human", "ann7", 0))):
        score = 1 + (n * 3 + ord(model) + sample) % 10
        rows.append(f"meeting_en_dev_901,{n},dev,qa,st,,{model},{evaluator},{annotator},"
                    f"{sample},{score}\n")
    return rows


def _import(url: str, path: Path) -> ImportReport:
    report = ImportReport()
    with writing(open_database(url)) as session:
        scores_csv.import_scores_csv(session, path, report)
    return report


def _stored(url: str) -> list[tuple[object, ...]]:
    query = text("SELECT e.slug, coalesce(a.name, ''), s.sample, s.value, s.status, "
                 "s.response_id FROM score s JOIN evaluator e ON e.id = s.evaluator_id "
                 "LEFT JOIN annotator a ON a.id = s.annotator_id ORDER BY 6, 1, 2, 3")
    with get_engine(url).connect() as connection:
        return [tuple(row) for row in connection.execute(query)]


@pytest.fixture
def unscored(db_url: str) -> str:
    small_db.build(db_url, scores=False)
    return db_url


def test_many_batches_store_what_one_batch_stores(unscored: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows()
    path = tmp_path / "scores.csv"
    path.write_text(HEADER + "".join(rows))
    assert len(rows) > 40
    report = _import(unscored, path)  # one batch
    one_batch = _stored(unscored)
    assert report.counts["scores"] == len(rows) == len(one_batch)
    assert {r[0] for r in one_batch} == {"judge-x", "crowd-human"}

    with get_engine(unscored).begin() as connection:
        for table in ("score", "annotator", "evaluator"):
            connection.execute(text(f"DELETE FROM {table}"))
    monkeypatch.setattr(scores_csv, "BATCH_ROWS", 7)  # 9 batches, the last one short
    assert _import(unscored, path).counts["scores"] == len(rows)
    assert [r[:5] for r in _stored(unscored)] == [r[:5] for r in one_batch]

    twice = snapshot(unscored)
    _import(unscored, path)  # the same file again changes nothing, not even updated_at
    assert snapshot(unscored) == twice


@pytest.mark.parametrize("case", ["duplicate in another batch", "bad row in the last batch",
                                  "unknown response in the last batch"])
def test_a_refusal_after_many_batches_stores_nothing(
        unscored: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    rows = _rows()
    last = {"duplicate in another batch": rows[3].rsplit(",", 1)[0] + ",9.5\n",
            "bad row in the last batch": rows[5].replace("dev,qa", "dev,chat"),
            "unknown response in the last batch": rows[0].replace(",A,", ",Z,")}[case]
    path = tmp_path / "scores.csv"
    path.write_text(HEADER + "".join(rows) + last)
    monkeypatch.setattr(scores_csv, "BATCH_ROWS", 7)
    before = snapshot(unscored)
    with pytest.raises(DataFileError) as caught:
        _import(unscored, path)
    line = len(rows) + 2
    expected = {
        "duplicate in another batch": "the score of model 'B' for meeting_en_dev_901 question 1 "
                                      "(qa-st dev) by 'judge-x' sample 0 appears twice (line 5 "
                                      f"and line {line})",
        "bad row in the last batch": f"line {line}: setting 'chat' is not one of qa, conv",
        "unknown response in the last batch": f"line {line}: no stored response of model 'Z'",
    }[case]
    assert expected in str(caught.value)
    assert snapshot(unscored) == before


def test_a_line_without_an_end_is_not_read_whole(sqlite_url: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    small_db.build(sqlite_url, scores=False)
    monkeypatch.setattr(scores_csv, "MAX_LINE_CHARS", 1000)
    path = tmp_path / "junk.csv"
    path.write_text(HEADER + _rows()[0] + "x" * 5000)
    with pytest.raises(DataFileError, match="line 3 is longer than 1,000 characters"):
        _import(sqlite_url, path)


def test_a_header_only_file_is_refused(sqlite_url: str, tmp_path: Path) -> None:
    """Like an archive without benchmark files (issue 27 item 11), not "0 scores"."""
    small_db.build(sqlite_url, scores=False)
    path = tmp_path / "empty.csv"
    path.write_text(HEADER + "\n\n")
    before = snapshot(sqlite_url)
    with pytest.raises(DataFileError, match="holds no scores, only its header"):
        _import(sqlite_url, path)
    assert snapshot(sqlite_url) == before
