"""Queries and writes of studies, participations, queues and answers (db/annotation.py), on the
synthetic annotation benchmark of tests/elitr_core/annotation_data.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlmodel import Session, select

from db import annotation as ann
from db import studies
from db.evaluators import (
    add_annotator,
    evaluator_slug,
    upsert_evaluator,
)
from db.models import Annotator, Participation, Score, Study, utcnow
from db.transaction import reading, writing
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import MEETINGS, MODELS, QUESTIONS, build, gold_value

M1, M2 = MEETINGS


@pytest.fixture
def url(sqlite_url: str) -> str:
    build(sqlite_url)
    return sqlite_url


def _study(session: Session, name: str = "s1") -> tuple[Study, int]:
    """A study of the silver-x pool over every response, one unit per meeting."""
    pool = upsert_evaluator(session=session, slug="silver-x", kind="human")
    study = Study(name=name, evaluator_id=pool)
    session.add(study)
    session.flush()
    assert study.id is not None
    items = [(r["response_id"], r["meeting"])
             for r in studies.candidate_responses(session=session)]
    studies.add_study_items(session=session, study_id=study.id, items=items)
    return study, pool


def _annotator(session: Session, pool: int, name: str, **kw: Any) -> Annotator:
    return add_annotator(session=session, evaluator_id=pool, name=name, **kw)


def _queue(session: Session, study: Study, annotator: Annotator, unit: str,
           checks: int = 0) -> Participation:
    """A participation in ``unit`` and its queue: the unit's items, then attention checks."""
    assert study.id is not None and annotator.id is not None
    part = ann.add_participation(session=session, study_id=study.id,
                                 annotator_id=annotator.id, unit=unit, order_seed=1)
    items = ann.unit_items(session=session, study_id=study.id, unit=unit)
    start = ann.next_position(session=session, study_id=study.id, annotator_id=annotator.id)
    rows = [{"study_id": study.id, "annotator_id": annotator.id, "response_id": i["response_id"],
             "position": start + n, "kind": "item", "participation_id": part.id}
            for n, i in enumerate(items)]
    rows += [{"study_id": study.id, "annotator_id": annotator.id,
              "response_id": items[n]["response_id"], "position": start + len(items) + n,
              "kind": "attention-high", "participation_id": part.id,
              "check_text": items[n]["reference"]} for n in range(checks)]
    ann.add_assignments(session=session, rows=rows)
    return part


def _target(session: Session, study_id: Any, annotator_id: Any, position: int) -> Any:
    """The annotator's own queue row at ``position`` as a submit reads it (id None: not theirs)."""
    return ann.answer_target(session=session, study_id=study_id,
                             annotator_id=annotator_id, position=position)


def test_candidate_responses(url: str) -> None:
    with reading(open_database(url)) as session:
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


