"""Scores CSV import: the ``scores`` export imports back into a fresh database unchanged (SQLite
and PostgreSQL); a bad row is refused with its line number and nothing is stored."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import text
from sqlmodel import select

from db.engine import get_engine
from db.models import Annotator, Evaluator
from db.runs import ScoreFilter
from elitr_core.data.database import open_database, reading, writing
from elitr_core.data.overwrite import Guard
from elitr_core.data.report import ImportReport
from elitr_core.data.scores import scores_table
from elitr_core.data.scores_csv import import_scores_csv
from elitr_core.errors import DataFileError
from elitr_core.export.formats import render
from tests import small_db
from tests.dbstate import counts, snapshot

HEADER = "meeting,question_id,split,setting,mode,seed,model,evaluator,annotator,sample,score\n"
GOOD = "meeting_en_dev_901,1,dev,qa,st,,A,expert,ann9,0,7\n"


def _scores(url: str) -> pd.DataFrame:
    with reading(open_database(url)) as session:
        return scores_table(session, ScoreFilter())


def _import(url: str, path: Path, *, replace: bool = False) -> ImportReport:
    report = ImportReport()
    with writing(open_database(url)) as session:
        import_scores_csv(session, path, report, guard=Guard(replace, report))
    return report


@pytest.fixture
def unscored_url(small_sqlite: str) -> str:
    """The small benchmark's responses without any score, annotator or evaluator (SQLite)."""
    with get_engine(small_sqlite).begin() as conn:
        for table in ("score", "annotator", "evaluator"):
            conn.execute(text(f"DELETE FROM {table}"))
    return small_sqlite


def test_export_then_import_gives_the_same_rows(small_sqlite: str, db_url: str,
                                                tmp_path: Path) -> None:
    with reading(open_database(small_sqlite)) as session:
        exported = scores_table(session, ScoreFilter(split="dev"))
    path = tmp_path / "scores.csv"
    path.write_text(render(exported, "csv", "scores"), encoding="utf-8")
    small_db.build(db_url, scores=False)
    assert counts(db_url)["score"] == 0

    report = _import(db_url, path)
    assert report.files == ["scores.csv"] and report.counts["scores"] == len(exported) == 144
    assert render(_scores(db_url), "csv", "scores") == path.read_text(encoding="utf-8")
    with reading(open_database(db_url)) as session:
        kinds = {e.slug: e.kind for e in session.exec(select(Evaluator))}
        annotators = sorted(a.name for a in session.exec(select(Annotator)))
    assert kinds == {"gold-human": "human", "silver-human": "human", "gpt-4": "llm"}
    assert annotators == list(small_db.ANNOTATORS)

    once = snapshot(db_url)
    _import(db_url, path)  # importing the same file again changes nothing
    assert snapshot(db_url) == once


def test_a_changed_score_is_refused_unless_replaced(unscored_url: str, tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text(HEADER + GOOD)
    _import(unscored_url, path)
    stored = snapshot(unscored_url)
    path.write_text(HEADER + GOOD.replace(",7\n", ",9.5\n"))
    with pytest.raises(DataFileError, match="line 2: the score is stored with value 7.0; this "
                       "file says 9.5: keep the stored value, or pass --replace"):
        _import(unscored_url, path)
    assert snapshot(unscored_url) == stored
    report = _import(unscored_url, path, replace=True)
    assert [line.split(": ", 1)[1] for line in report.replaced] == [
        "line 2: the score: value 7.0 -> 9.5"]
    table = _scores(unscored_url)
    assert list(table["score"]) == [9.5] and list(table["annotator"]) == ["ann9"]
    assert table.loc[0, "evaluator"] == "expert"


def test_optional_columns_default(unscored_url: str, tmp_path: Path) -> None:
    path = tmp_path / "minimal.csv"
    path.write_text("meeting,question_id,split,setting,mode,model,evaluator,score\n"
                    "meeting_en_test2_901,2,test2,conv,mt,C,judge-x-human,3\n")
    _import(unscored_url, path)
    table = _scores(unscored_url)
    assert len(table) == 1
    row = table.iloc[0]
    assert pd.isna(row["seed"]) and row["sample"] == 0 and pd.isna(row["annotator"])
    assert row["evaluator"] == "judge-x-human" and row["score"] == 3.0
    with reading(open_database(unscored_url)) as session:
        kind = session.exec(select(Evaluator.kind)).one()
    assert kind == "human"  # the "-human" suffix names a human pool


BAD_ROWS = {
    "question id": ("meeting_en_dev_901,x,dev,qa,st,,A,e,,0,5\n",
                    "line 4: question_id 'x' is not a whole number"),
    "seed": ("meeting_en_dev_901,1,dev,qa,st,soon,A,e,,0,5\n",
             "line 4: seed 'soon' is not a whole number"),
    "sample": ("meeting_en_dev_901,1,dev,qa,st,,A,e,,first,5\n",
               "line 4: sample 'first' is not a whole number"),
    "out of range": ("meeting_en_dev_901,1,dev,qa,st,,A,e,,0,11\n",
                     "line 4: score '11' is outside 1..10"),
    "not a number": ("meeting_en_dev_901,1,dev,qa,st,,A,e,,0,good\n",
                     "line 4: score 'good' is not a number"),
    "unknown question": ("meeting_en_dev_901,99,dev,qa,st,,A,e,,0,5\n",
                         "line 4: unknown question id 99 of meeting 'meeting_en_dev_901'"),
    "unknown model": ("meeting_en_dev_901,1,dev,qa,st,,Z,e,,0,5\n",
                      "line 4: no stored response of model 'Z' (qa-st dev) to question 1 of "
                      "meeting_en_dev_901: import the responses first"),
    "unknown seed": ("meeting_en_dev_901,1,dev,qa,st,7,A,e,,0,5\n",
                     "line 4: no stored response of model 'A'"),
    "split of another meeting": ("meeting_en_dev_901,1,test2,qa,st,,A,e,,0,5\n",
                                 "line 4: no stored response"),
}


@pytest.mark.parametrize("case", sorted(BAD_ROWS))
def test_a_bad_row_is_refused_with_its_line_and_nothing_is_stored(
        unscored_url: str, tmp_path: Path, case: str) -> None:
    row, message = BAD_ROWS[case]
    path = tmp_path / "scores.csv"
    path.write_text(HEADER + GOOD + GOOD.replace(",A,", ",B,") + row)
    before = snapshot(unscored_url)
    with pytest.raises(DataFileError) as caught:
        _import(unscored_url, path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)
    assert snapshot(unscored_url) == before  # the two good rows were not kept either


@pytest.mark.parametrize(("content", "message"), [
    ("meeting,question_id,score\nm,1,5\n",
     "not a scores CSV: missing column(s) split, setting, mode, model, evaluator"),
    ("", "missing column(s) meeting"),
    (b"meeting,question_id\n\xff\xfe\n", "not UTF-8 text"),
])
def test_a_file_that_is_not_a_scores_csv(unscored_url: str, tmp_path: Path,
                                         content: str | bytes, message: str) -> None:
    path = tmp_path / "other.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(DataFileError, match="other.csv: ") as caught:
        _import(unscored_url, path)
    assert message in str(caught.value)


def test_a_missing_file(unscored_url: str, tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="nope.csv: no such file"):
        _import(unscored_url, tmp_path / "nope.csv")
