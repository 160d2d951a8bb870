"""A study as a whole (db/studies.py): candidate responses, items, look-ups, references,
exclusions and aggregates, on the synthetic annotation benchmark of
tests/elitr_core/annotation_data.py."""

from __future__ import annotations

from sqlmodel import select

from db import queue as ann
from db import studies
from db.evaluators import evaluator_slug
from db.models import Score
from db.transaction import reading, writing
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import (
    MEETINGS,
    MODELS,
    QUESTIONS,
    gold_value,
    make_annotator,
    make_queue,
    make_study,
    queue_row,
)

M1, M2 = MEETINGS


def test_candidate_responses(annotation_url: str) -> None:
    with reading(open_database(annotation_url)) as session:
        every = studies.candidate_responses(session=session)
        some = studies.candidate_responses(session=session, models=MODELS[:2], meetings=(M2,),
                                       split="test2", setting="qa", mode="st")
        none = studies.candidate_responses(session=session, setting="conv")
    assert len(every) == len(MEETINGS) * QUESTIONS * len(MODELS)
    keys = [(r["meeting"], r["question_id"], r["model"]) for r in every]
    assert keys == sorted(keys)
    assert len(some) == QUESTIONS * 2
    assert {(r["meeting"], r["model"]) for r in some} == {(M2, m) for m in MODELS[:2]}
    assert none == []


def test_studies_and_their_items(annotation_url: str) -> None:
    engine = open_database(annotation_url)
    with writing(engine) as session:
        first, pool = make_study(session, "first")
        second, _ = make_study(session, "second")
        again = studies.candidate_responses(session=session)
        studies.add_study_items(session=session, study_id=first.id,  # idempotent
                            items=[(r["response_id"], r["meeting"]) for r in again])
        ids = (first.id, second.id)
    with reading(engine) as session:
        assert [s.name for s in studies.list_studies(session=session)] == ["second", "first"]
        found = studies.study_by_name(session=session, name="first", lock=True)
        assert found is not None and found.id == ids[0]
        assert studies.study_by_name(session=session, name="nope") is None
        assert evaluator_slug(session=session, evaluator_id=pool) == "silver-x"
        items = studies.study_items(session=session, study_id=ids[0])
        unit = ann.unit_items(session=session, study_id=ids[0], unit=M1)
    assert len(items) == len(MEETINGS) * QUESTIONS * len(MODELS)
    assert sorted(set(items.values())) == sorted(MEETINGS)
    assert len(unit) == QUESTIONS * len(MODELS)
    assert [u["response_id"] for u in unit] == sorted(u["response_id"] for u in unit)
    assert all(items[u["response_id"]] == M1 for u in unit)
    assert unit[0]["reference"].startswith("Reference answer ")


def test_exclusion_references_and_aggregates(annotation_url: str) -> None:
    engine = open_database(annotation_url)
    with writing(engine) as session:
        study, pool = make_study(session)
        alice = make_annotator(session, pool, "alice")
        make_queue(session, study, alice, M2)
        for position in range(QUESTIONS * len(MODELS)):
            assignment = queue_row(session, study.id, alice.id, position)
            assert assignment.id is not None
            # the answer and the study's aggregate of its response
            ann.record_answer(session=session, assignment=assignment, evaluator_id=pool,
                              value=5.0, comment=None, unclear=False, seconds=1.0)
        ids = (pool, alice.id)
    n = QUESTIONS * len(MODELS)
    with writing(engine) as session:
        assert studies.set_scores_status(session=session, evaluator_id=ids[0],
                                     annotator_id=ids[1], status="excluded") == n
    with reading(engine) as session:
        assert studies.study_score_rows(session=session, evaluator_id=ids[0],
                                    statuses=("ok",)) == []
        kept = studies.study_score_rows(session=session, evaluator_id=ids[0])
        gold = studies.reference_values(session=session, slug="gold-human")
        mine = studies.reference_values(session=session, slug="silver-x")
    assert len(kept) == n and {s["status"] for s in kept} == {"excluded"}
    assert len(gold) == len(MEETINGS) * QUESTIONS * len(MODELS)
    assert set(gold.values()) <= {gold_value(m, q, k) for m in range(2)
                                  for q in range(1, QUESTIONS + 1) for k in range(3)}
    assert len(mine) == n and set(mine.values()) == {5.0}  # aggregates only
    with writing(engine) as session:
        studies.delete_aggregates(session=session, evaluator_id=ids[0])
    with reading(engine) as session:
        left = session.exec(select(Score.annotator_key).where(Score.evaluator_id == ids[0]))
        assert set(left.all()) == {ids[1]}  # the annotator's own scores stay
        assert len(studies.reference_values(session=session, slug="gold-human")) == len(gold)
