"""Writes and reads of pairwise judgments (keyword-only, like :mod:`db.scores`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import aliased
from sqlmodel import Session, col

from db import keyed
from db.models import NO_SEED, Evaluator, Meeting, PairwiseJudgment, Question, Response, Run
from db.runs import ScoreFilter, run_label

PAIRWISE_KEY: tuple[str, ...] = ("evaluator_id", "response_a_id", "response_b_id", "order",
                                 "sample")
#: columns a later pass may overwrite (an unparsed judgment asked again)
PAIRWISE_UPDATE: tuple[str, ...] = (
    "status", "reason", "verdict", "completeness_a", "completeness_b", "conciseness_a",
    "conciseness_b", "key_facts", "support", "raw", "raw_facts",
)


def upsert_pairwise(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store judgments; a judgment asked again replaces the stored one of the same key."""
    keyed.upsert(session=session, table=PairwiseJudgment, rows=rows, keys=PAIRWISE_KEY,
                 update=PAIRWISE_UPDATE)


def stored_pairwise_state(
    *, session: Session, evaluator_id: int
) -> dict[tuple[int, int, str, int], tuple[str, list[str] | None, str | None]]:
    """(response a, response b, order, sample) -> (status, key facts, key-facts output)."""
    p = PairwiseJudgment
    stmt = select(col(p.response_a_id), col(p.response_b_id), col(p.order), col(p.sample),
                  col(p.status), col(p.key_facts), col(p.raw_facts)).where(
        col(p.evaluator_id) == evaluator_id)
    return {(a, b, o, s): (status, facts, raw) for a, b, o, s, status, facts, raw
            in session.execute(stmt)}


def _pair_statement(flt: ScoreFilter, status: str) -> Any:
    p = PairwiseJudgment
    resp_a, resp_b = aliased(Response), aliased(Response)
    run_a, run_b = aliased(Run), aliased(Run)
    stmt: Any = (
        select(col(Meeting.external_id).label("meeting"),
               col(Question.number).label("question_id"), col(run_a.split),
               col(run_a.setting), col(run_a.mode), col(run_a.seed),
               col(Evaluator.slug).label("evaluator"), run_label(run_a).label("model_a"),
               run_label(run_b).label("model_b"), col(p.order), col(p.sample),
               col(p.verdict), col(p.completeness_a), col(p.completeness_b),
               col(p.conciseness_a), col(p.conciseness_b), col(p.status), col(p.reason),
               col(p.id), col(p.raw), col(p.raw_facts))
        .join(Evaluator, col(Evaluator.id) == col(p.evaluator_id))
        .join(resp_a, col(resp_a.id) == col(p.response_a_id))
        .join(resp_b, col(resp_b.id) == col(p.response_b_id))
        .join(run_a, col(run_a.id) == col(resp_a.run_id))
        .join(run_b, col(run_b.id) == col(resp_b.run_id))
        .join(Question, col(Question.id) == col(resp_a.question_id))
        .join(Meeting, col(Meeting.id) == col(Question.meeting_id))
        .where(col(p.status) == status)
        .order_by(col(run_a.split), col(run_a.setting), col(run_a.mode),
                  col(Meeting.external_id), col(Question.number), col(Evaluator.slug),
                  col(p.id)))
    for column in ("split", "setting", "mode"):
        if getattr(flt, column):
            stmt = stmt.where(getattr(run_a, column) == getattr(flt, column))
    if flt.evaluators:
        stmt = stmt.where(col(Evaluator.slug).in_(flt.evaluators))
    if flt.models:
        stmt = stmt.where(col(run_a.model).in_(flt.models), col(run_b.model).in_(flt.models))
    return stmt


def pairwise_rows(session: Session, flt: ScoreFilter, *,
                  status: str = "ok") -> list[dict[str, Any]]:
    """Pairwise judgments (status ``ok`` by default) with their question and runs (named by
    :func:`db.runs.run_label`), in question order; ``seed`` None for runs without one."""
    rows = [dict(row._mapping) for row in session.execute(_pair_statement(flt, status))]
    for row in rows:
        row["seed"] = None if row["seed"] == NO_SEED else row["seed"]
    return rows


def pairwise_detail(session: Session, judgment_id: int) -> dict[str, Any] | None:
    """One judgment with the two answers, its key facts and alignment (the key-fact view)."""
    judgment = session.get(PairwiseJudgment, judgment_id)
    if judgment is None:
        return None
    stmt = select(col(Response.id), col(Response.text)).where(
        col(Response.id).in_([judgment.response_a_id, judgment.response_b_id]))
    texts: dict[int, str] = {rid: text for rid, text in session.execute(stmt)}
    out = judgment.model_dump()
    out.update(text_a=texts.get(judgment.response_a_id), text_b=texts.get(judgment.response_b_id))
    return out

