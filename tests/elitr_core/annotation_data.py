"""A small synthetic benchmark for annotation tests (fast on SQLite and PostgreSQL).

MEETINGS meetings x QUESTIONS questions x MODELS models, setting qa, mode st, split test2, and
a gold-human aggregate score per response (``gold_value``).
"""

from __future__ import annotations

from typing import Any

from sqlmodel import Session, select

from db import queue as ann
from db import studies
from db.evaluators import add_annotator, upsert_evaluator
from db.keyed import upsert
from db.models import Annotator, Meeting, Participation, Question, Response, Run, Study
from db.transaction import writing
from elitr_core.data.database import open_database
from tests.small_db import upsert_score

MODELS = ("Alpha-7B", "Beta-13B", "Gamma-70B")
MEETINGS = ("meeting_en_test2_901", "meeting_en_test2_902")
QUESTIONS = 5


def gold_value(meeting: int, number: int, model: int) -> float:
    """The gold score planted for a response (varied, 1..10)."""
    return float(1 + (meeting * 7 + number * 3 + model * 5) % 10)


def build(url: str, *, questions: int = QUESTIONS, meetings: tuple[str, ...] = MEETINGS) -> None:
    """Create the schema and the synthetic data at ``url``."""
    engine = open_database(url)
    with writing(engine) as session:
        upsert(session=session, table=Meeting, keys=["external_id"],
               rows=[{"external_id": m, "split": "test2"} for m in meetings])
        mids = {m.external_id: m.id for m in session.exec(select(Meeting))}
        upsert(session=session, table=Question, keys=["meeting_id", "number"], rows=[
            {"meeting_id": mids[m], "number": n, "question_type": "what",
             "answer_position": "B", "qa_text": f"Question {n} of {m}?",
             "conv_text": None, "reference": f"Reference answer {n} of {m}", "language": "en"}
            for m in meetings for n in range(1, questions + 1)])
        upsert(session=session, table=Run, keys=["model", "setting", "mode", "split", "seed",
                                                 "variant", "language"], rows=[
            {"model": model, "setting": "qa", "mode": "st", "split": "test2", "seed": -1,
             "variant": "", "language": "en", "backend": "import", "config": {},
             "status": "done"} for model in MODELS])
        runs = {r.model: r.id for r in session.exec(select(Run))}
        qids = {(q.meeting_id, q.number): q.id for q in session.exec(select(Question))}
        upsert(session=session, table=Response, keys=["run_id", "question_id"], rows=[
            {"run_id": runs[model], "question_id": qids[(mids[m], n)], "meta": {},
             "text": f"Answer of responder {k} to question {n} of meeting {i}"}
            for i, m in enumerate(meetings) for n in range(1, questions + 1)
            for k, model in enumerate(MODELS)])
        gold = upsert_evaluator(session=session, slug="gold-human", kind="human")
        for response in session.exec(select(Response)):
            run = next(k for k, model in enumerate(MODELS) if runs[model] == response.run_id)
            q = session.get(Question, response.question_id)
            assert q is not None
            meeting = next(i for i, m in enumerate(meetings) if mids[m] == q.meeting_id)
            upsert_score(session=session, response_id=response.id, evaluator_id=gold,
                         value=gold_value(meeting, q.number, run))


def make_study(session: Session, name: str = "s1") -> tuple[Study, int]:
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


def make_annotator(session: Session, pool: int, name: str, **kw: Any) -> Annotator:
    return add_annotator(session=session, evaluator_id=pool, name=name, **kw)


def make_queue(session: Session, study: Study, annotator: Annotator, unit: str,
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


def queue_row(session: Session, study_id: Any, annotator_id: Any, position: int) -> Any:
    """The annotator's own queue row at ``position`` as a submit reads it (id None: not theirs)."""
    return ann.answer_target(session=session, study_id=study_id,
                             annotator_id=annotator_id, position=position)
