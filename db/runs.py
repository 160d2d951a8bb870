"""What the Runs page reads: generation runs with their answers' metadata, judge evaluators
with their counts, and the judge outputs that gave no score. The page's rules (progress, a
stopped process, previews) live in ``elitr_core.generation.status``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from sqlalchemy import func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.models import Evaluator, Meeting, PairwiseJudgment, Question, Response, Run, Score
from db.queries import ScoreFilter, filter_runs, run_label


def run_list(*, session: Session, include_imported: bool = False) -> list[Run]:
    """Every run, newest first (imported ones only with ``include_imported``)."""
    stmt = select(Run).order_by(col(Run.id).desc())
    if not include_imported:
        stmt = stmt.where(Run.backend != "import")
    return list(session.exec(stmt))


def metas_by_run(*, session: Session, run_ids: Collection[int]) -> dict[int, list[Any]]:
    """Run id -> the generation metadata of each of its stored answers."""
    metas: dict[int, list[Any]] = defaultdict(list)
    if run_ids:
        stmt = select(Response.run_id, Response.meta).where(
            col(Response.run_id).in_(list(run_ids)))
        for run_id, meta in session.exec(stmt):
            metas[run_id].append(meta)
    return metas


def evaluator_list(*, session: Session) -> list[Evaluator]:
    """Every evaluator, by slug."""
    return list(session.exec(select(Evaluator).order_by(col(Evaluator.slug))))


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
        sa_select(col(Evaluator.slug).label("evaluator"), col(Run.model), col(Run.setting),
                  col(Run.mode), col(Run.split), col(Meeting.external_id).label("meeting"),
                  col(Question.number).label("question"), col(Score.sample),
                  col(Score.reason), col(Score.raw).label("output"))
        .join(Evaluator, col(Evaluator.id) == col(Score.evaluator_id))
        .join(Response, col(Response.id) == col(Score.response_id))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .where(col(Score.status) == "unparsed")
        .order_by(col(Evaluator.slug), col(Run.model), col(Meeting.external_id),
                  col(Question.number), col(Score.sample))
        .limit(limit))
    if evaluator:
        stmt = stmt.where(col(Evaluator.slug) == evaluator)
    return [dict(row._mapping) for row in session.execute(stmt)]


def interleaved_spans(*, session: Session, flt: ScoreFilter) -> list[dict[str, Any]]:
    """One row per answer of an interleaved run (mode ``int2``, ``int3``, ...) under the run
    filters of ``flt``: the columns that identify a response in the ``scores`` export
    (``model`` the run's label, :func:`db.queries.run_label`), the run's own ``model`` as
    ``base_model``, and the answer's metadata (``meta``, which holds its memory span)."""
    stmt: Any = (
        sa_select(col(Meeting.external_id).label("meeting"),
                  col(Question.number).label("question_id"), col(Run.split),
                  col(Run.setting), col(Run.mode), col(Run.seed), run_label().label("model"),
                  col(Run.model).label("base_model"), col(Response.meta))
        .join(Run, col(Run.id) == col(Response.run_id))
        .join(Question, col(Question.id) == col(Response.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .where(col(Run.mode).like("int%"))
        .order_by(col(Response.id)))
    return [dict(row._mapping) for row in session.execute(filter_runs(stmt, flt))]