def test_studies_and_their_items(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        first, pool = _study(session, "first")
        second, _ = _study(session, "second")
        again = studies.candidate_responses(session=session)
        studies.add_study_items(session=session, study_id=first.id,  # idempotent
                            items=[(r["response_id"], r["meeting"]) for r in again])
        ids = (first.id, second.id)
    with reading(engine) as session:
        assert [s.name for s in ann.list_studies(session=session)] == ["second", "first"]
        found = ann.study_by_name(session=session, name="first", lock=True)
        assert found is not None and found.id == ids[0]
        assert ann.study_by_name(session=session, name="nope") is None
        assert evaluator_slug(session=session, evaluator_id=pool) == "silver-x"
        items = studies.study_items(session=session, study_id=ids[0])
        unit = ann.unit_items(session=session, study_id=ids[0], unit=M1)
    assert len(items) == len(MEETINGS) * QUESTIONS * len(MODELS)
    assert sorted(set(items.values())) == sorted(MEETINGS)
    assert len(unit) == QUESTIONS * len(MODELS)
    assert [u["response_id"] for u in unit] == sorted(u["response_id"] for u in unit)
    assert all(items[u["response_id"]] == M1 for u in unit)
    assert unit[0]["reference"].startswith("Reference answer ")


def test_claims_queues_and_answers(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        study, pool = _study(session)
        alice = _annotator(session, pool, "alice", token_hash="h-alice", external_id="PID-A")
        bob = _annotator(session, pool, "bob")
        part = _queue(session, study, alice, M1, checks=1)
        _queue(session, study, bob, M1)
        ann.add_assignments(session=session, rows=[{  # the same position again: no change
            "study_id": study.id, "annotator_id": alice.id, "response_id": 1, "position": 0,
            "kind": "item", "participation_id": part.id}])
        ids = {"study": study.id, "pool": pool, "alice": alice.id, "bob": bob.id,
               "part": part.id}
    n_items = QUESTIONS * len(MODELS)
    with reading(engine) as session:
        assert ann.unit_claims(session=session, study_id=ids["study"]) == {M1: 2, M2: 0}
        assert ann.next_position(session=session, study_id=ids["study"],
                                 annotator_id=ids["alice"]) == n_items + 1
        counts = ann.queue_counts(session=session, study_id=ids["study"],
                                  annotator_id=ids["alice"])
        assert counts is not None
        assert (counts.total, counts.answered, counts.first_open) == (n_items + 1, 0, 0)
        assert _target(session, ids["study"], ids["bob"], n_items).id is None
        assert ann.count_active(session=session, study_id=ids["study"],
                                since=utcnow() - timedelta(minutes=5)) == 2
        assert ann.count_active(session=session, study_id=ids["study"],
                                since=utcnow() + timedelta(minutes=5)) == 0

    with writing(engine) as session:  # alice answers everything
        for position in range(n_items + 1):
            assignment = _target(session, ids["study"], ids["alice"], position)
            assert assignment.id is not None
            ann.record_answer(session=session, assignment=assignment,
                              evaluator_id=ids["pool"], value=7.0 if position else 2.0,
                              comment="vague" if position == 0 else None,
                              unclear=position == 1, seconds=3.0)
        ann.finish_participations(session=session, study_id=ids["study"],
                                  annotator_id=ids["alice"])
        ann.finish_participations(session=session, study_id=ids["study"],
                                  annotator_id=ids["bob"])
    with reading(engine) as session:
        counts = ann.queue_counts(session=session, study_id=ids["study"],
                                  annotator_id=ids["alice"])
        assert counts is not None
        assert (counts.total, counts.answered, counts.first_open) == (n_items + 1,
                                                                      n_items + 1, None)
        statuses = {p.annotator_id: p.status
                    for p in ann.participations(session=session, study_id=ids["study"])}
        assert statuses == {ids["alice"]: "done", ids["bob"]: "active"}
        progress = {r["annotator"]: r for r in studies.progress_rows(session=session,
                                                                 study_id=ids["study"])}
        checks = studies.check_rows(session=session, study_id=ids["study"])
        scores = studies.study_score_rows(session=session, evaluator_id=ids["pool"])
        own = ann.item_row(session=session, study_id=ids["study"],
                           annotator_id=ids["alice"], position=0)
        bob_first = ann.item_row(session=session, study_id=ids["study"],
                                 annotator_id=ids["bob"], position=0)
    assert (progress["alice"]["items"], progress["alice"]["answered"]) == (n_items + 1,
                                                                          n_items + 1)
    assert (progress["bob"]["items"], progress["bob"]["answered"]) == (n_items, 0)
    assert (progress["alice"]["checks"], progress["bob"]["checks"]) == (1, 0)
    assert checks == [{"annotator_id": ids["alice"], "kind": "attention-high",
                       "check_value": 7.0}]  # kept out of the scores
    assert len(scores) == n_items and {s["annotator"] for s in scores} == {"alice"}
    assert {s["meeting"] for s in scores} == {M1}
    assert own is not None and (own.value, own.raw) == (2.0, "vague")
    assert bob_first is not None and bob_first.value is None  # never anyone else's score
    assert own.response.startswith("Answer of responder") and own.setting == "qa"
    assert "model" not in own._fields  # an item never shows which model answered


def test_a_revised_answer_updates_its_score_and_adds_the_time(db_url: str) -> None:
    build(db_url, questions=1, meetings=(M1,))
    engine = open_database(db_url)
    with writing(engine) as session:
        study, pool = _study(session)
        alice = _annotator(session, pool, "alice")
        _queue(session, study, alice, M1)
        ids = (study.id, pool, alice.id)
    for value, seconds in ((4.0, 10.0), (6.0, 2.5)):
        with writing(engine) as session:
            assignment = _target(session, ids[0], ids[2], 0)
            assert assignment.id is not None
            ann.record_answer(session=session, assignment=assignment, evaluator_id=ids[1],
                              value=value, comment=None, unclear=False, seconds=seconds)
    with reading(engine) as session:
        scores = session.exec(select(Score).where(Score.evaluator_id == ids[1])
                              .order_by(Score.annotator_key.desc())).all()
    # the answer, and its response's aggregate (the mean of the study's answers) beside it
    assert [(s.value, s.seconds_spent, s.annotator_key) for s in scores] == [
        (6.0, 12.5, ids[2]), (6.0, None, 0)]


def test_exclusion_references_and_aggregates(url: str) -> None:
    engine = open_database(url)
    with writing(engine) as session:
        study, pool = _study(session)
        alice = _annotator(session, pool, "alice")
        _queue(session, study, alice, M2)
        for position in range(QUESTIONS * len(MODELS)):
            assignment = _target(session, study.id, alice.id, position)
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
