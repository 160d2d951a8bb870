"""Read queries on the small seeded benchmark (tests/small_db.py) and on the bundled data:
filters, the long scores rows and their id-level records (SQLite and PostgreSQL), counts."""

from __future__ import annotations

from collections import Counter
from typing import Any

from db.models import NO_SEED
from db.queries import score_records, score_rows
from db.runs import ScoreFilter
from elitr_core.data.database import open_database, reading
from tests import small_db
from tests.small_db import MEETINGS, read, silver

DEV, TEST2 = MEETINGS


def test_score_rows(small_sqlite: str) -> None:
    rows = read(small_sqlite, score_rows, ScoreFilter())
    assert len(rows) == 288
    keys = [(r["split"], r["setting"], r["mode"], r["model"], r["meeting"], r["question_id"],
             r["evaluator"]) for r in rows]
    assert keys == sorted(keys)  # the stable order of the export
    assert {r["seed"] for r in rows} == {None}  # no seed: None, never the stored -1
    row = next(r for r in rows if r["evaluator"] == "silver-human" and r["annotator"] == "ann2"
               and r["model"] == "C" and r["meeting"] == TEST2 and r["question_id"] == 5
               and r["setting"] == "qa")
    assert row["score"] == silver("ann2", "C", TEST2, 5, "qa") and row["status"] == "ok"
    assert (row["question_type"], row["answer_position"], row["setting"]) == ("who", "M", "qa")
    judged = read(small_sqlite, score_rows, ScoreFilter(evaluators=("gpt-4",), split="dev"))
    assert len(judged) == 36 and {r["annotator"] for r in judged} == {None}
    assert read(small_sqlite, score_rows, ScoreFilter(status="unparsed")) == []


def _joined(records: dict[str, list[tuple[Any, ...]]]) -> Counter[tuple[Any, ...]]:
    """The rows of ``score_records`` joined in Python, as score_rows would give them."""
    runs = {r[0]: r[1:] for r in records["runs"]}
    questions = {q[0]: q[1:3] for q in records["questions"]}
    evaluators = dict(records["evaluators"])
    annotators = dict(records["annotators"])
    return Counter(
        (*questions[q], *runs[run], evaluators[e], annotators.get(a), sample, value)
        for run, q, e, a, sample, value in records["scores"]
        if run in runs and e in evaluators)


FILTERS = (
    ScoreFilter(),
    ScoreFilter(split="dev", evaluators=("gpt-4", "silver-human"), models=("A", "B")),
    ScoreFilter(setting="conv", mode="mt"),
)


def test_score_records_hold_the_score_rows(db_url: str) -> None:
    small_db.build(db_url)
    for flt in FILTERS:
        with reading(open_database(db_url)) as session:
            records = score_records(session, flt)
            rows = score_rows(session, flt)
        expected = Counter(
            (r["meeting"], r["question_id"], r["split"], r["setting"], r["mode"],
             NO_SEED if r["seed"] is None else r["seed"], r["model"], r["evaluator"],
             r["annotator"], r["sample"], r["score"]) for r in rows)
        assert _joined(records) == expected and len(rows) > 0, flt
        if flt != ScoreFilter():  # the filters act in SQL, not only in the join
            assert len(records["scores"]) == len(rows), flt


