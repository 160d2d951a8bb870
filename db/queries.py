"""Read queries that return plain rows for the core (no statistics here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, or_, select
from sqlmodel import Session, col

from db.models import NO_SEED, Annotator, Evaluator, Meeting, Question, Response, Run, Score


@dataclass(frozen=True)
class ScoreFilter:
    """Filters shared by the exports, the CLI and the pages' sidebar (None = no filter)."""

    split: str | None = None
    setting: str | None = None
    mode: str | None = None
    evaluators: tuple[str, ...] | None = None
    models: tuple[str, ...] | None = None
    status: str = "ok"


def run_label(run: Any = Run) -> Any:
    """A run's name in the analyses: its model, with its ``--variant`` in parentheses when it
    has one, so a full-context and a retrieval run of one model (``M`` and ``M (bm25)``) are two
    rows of every table instead of one mixed row. The one place this rule is written: every
    table, page and pairwise judge reads the name from here (``run``: ``Run`` or an alias)."""
    return case((col(run.variant) == "", col(run.model)),
                else_=col(run.model) + " (" + col(run.variant) + ")")


def filter_runs(stmt: Any, flt: ScoreFilter) -> Any:
    """Apply the run filters (split, setting, mode, models) of ``flt`` to a statement on Run;
    a model filter matches a run's model name or its label (:func:`run_label`)."""
    for column, value in (("split", flt.split), ("setting", flt.setting), ("mode", flt.mode)):
        if value:
            stmt = stmt.where(getattr(Run, column) == value)
    if flt.models:
        stmt = stmt.where(or_(col(Run.model).in_(flt.models), run_label().in_(flt.models)))
    return stmt


def _response_key_columns() -> list[Any]:
    """The columns that identify a response (``stats.frame.RESPONSE_KEY``), labelled."""
    return [
        col(Meeting.external_id).label("meeting"), col(Question.number).label("question_id"),
        col(Run.split), col(Run.setting), col(Run.mode), col(Run.seed),
        run_label().label("model"),
    ]


def score_statement(flt: ScoreFilter) -> Any:
    """The SELECT behind :func:`score_rows` and :func:`score_records` (stable order)."""
    stmt: Any = (
        select(
            *_response_key_columns(),
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


def runs_per_model(session: Session) -> list[dict[str, Any]]:
    """One row per run: model (its label, :func:`run_label`, so ``M`` and ``M (bm25)`` stay two
    rows), setting, mode, split, seed, responses."""
    stmt: Any = (
        select(
            run_label().label("model"),
            col(Run.setting),
            col(Run.mode),
            col(Run.split),
            col(Run.seed),
            col(Run.backend),
            func.count(col(Response.id)).label("responses"),
        )
        .outerjoin(Response, col(Response.run_id) == col(Run.id))
        .group_by(col(Run.id))
        .order_by(col(Run.model), col(Run.variant), col(Run.setting), col(Run.mode),
                  col(Run.split))
    )
    return [dict(r._mapping) for r in session.execute(stmt)]


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


def response_rows(session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """Responses with their question and reference texts, for the drilldown question table.

    Keys are those of the ``scores`` export (meeting, question_id, split, setting, mode, seed,
    model) plus question_type, answer_position, ``question`` (the Conv text in the conv setting
    when the question has one, else the QA text), ``reference`` and ``response``. The evaluator
    filter does not apply: a response is listed even when no chosen evaluator scored it.
    """
    from sqlalchemy import case  # local: the module's imports are shared with other work

    question_text = case(
        (
            (col(Run.setting) == "conv") & col(Question.conv_text).is_not(None),
            col(Question.conv_text),
        ),
        else_=col(Question.qa_text),
    )
    stmt: Any = (
        select(
            *_response_key_columns(),
            col(Question.question_type),
            col(Question.answer_position),
            question_text.label("question"),
            col(Question.reference),
            col(Response.text).label("response"),
        )
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .order_by(col(Run.split), col(Run.setting), col(Run.mode), col(Run.model),
                  col(Meeting.external_id), col(Question.number), col(Run.seed))
    )
    rows = [dict(row._mapping) for row in session.execute(filter_runs(stmt, flt))]
    for row in rows:
        row["seed"] = None if row["seed"] == NO_SEED else row["seed"]
    return rows


def feedback_rows(session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """Stored judge outputs (``Score.raw``) of scored rows, one per response, evaluator and sample.

    Keys as in :func:`response_rows` plus ``evaluator``, ``sample`` and ``feedback``; only rows
    whose raw output was stored (imported scores have none).
    """
    stmt: Any = (
        select(
            *_response_key_columns(),
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


def filter_options(session: Session) -> dict[str, list[str]]:
    """The values the sidebar filters offer, each sorted: ``split``, ``setting``, ``mode``,
    ``models`` (of the runs) and ``evaluators`` (those with at least one score)."""

    def distinct(stmt: Any) -> list[str]:
        return sorted(str(v) for (v,) in session.execute(stmt.distinct()) if v is not None)

    return {
        "split": distinct(select(col(Run.split))),
        "setting": distinct(select(col(Run.setting))),
        "mode": distinct(select(col(Run.mode))),
        "models": distinct(select(run_label())),
        "evaluators": distinct(
            select(col(Evaluator.slug)).join(Score, col(Score.evaluator_id) == col(Evaluator.id))
        ),
    }


def responses_without_score(
    session: Session, evaluator_id: int, flt: ScoreFilter
) -> list[tuple[int, str, str]]:
    """(response id, response text, reference) of the filtered responses that this evaluator
    has not scored; a run in another language is compared with the translated reference."""
    from sqlalchemy import and_

    from db.models import QuestionTranslation

    stmt: Any = (
        select(col(Response.id), col(Response.text), col(Question.reference),
               col(QuestionTranslation.reference))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .outerjoin(QuestionTranslation, and_(
            col(QuestionTranslation.question_id) == col(Question.id),
            col(QuestionTranslation.language) == col(Run.language),
        ))
        .outerjoin(Score, and_(col(Score.response_id) == col(Response.id),
                               col(Score.evaluator_id) == evaluator_id))
        .where(col(Score.id).is_(None))
        .order_by(col(Response.id))
    )
    return [(rid, text, translated or reference)
            for rid, text, reference, translated in session.execute(filter_runs(stmt, flt))]
