"""States a live study passes through, written on top of ``tests.small_db`` (import, not a
conftest): a late annotator with a few items, early annotators who never overlap, a judge that
gives one score to everything, a judge that scored one split, two raters who always disagree.

Each helper adds one evaluator's (or one annotator's) scores for the responses a function
chooses: ``value(model, meeting, number, setting)`` returns the score or ``None`` (not scored).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlmodel import select

from db.evaluators import upsert_evaluator
from db.keyed import upsert
from db.models import Annotator, Meeting, Question, Response, Run
from db.scores import score_row, upsert_scores
from elitr_core.data.database import open_database, writing

Value = Callable[[str, str, int, str], float | None]
DEV, TEST2 = "meeting_en_dev_901", "meeting_en_test2_901"


def add_scores(url: str, slug: str, value: Value, *, annotator: str | None = None,
               kind: str = "llm", status: str = "ok") -> int:
    """Scores of evaluator ``slug`` (of its ``annotator`` when given; ``status="excluded"``
    for an excluded annotator's); the number written."""
    with writing(open_database(url)) as session:
        evaluator = upsert_evaluator(session=session, slug=slug, kind=kind)
        annotator_id = None
        if annotator is not None:
            upsert(session=session, table=Annotator, keys=["evaluator_id", "name"],
                   rows=[{"evaluator_id": evaluator, "name": annotator}])
            annotator_id = session.exec(select(Annotator.id).where(
                Annotator.evaluator_id == evaluator, Annotator.name == annotator)).one()
        meetings = {m.id: m.external_id for m in session.exec(select(Meeting))}
        questions = {q.id: q for q in session.exec(select(Question))}
        runs = {r.id: r for r in session.exec(select(Run))}
        rows = []
        for response in session.exec(select(Response).order_by(Response.id)):
            q, run = questions[response.question_id], runs[response.run_id]
            score = value(run.model, meetings[q.meeting_id], q.number, run.setting)
            if score is not None:
                rows.append(score_row(response_id=response.id, evaluator_id=evaluator,
                                      value=score, annotator_id=annotator_id,
                                      status=status))
        upsert_scores(session=session, rows=rows)
    return len(rows)


def first_items(meeting: str, count: int, offset: int = 0) -> Callable[..., bool]:
    """Whether a response is one of ``count`` responses of ``meeting`` (model A then B then C,
    QA questions 1..6), starting at ``offset``: the unit an early annotator is handed."""
    order = [(m, n) for m in ("A", "B", "C") for n in range(1, 7)]
    chosen = set(order[offset:offset + count])

    def pick(model: str, at: str, number: int, setting: str) -> bool:
        return at == meeting and setting == "qa" and (model, number) in chosen
    return pick
