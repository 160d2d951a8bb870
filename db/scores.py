"""Scores: one response scored by one evaluator (one annotator, one judge sample). Their key
(:data:`SCORE_KEY`) and the rows that write them (imports, judge passes, metrics), what a
pass resumes from, the long ``scores`` rows the analyses read and their id-level records,
the judge outputs stored with them, counts by evaluator and status. Plain rows, no
statistics; many scores at once go through :mod:`db.score_staging`."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import (
    NO_SEED,
    Annotator,
    Evaluator,
    Meeting,
    PairwiseJudgment,
    Question,
    Response,
    Run,
    Score,
)
from db.responses import response_key_columns
from db.runs import ScoreFilter, filter_runs, run_label


def _of_what(stmt: Any) -> Any:
    """``stmt`` (a SELECT over scores) joined to what each score is of: its response, run,
    question, meeting and evaluator (one chain for the long rows, judge outputs and unparsed
    outputs)."""
    return (stmt
            .join(Response, col(Response.id) == col(Score.response_id))
            .join(Run, col(Run.id) == col(Response.run_id))
            .join(Question, col(Question.id) == col(Response.question_id))
            .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
            .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id)))


def score_statement(flt: ScoreFilter) -> Any:
    """The SELECT behind :func:`score_rows` and :func:`score_records` (stable order)."""
    stmt: Any = (
        _of_what(sa_select(
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
        ))
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
        sa_select(col(Response.run_id), col(Response.question_id), col(Score.evaluator_id),
               col(Score.annotator_id), col(Score.sample), col(Score.value))
        .join(Response, col(Response.id) == col(Score.response_id))
        .where(col(Score.status) == flt.status)
    )
    runs: Any = filter_runs(sa_select(col(Run.id), col(Run.split), col(Run.setting),
                                   col(Run.mode), col(Run.seed), run_label()), flt)
    evaluators: Any = sa_select(col(Evaluator.id), col(Evaluator.slug))
    if flt.evaluators:
        evaluators = evaluators.where(col(Evaluator.slug).in_(flt.evaluators))
    if flt != ScoreFilter(status=flt.status):
        stmt = stmt.where(col(Response.run_id).in_(runs.with_only_columns(col(Run.id))))
        stmt = stmt.where(col(Score.evaluator_id).in_(
            evaluators.with_only_columns(col(Evaluator.id))))
    questions = (
        sa_select(col(Question.id), col(Meeting.external_id), col(Question.number),
               col(Question.question_type), col(Question.answer_position))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
    )
    return {
        "scores": _fetch_raw(session, stmt),
        "runs": [tuple(r) for r in session.execute(runs)],
        "questions": [tuple(r) for r in session.execute(questions)],
        "evaluators": [tuple(r) for r in session.execute(evaluators)],
        "annotators": [tuple(r) for r in session.execute(
            sa_select(col(Annotator.id), col(Annotator.name)))],
    }


def scores_per_evaluator(session: Session) -> list[dict[str, Any]]:
    """Scores per evaluator and status."""
    stmt: Any = (
        sa_select(
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
        _of_what(sa_select(
            *response_key_columns(),
            col(Evaluator.slug).label("evaluator"),
            col(Score.sample),
            col(Score.raw).label("feedback"),
        ))
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


SCORE_KEY: tuple[str, ...] = ("response_id", "evaluator_id", "annotator_key", "sample")


def score_row(
    *,
    response_id: int,
    evaluator_id: int,
    value: float | None,
    annotator_id: int | None = None,
    sample: int = 0,
    status: str = "ok",
) -> dict[str, Any]:
    """A row for :func:`upsert_scores` (the annotator key is 0 for judges and aggregates)."""
    return {
        "response_id": response_id,
        "evaluator_id": evaluator_id,
        "annotator_id": annotator_id,
        "annotator_key": annotator_id or 0,
        "sample": sample,
        "value": value,
        "status": status,
    }


def upsert_scores(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Write many imported scores at once (value and status updated on a key conflict)."""
    upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY, update=["value", "status"])


def upsert_judgments(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store judge scores; a judgment asked again replaces value, status, reason and output."""
    upsert(session=session, table=Score, rows=rows, keys=SCORE_KEY,
           update=["value", "status", "reason", "raw"])


def has_scores(*, session: Session, evaluator_id: int) -> bool:
    """Whether the evaluator holds any score."""
    stmt = select(Score.id).where(Score.evaluator_id == evaluator_id).limit(1)
    return session.exec(stmt).first() is not None


def score_states(*, session: Session, evaluator_id: int) -> dict[tuple[int, int], str]:
    """(response id, sample) -> status of an evaluator's annotator-less scores."""
    stmt = select(Score.response_id, Score.sample, Score.status).where(
        Score.evaluator_id == evaluator_id, Score.annotator_key == 0)
    return {(rid, sample): status for rid, sample, status in session.exec(stmt)}


def status_counts(*, session: Session, evaluator_ids: Collection[int | None],
                  pairwise: bool = False) -> dict[tuple[int, str], int]:
    """(evaluator id, status) -> how many scores (pairwise judgments with ``pairwise``)."""
    if not evaluator_ids:
        return {}
    table: Any = PairwiseJudgment if pairwise else Score
    stmt: Any = (sa_select(table.evaluator_id, table.status, func.count())
                 .where(table.evaluator_id.in_(list(evaluator_ids)))
                 .group_by(table.evaluator_id, table.status))
    return {(eid, status): n for eid, status, n in session.execute(stmt)}


def unparsed_scores(*, session: Session, evaluator: str | None = None,
                    limit: int = 500) -> list[dict[str, Any]]:
    """Judge outputs stored without a score (status ``unparsed``): evaluator, model, setting,
    mode, split, meeting, question, sample, reason, output; by evaluator, model, meeting,
    question, sample."""
    stmt: Any = (
        _of_what(sa_select(
            col(Evaluator.slug).label("evaluator"), col(Run.model), col(Run.setting),
            col(Run.mode), col(Run.split), col(Meeting.external_id).label("meeting"),
            col(Question.number).label("question"), col(Score.sample), col(Score.reason),
            col(Score.raw).label("output")))
        .where(col(Score.status) == "unparsed")
        .order_by(col(Evaluator.slug), col(Run.model), col(Meeting.external_id),
                  col(Question.number), col(Score.sample))
        .limit(limit))
    if evaluator:
        stmt = stmt.where(col(Evaluator.slug) == evaluator)
    return [dict(row._mapping) for row in session.execute(stmt)]
