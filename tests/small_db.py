"""A small scored benchmark for the query, table and CSV tests (fast on SQLite and PostgreSQL).

Two meetings (one dev, one test2) x 6 questions; models A, B, C each with a QA-st and a Conv-mt
run on both splits (12 runs, 72 responses). Question 1 of each meeting is phrased differently
in Conv (the differentiating questions). Scores: ``gold-human`` (aggregate), ``gpt-4`` (judge)
and ``silver-human`` (two annotators, individual scores only), each a planted formula below.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlmodel import Session, select

from db.evaluators import upsert_evaluator
from db.keyed import upsert
from db.models import NO_SEED, Annotator, Meeting, Question, Response, Run, Score, utcnow
from db.scores import SCORE_KEY, score_row, upsert_scores
from elitr_core.data.database import open_database, reading, writing

MODELS = ("A", "B", "C")
MEETINGS = {"meeting_en_dev_901": "dev", "meeting_en_test2_901": "test2"}
QUESTIONS = 6
TYPES = ("what", "who", "when")
POSITIONS = ("B", "M", "E")
SETTING_MODES = (("qa", "st"), ("conv", "mt"))
ANNOTATORS = ("ann1", "ann2")


def gold(model: str, meeting: str, number: int, setting: str) -> float:
    """The gold-human score planted for a response (1..10, varied)."""
    k, m = MODELS.index(model), list(MEETINGS).index(meeting)
    s = [sm[0] for sm in SETTING_MODES].index(setting)
    return float(1 + (k * 3 + number * 2 + m * 5 + s * 7) % 10)


def judge(model: str, meeting: str, number: int, setting: str) -> float:
    """The gpt-4 score: gold shifted by -1, 0 or +1, kept in 1..10."""
    return min(10.0, max(1.0, gold(model, meeting, number, setting) + number % 3 - 1))


def silver(annotator: str, model: str, meeting: str, number: int, setting: str) -> float:
    """An individual silver-human score: ann1 gives gold, ann2 gold +-1 (kept in 1..10)."""
    value = gold(model, meeting, number, setting)
    if annotator == "ann2":
        value += 1 if number % 2 else -1
    return min(10.0, max(1.0, value))


def build(url: str, *, scores: bool = True) -> None:
    """Create the schema and the small benchmark at ``url`` (without its scores and
    evaluators when ``scores`` is false)."""
    with writing(open_database(url)) as session:
        upsert(session=session, table=Meeting, keys=["external_id"],
               rows=[{"external_id": m, "split": s} for m, s in MEETINGS.items()])
        mids = {m.external_id: m.id for m in session.exec(select(Meeting))}
        upsert(session=session, table=Question, keys=["meeting_id", "number"], rows=[
            {"meeting_id": mids[m], "number": n, "question_type": TYPES[(n - 1) % 3],
             "answer_position": POSITIONS[(n - 1) % 3], "qa_text": f"Question {n} of {m}?",
             "conv_text": f"And question {n} of {m}?" if n == 1 else f"Question {n} of {m}?",
             "reference": f"Reference {n} of {m}", "language": "en"}
            for m in MEETINGS for n in range(1, QUESTIONS + 1)])
        upsert(session=session, table=Run,
               keys=["model", "setting", "mode", "split", "seed", "variant", "language"],
               rows=[{"model": model, "setting": setting, "mode": mode, "split": split,
                      "seed": NO_SEED, "variant": "", "language": "en", "backend": "import",
                      "config": {}, "status": "done"}
                     for model in MODELS for setting, mode in SETTING_MODES
                     for split in sorted(set(MEETINGS.values()))])
        runs = {(r.model, r.setting, r.split): r for r in session.exec(select(Run))}
        questions = {q.id: q for q in session.exec(select(Question))}
        meeting_of = {mid: m for m, mid in mids.items()}
        upsert(session=session, table=Response, keys=["run_id", "question_id"], rows=[
            {"run_id": run.id, "question_id": q.id, "meta": {},
             "text": f"{run.model} {run.setting} answers {q.number} of {meeting_of[q.meeting_id]}"}
            for run in runs.values() for q in questions.values()
            if MEETINGS[meeting_of[q.meeting_id]] == run.split])
        if scores:
            _score(session, runs.values(), questions, meeting_of)


def _score(session: Session, runs: Iterable[Run], questions: dict[int, Question],
           meeting_of: dict[int, str]) -> None:
    """Gold, judge and two silver annotators' scores of every response."""
    evaluators = {slug: upsert_evaluator(session=session, slug=slug, kind=kind)
                  for slug, kind in (("gold-human", "human"), ("gpt-4", "llm"),
                                     ("silver-human", "human"))}
    upsert(session=session, table=Annotator, keys=["evaluator_id", "name"],
           rows=[{"evaluator_id": evaluators["silver-human"], "name": a}
                 for a in ANNOTATORS])
    annotators = {a.name: a.id for a in session.exec(select(Annotator))}
    run_of = {r.id: r for r in runs}
    rows = []
    for response in session.exec(select(Response)):
        q = questions[response.question_id]
        run = run_of[response.run_id]
        key = (run.model, meeting_of[q.meeting_id], q.number, run.setting)
        rows.append(score_row(response_id=response.id, evaluator_id=evaluators["gold-human"],
                              value=gold(*key)))
        rows.append(score_row(response_id=response.id, evaluator_id=evaluators["gpt-4"],
                              value=judge(*key)))
        rows += [score_row(response_id=response.id, evaluator_id=evaluators["silver-human"],
                           annotator_id=annotators[a], value=silver(a, *key))
                 for a in ANNOTATORS]
    upsert_scores(session=session, rows=rows)


def upsert_score(
    *,
    session: Session,
    response_id: int,
    evaluator_id: int,
    value: float | None,
    annotator_id: int | None = None,
    sample: int = 0,
    status: str = "ok",
    reason: str | None = None,
    raw: str | None = None,
    seconds_spent: float | None = None,
) -> None:
    """Write one score (a test's fixture); a second write of the same key updates it."""
    upsert(
        session=session,
        table=Score,
        keys=SCORE_KEY,
        update=["value", "status", "reason", "raw", "seconds_spent"],
        rows=[
            score_row(response_id=response_id, evaluator_id=evaluator_id, value=value,
                      annotator_id=annotator_id, sample=sample, status=status)
            | {"reason": reason, "raw": raw, "seconds_spent": seconds_spent,
               "created_at": utcnow(), "updated_at": utcnow()}
        ],
    )


def read(url: str, query: Any, *args: Any, **kw: Any) -> Any:
    """``query(session, *args, **kw)`` in a read of the database at ``url``."""
    with reading(open_database(url)) as session:
        return query(session, *args, **kw)
