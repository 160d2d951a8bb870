"""The annotator's queue (db/queue.py): claims, participations, assignments and answers, on the
synthetic annotation benchmark of tests/elitr_core/annotation_data.py."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import select

from db import queue as ann
from db import studies
from db.models import Score, utcnow
from db.transaction import reading, writing
from elitr_core.data.database import open_database
from tests.elitr_core.annotation_data import (
    MEETINGS,
    MODELS,
    QUESTIONS,
    build,
    make_annotator,
    make_queue,
    make_study,
    queue_row,
)

M1, M2 = MEETINGS


def test_claims_queues_and_answers(annotation_url: str) -> None:
    engine = open_database(annotation_url)
    with writing(engine) as session:
        study, pool = make_study(session)
        alice = make_annotator(session, pool, "alice", token_hash="h-alice", external_id="PID-A")
        bob = make_annotator(session, pool, "bob")
        part = make_queue(session, study, alice, M1, checks=1)
        make_queue(session, study, bob, M1)
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
        assert queue_row(session, ids["study"], ids["bob"], n_items).id is None
        assert ann.count_active(session=session, study_id=ids["study"],
                                since=utcnow() - timedelta(minutes=5)) == 2
        assert ann.count_active(session=session, study_id=ids["study"],
                                since=utcnow() + timedelta(minutes=5)) == 0

    with writing(engine) as session:  # alice answers everything
        for position in range(n_items + 1):
            assignment = queue_row(session, ids["study"], ids["alice"], position)
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
        study, pool = make_study(session)
        alice = make_annotator(session, pool, "alice")
        make_queue(session, study, alice, M1)
        ids = (study.id, pool, alice.id)
    for value, seconds in ((4.0, 10.0), (6.0, 2.5)):
        with writing(engine) as session:
            assignment = queue_row(session, ids[0], ids[2], 0)
            assert assignment.id is not None
            ann.record_answer(session=session, assignment=assignment, evaluator_id=ids[1],
                              value=value, comment=None, unclear=False, seconds=seconds)
    with reading(engine) as session:
        scores = session.exec(select(Score).where(Score.evaluator_id == ids[1])
                              .order_by(Score.annotator_key.desc())).all()
    # the answer, and its response's aggregate (the mean of the study's answers) beside it
    assert [(s.value, s.seconds_spent, s.annotator_key) for s in scores] == [
        (6.0, 12.5, ids[2]), (6.0, None, 0)]


