"""Evaluators and the annotators of a human pool (db/evaluators.py): an evaluator created
once, annotators looked up by token digest, Prolific id and name within their pool."""

from __future__ import annotations

from db.evaluators import (
    add_annotator,
    annotator_by_external_id,
    annotator_by_name,
    annotator_by_token_hash,
    upsert_evaluator,
)
from db.keyed import id_map
from db.models import Evaluator
from db.transaction import reading, writing
from elitr_core.data.database import open_database


def test_upsert_evaluator_returns_the_existing_id(small_sqlite: str) -> None:
    with writing(open_database(small_sqlite)) as session:
        first = upsert_evaluator(session=session, slug="new-judge", kind="llm",
                                 description="first")
        again = upsert_evaluator(session=session, slug="new-judge", kind="human",
                                 description="second")
        gold = upsert_evaluator(session=session, slug="gold-human", kind="human")
    assert first == again != gold
    with reading(open_database(small_sqlite)) as session:
        kinds = id_map(session=session, table=Evaluator, keys=["slug", "kind"])
    assert kinds[("new-judge", "llm")] == first  # created once, never overwritten
    assert ("new-judge", "human") not in kinds


def test_annotator_look_ups(annotation_url: str) -> None:
    engine = open_database(annotation_url)
    with writing(engine) as session:
        pool = upsert_evaluator(session=session, slug="silver-x", kind="human")
        other = upsert_evaluator(session=session, slug="silver-y", kind="human")
        alice = add_annotator(session=session, evaluator_id=pool, name="alice",
                              token_hash="h-alice", external_id="PID-A")
        ids = (pool, other, alice.id)
    with reading(engine) as session:
        by_hash = annotator_by_token_hash(session=session, token_hash="h-alice")
        by_pid = annotator_by_external_id(session=session, evaluator_id=ids[0],
                                          external_id="PID-A")
        by_name = annotator_by_name(session=session, evaluator_id=ids[0], name="alice")
        assert by_hash is not None and by_pid is not None and by_name is not None
        assert by_hash.id == by_pid.id == by_name.id == ids[2]
        assert annotator_by_token_hash(session=session, token_hash="h-bob") is None
        assert annotator_by_external_id(session=session, evaluator_id=ids[1],
                                        external_id="PID-A") is None  # another pool
        assert annotator_by_name(session=session, evaluator_id=ids[1], name="alice") is None
