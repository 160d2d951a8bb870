"""The declared Arrow schemas (``elitr_core/export/schema.py``): each table's Parquet file has
exactly its declared schema, full or empty, on SQLite and PostgreSQL, and a SQL reader
(DuckDB) joins every pair of tables sharing a key column with no cast."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from elitr_core.annotation.studies import StudySpec, create_study
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, writing
from elitr_core.export.formats import to_parquet
from elitr_core.export.schema import declared_schema, typed_table
from elitr_core.vocab import EXPORT_COLUMNS, PAIRWISE_TABLES, PROVENANCE_TABLES, TABLE_NAMES
from tests import small_db

TABLES = tuple(dict.fromkeys((*TABLE_NAMES, *PAIRWISE_TABLES, *PROVENANCE_TABLES,
                              *EXPORT_COLUMNS)))
DATASET = ("scores", "responses", "questions", "studies")
#: columns that identify what a row is about: a SQL reader joins tables on them (not ``run``:
#: an id in ``runs``, the interleaved run's label in ``interleaving``, two different things)
KEYS = ("response_key", "meeting", "question_id", "split", "setting", "mode", "seed", "model",
        "evaluator", "annotator", "sample")


def _export_name(table: str) -> str:
    return "elo" if table == "elo-pairwise" else table


def _exported(url: str, tmp_path: Path) -> dict[str, Path]:
    """Every table the small benchmark gives as Parquet (the CLI's export), and the dataset."""
    files = {}
    for table in TABLES:
        target = tmp_path / f"{table}.parquet"
        extra = ["--source", "pairwise"] if table == "elo-pairwise" else []
        if main(["export", _export_name(table), *extra, "--format", "parquet", "--out",
                 str(target), "--db", url]) == 0:
            files[table] = target
    assert main(["export", "dataset", str(tmp_path / "dataset"), "--db", url]) == 0
    files.update({f"dataset/{name}": tmp_path / "dataset" / f"{name}.parquet"
                  for name in DATASET if (tmp_path / "dataset" / f"{name}.parquet").exists()})
    return files


def _empty(table: str, folder: Path) -> Path:
    """The table with no row, as the export writes it."""
    path = folder / f"empty-{table.replace('/', '-')}.parquet"
    columns = declared_schema(table).names
    path.write_bytes(to_parquet(pd.DataFrame(columns=columns), table))
    return path


@pytest.fixture
def url(db_url: str) -> str:
    """The small scored benchmark with one study (the dataset's studies file)."""
    small_db.build(db_url)
    with writing(open_database(db_url)) as session:
        create_study(session, StudySpec(name="crowd", pool="silver", per_item=2))
    return db_url


def test_every_table_parquet_has_its_declared_schema_and_duckdb_joins_them_without_a_cast(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _exported(url, tmp_path)
    capsys.readouterr()
    assert {"scores", "leaderboard", "runs", "dataset/scores", "dataset/studies"} <= set(files)
    assert len(files) >= 20, sorted(files)
    for table, path in files.items():
        schema = pq.read_schema(path).remove_metadata()
        assert schema.equals(declared_schema(table)), (table, schema)
    assert pq.read_table(files["scores"]).num_rows > 0
    for table in (*TABLES, *(f"dataset/{name}" for name in DATASET)):
        schema = pq.read_schema(_empty(table, tmp_path)).remove_metadata()
        assert schema.equals(declared_schema(table)), (table, schema)
    # the types the issue found wrong: one question_id type, integers and timestamps kept
    for table in ("scores", "pairwise-judgments", "unscored", "silver-aggregate"):
        assert declared_schema(table).field("question_id").type == pa.int64()
    assert declared_schema("dataset/studies").field("created_at").type == pa.timestamp(
        "us", tz="UTC")
    studies = pq.read_table(files["dataset/studies"]).column("created_at")
    assert studies.type == pa.timestamp("us", tz="UTC") and studies.null_count == 0
    _joins_without_a_cast(files, tmp_path)


def _joins_without_a_cast(exported: dict[str, Path], tmp_path: Path) -> None:
    """DuckDB joins every pair of files (exported and empty) on their shared keys, and
    reads each key column as one type in all of them."""
    import duckdb

    files = {**{f"empty {t}": _empty(t, tmp_path) for t in
                (*TABLES, *(f"dataset/{name}" for name in DATASET))},
             **exported}
    con = duckdb.connect()
    columns = {name: {c: t for c, t, *_ in con.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()}
        for name, path in files.items()}
    joined = 0
    for (a, path_a), (b, path_b) in itertools.combinations(files.items(), 2):
        shared = [k for k in KEYS if k in columns[a] and k in columns[b]]
        if not shared:
            continue
        on = " AND ".join(f'x."{k}" = y."{k}"' for k in shared)
        # a VARCHAR key against a BIGINT one is a Binder Error ("an explicit cast is required")
        con.execute(f"SELECT count(*) FROM read_parquet('{path_a}') x "
                    f"JOIN read_parquet('{path_b}') y ON {on}").fetchone()
        joined += 1
    assert joined > 500, joined
    # one type per key column across every file, empty or not
    for key in KEYS:
        kinds = {columns[name][key] for name in files if key in columns[name]}
        assert len(kinds) == 1, (key, {n: columns[n][key] for n in files if key in columns[n]})
    # the full scores table and an empty one stack with question_id still an integer
    union = con.execute(
        f"DESCRIBE SELECT * FROM read_parquet('{files['scores']}') UNION ALL BY NAME "
        f"SELECT * FROM read_parquet('{files['empty scores']}')").fetchall()
    assert dict((c, t) for c, t, *_ in union)["question_id"] == "BIGINT"


def test_a_value_that_does_not_fit_its_declared_type_is_named() -> None:
    frame = pd.DataFrame([{c: None for c in declared_schema("leaderboard").names}])
    frame["model"], frame["n"] = "A", 2.5
    with pytest.raises(ValueError, match="column 'n' of table 'leaderboard'"):
        typed_table(frame, "leaderboard")
    frame = pd.DataFrame([{c: "x" for c in declared_schema("scores").names}])
    frame["question_id"], frame["sample"], frame["seed"], frame["score"] = "3", 0, None, 7
    frame["meeting"] = None
    with pytest.raises(ValueError, match="'meeting' of table 'scores' holds 1 nulls"):
        typed_table(frame, "scores")
    frame["meeting"] = "m"
    typed = typed_table(frame, "scores")
    assert typed.column("question_id").to_pylist() == [3]  # text of digits: the integer
    assert typed.column("score").type == pa.float64()
