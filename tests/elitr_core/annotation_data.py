"""A small synthetic benchmark for annotation tests (fast on SQLite and PostgreSQL).

MEETINGS meetings x QUESTIONS questions x MODELS models, setting qa, mode st, split test2, and
a gold-human aggregate score per response (``gold_value``).
"""

from __future__ import annotations

from sqlmodel import select

from db.evaluators import upsert_evaluator
from db.keyed import upsert
from db.models import Meeting, Question, Response, Run
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
