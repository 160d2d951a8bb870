"""Read queries of scores that return plain rows for the core (no statistics here)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from db.models import NO_SEED, Annotator, Evaluator, Meeting, Question, Response, Run, Score
from db.responses import response_key_columns
from db.runs import ScoreFilter, filter_runs, run_label


def score_statement(flt: ScoreFilter) -> Any:
    """The SELECT behind :func:`score_rows` and :func:`score_records` (stable order)."""
    stmt: Any = (
        select(
            *response_key_columns(),
            col(Question.question_type),
            col(Question.answer_position),
            col(Evaluator.slug).label("evaluator"),
            col(Annotator.name).label("annotator"),
            col(Score.sample),
            col(Score.value).label("score"),
            col(Score.reason),
            col(Score.status),
            col(Score.id).label("score_id"),
        )
        .join(Response, col(Response.id) == col(Score.response_id))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id))
        .outerjoin(Annotator, col(Annotator.id) == col(Score.annotator_id))
        .where(col(Score.status) == flt.status)
        .order_by(
            col(Run.split),
            col(Run.setting),
            col(Run.mode),
            col(Run.model),
            col(Meeting.external_id),
            col(Question.number),
            col(Evaluator.slug),
            col(Annotator.name),
            col(Score.sample),
        )
    )
    if flt.evaluators:
        stmt = stmt.where(col(Evaluator.slug).in_(flt.evaluators))
    return filter_runs(stmt, flt)


def score_rows(session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """Scored rows in the long format of the ``scores`` export (status ``ok`` by default)."""
    rows = [dict(row._mapping) for row in session.execute(score_statement(flt))]
    for row in rows:
        row["seed"] = None if row["seed"] == NO_SEED else row["seed"]
    return rows


def _fetch_raw(session: Session, stmt: Any) -> list[tuple[Any, ...]]:
    """Rows as plain driver tuples: for a million rows SQLAlchemy's Row objects and type
    processing cost more than the query itself."""
    connection = session.connection()
    compiled = stmt.compile(dialect=connection.dialect,
                            compile_kwargs={"render_postcompile": True})
    params: Any = compiled.params
    if compiled.positional:
        params = tuple(params[name] for name in compiled.positiontup or ())
    cursor = connection.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled), params)
        return list(cursor.fetchall())
    finally:
        cursor.close()


def score_records(session: Session, flt: ScoreFilter) -> dict[str, list[tuple[Any, ...]]]:
    """The scored rows of :func:`score_rows` as id-level tuples plus the small tables they
    point to, so a caller can join them in memory (pandas) far faster than SQL can join and
    sort a million rows.

    Returns ``{"scores": (run_id, question_id, evaluator_id, annotator_id, sample, value),
    "runs": (id, split, setting, mode, seed, model), "questions": (id, meeting, number,
    question_type, answer_position), "evaluators": (id, slug), "annotators": (id, name)}``.
    """
    stmt: Any = (
        select(col(Response.run_id), col(Response.question_id), col(Score.evaluator_id),
               col(Score.annotator_id), col(Score.sample), col(Score.value))
        .join(Response, col(Response.id) == col(Score.response_id))
        .where(col(Score.status) == flt.status)
    )
    runs: Any = filter_runs(select(col(Run.id), col(Run.split), col(Run.setting),
                                   col(Run.mode), col(Run.seed), run_label()), flt)
    evaluators: Any = select(col(Evaluator.id), col(Evaluator.slug))
    if flt.evaluators:
        evaluators = evaluators.where(col(Evaluator.slug).in_(flt.evaluators))
    if flt != ScoreFilter(status=flt.status):
        stmt = stmt.where(col(Response.run_id).in_(runs.with_only_columns(col(Run.id))))
        stmt = stmt.where(col(Score.evaluator_id).in_(
            evaluators.with_only_columns(col(Evaluator.id))))
    questions = (
        select(col(Question.id), col(Meeting.external_id), col(Question.number),
               col(Question.question_type), col(Question.answer_position))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
    )
    return {
        "scores": _fetch_raw(session, stmt),
        "runs": [tuple(r) for r in session.execute(runs)],
        "questions": [tuple(r) for r in session.execute(questions)],
        "evaluators": [tuple(r) for r in session.execute(evaluators)],
        "annotators": [tuple(r) for r in session.execute(
            select(col(Annotator.id), col(Annotator.name)))],
    }


def scores_per_evaluator(session: Session) -> list[dict[str, Any]]:
    """Scores per evaluator and status."""
    stmt: Any = (
        select(
            col(Evaluator.slug).label("evaluator"),
            col(Evaluator.kind),
            col(Score.status),
            func.count(col(Score.id)).label("scores"),
        )
        .join(Score, col(Score.evaluator_id) == col(Evaluator.id))
        .group_by(col(Evaluator.slug), col(Evaluator.kind), col(Score.status))
        .order_by(col(Evaluator.slug))
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


def feedback_rows(session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """Stored judge outputs (``Score.raw``) of scored rows, one per response, evaluator and sample.

    Keys as in :func:`response_rows` plus ``evaluator``, ``sample`` and ``feedback``; only rows
    whose raw output was stored (imported scores have none).
    """
    stmt: Any = (
        select(
            *response_key_columns(),
            col(Evaluator.slug).label("evaluator"),
            col(Score.sample),
            col(Score.raw).label("feedback"),
        )
        .join(Response, col(Response.id) == col(Score.response_id))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id))
        .where(col(Score.status) == flt.status, col(Score.raw).is_not(None))
        .order_by(col(Meeting.external_id), col(Question.number), col(Evaluator.slug),
                  col(Score.sample))
    )
    if flt.evaluators:
        stmt = stmt.where(col(Evaluator.slug).in_(flt.evaluators))
    rows = [dict(row._mapping) for row in session.execute(filter_runs(stmt, flt))]
    for row in rows:
        row["seed"] = None if row["seed"] == NO_SEED else row["seed"]
    return rows


