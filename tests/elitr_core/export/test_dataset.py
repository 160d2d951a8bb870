"""Parquet exports and ``export dataset``: the same rows, types and nulls as the JSON export,
a folder ``datasets.load_dataset`` opens as it is, no annotator identity in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from db.engine import get_engine
from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, writing
from elitr_core.vocab import TABLE_NAMES
from tests import small_db

PID = "5f1c0ffee0ddba11deadbeef"
CODE = "C0MPL3T3"


@pytest.fixture
def url(db_url: str) -> str:
    """The small scored benchmark; annotator ann2 joined through Prolific; one study."""
    small_db.build(db_url)
    with get_engine(db_url).begin() as conn:
        conn.execute(text("UPDATE annotator SET name = :n, external_id = :p WHERE name = 'ann2'"),
                     {"n": f"prolific-{PID}", "p": PID})
    with writing(open_database(db_url)) as session:
        create_study(session, StudySpec(name="crowd", pool="silver", per_item=2,
                                        prolific_code=CODE, prolific_study_id="b" * 24))
    return db_url


def _export(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(["export", *args]) == 0
    return json.loads(capsys.readouterr().out)


def typed(rows: list[dict[str, Any]]) -> list[dict[str, tuple[str, Any]]]:
    """Rows with each value's type beside it: 7 and 7.0 differ, as do None and NaN."""
    return [{k: (type(v).__name__, v) for k, v in row.items()} for row in rows]


def test_every_table_as_parquet_equals_its_json_export(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.parquet as pq

    compared = []
    for table in TABLE_NAMES:
        status = main(["export", table, "--format", "json", "--db", url])
        out, err = capsys.readouterr()
        target = tmp_path / f"{table}.parquet"
        assert main(["export", table, "--format", "parquet", "--out", str(target),
                     "--db", url]) == status, table
        capsys.readouterr()
        if status != 0:  # a table this small benchmark cannot give: refused the same way
            assert not target.exists()
            continue
        assert typed(pq.read_table(target).to_pylist()) == typed(json.loads(out)), table
        compared.append(table)
    assert len(compared) >= 15, compared
    assert {"scores", "leaderboard", "icc", "elo", "calibration"} <= set(compared)
    rows = pq.read_table(tmp_path / "scores.parquet")
    assert str(rows.schema.field("seed").type) == "int64" and rows.column("seed").null_count


def test_dataset_round_trip_and_pseudonyms(url: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    import datasets
    import pandas as pd
    from huggingface_hub import DatasetCard

    from elitr_core.export.formats import to_json

    folder = tmp_path / "elitr-scores"
    assert main(["export", "dataset", str(folder), "--db", url]) == 0
    assert "annotators pseudonymised" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "questions.parquet", "responses.parquet", "scores.parquet",
        "studies.parquet"]
    scores = _export(capsys, "scores", "--format", "json", "--db", url)
    pseudonym = {"ann1": "annotator-001", f"prolific-{PID}": "annotator-002", None: None}
    keys = pd.read_parquet(folder / "scores.parquet")["response_key"].tolist()
    expected = typed([{"response_key": key, **row, "annotator": pseudonym[row["annotator"]]}
                      for key, row in zip(keys, scores, strict=True)])
    assert {row["annotator"] for row in scores} == set(pseudonym)

    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "cache"))
    assert list(loaded) == ["train"] and typed(loaded["train"].to_list()) == expected
    frame = pd.read_parquet(folder / "scores.parquet")
    assert typed(json.loads(to_json(frame))) == expected
    for name, columns in (("responses", 9), ("questions", 8), ("studies", 9)):
        part = datasets.load_dataset(str(folder), name, cache_dir=str(tmp_path / "cache"))
        assert len(part["train"].column_names) == columns
    responses = datasets.load_dataset(str(folder), "responses",
                                      cache_dir=str(tmp_path / "cache"))["train"]
    assert len(responses) == 72 and responses.features["seed"].dtype == "int64"
    (study,) = datasets.load_dataset(str(folder), "studies",
                                     cache_dir=str(tmp_path / "cache"))["train"].to_list()
    assert study["study"] == "crowd" and study["per_item"] == 2

    card = DatasetCard.load(folder / "README.md")
    assert card.data.license == "cc-by-4.0" and "ELITR-Bench (Thonet" in card.text
    assert card.data.configs[0] == {"config_name": "scores", "default": True,
                                    "data_files": [{"split": "train",
                                                    "path": "scores.parquet"}]}
    # computed from the data: 72 responses, only who/what/when/howmany questions, and
    # 72 * 4 scores (under 1,000 rows in the largest file)
    assert card.data.task_categories == ["question-answering", "text-generation"]
    assert card.data.size_categories == ["n<1K"] and len(scores) < 1000
    assert [c["config_name"] for c in card.data.dataset_info] == [
        "scores", "responses", "questions", "studies"]
    assert [f["name"] for f in card.data.dataset_info[0]["features"]] == list(frame.columns)
    for path in folder.iterdir():  # no identity or secret in any file, in any encoding
        data = path.read_bytes()
        for secret in (PID, "prolific-", "ann1", CODE, "b" * 24):
            assert secret.encode() not in data, (path.name, secret)


def test_bad_targets_are_one_line(url: str, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("x")
    cases = [
        (["export", "dataset", str(tmp_path / "full")], "is not an empty folder"),
        (["export", "dataset", str(tmp_path / "no" / "such")], "does not exist"),
        (["export", "dataset"], "needs the folder to write"),
        (["export", "scores", str(tmp_path / "x")], "a folder goes with `export dataset"),
        (["export", "scores", "--format", "parquet"], "give it with --out FILE"),
        (["export", "dataset", str(tmp_path / "none"), "--model", "nobody"],
         "no score matches the filters"),
    ]
    for args, expected in cases:
        assert main([*args, "--db", url]) == 2, args
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
