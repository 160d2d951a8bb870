"""Answered fillers: the replies of an interleaved run's fillers (``--answered-filler``),
stored apart from the benchmark's answers (``Response``), read back to resume a conversation
and to report whether the model followed. Keyword-only, ``session`` first."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from sqlalchemy import case, func
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from db.keyed import upsert
from db.models import FillerAnswer, Run
from db.runs import run_label


def upsert_filler_answers(*, session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store filler replies, one per (run, conversation, turn); a stored one is kept."""
    upsert(session=session, table=FillerAnswer, rows=rows,
           keys=["run_id", "conversation", "turn"])


def run_filler_replies(*, session: Session,
                       run_id: int) -> dict[tuple[int, int], tuple[str, Mapping[str, Any]]]:
    """(conversation, turn) -> (stored reply, its metadata) of a run's answered fillers."""
    stmt = select(FillerAnswer.conversation, FillerAnswer.turn, FillerAnswer.text,
                  FillerAnswer.meta).where(FillerAnswer.run_id == run_id)
    return {(c, t): (text, meta) for c, t, text, meta in session.exec(stmt)}


def filler_rows(*, session: Session,
                runs: Collection[int] | None = None) -> list[dict[str, Any]]:
    """Every stored filler reply with its run (label, split, mode, seed, variant), in run,
    conversation and turn order; ``runs``: only those runs."""
    label = run_label().label("model")
    stmt = (sa_select(col(Run.id), label, col(Run.split), col(Run.mode), col(Run.seed),
                   col(Run.variant), col(FillerAnswer.conversation), col(FillerAnswer.turn),
                   col(FillerAnswer.gap), col(FillerAnswer.question),
                   col(FillerAnswer.expected), col(FillerAnswer.text),
                   col(FillerAnswer.correct), col(FillerAnswer.total),
                   col(FillerAnswer.followed))
            .join(Run, col(Run.id) == col(FillerAnswer.run_id))
            .order_by(col(Run.id), col(FillerAnswer.conversation), col(FillerAnswer.turn)))
    if runs is not None:
        stmt = stmt.where(col(Run.id).in_(list(runs)))
    names = ("run", "model", "split", "mode", "seed", "variant", "conversation", "turn",
             "gap", "question", "expected", "reply", "correct", "total", "followed")
    return [dict(zip(names, row, strict=True)) for row in session.execute(stmt)]


def filler_counts(*, session: Session, run_id: int) -> tuple[int, int, int, int]:
    """A run's stored filler replies, those with every sum right, sums right, sums asked."""
    stmt = select(func.count(col(FillerAnswer.id)),
                  func.coalesce(func.sum(case((col(FillerAnswer.followed), 1), else_=0)), 0),
                  func.coalesce(func.sum(col(FillerAnswer.correct)), 0),
                  func.coalesce(func.sum(col(FillerAnswer.total)), 0)
                  ).where(FillerAnswer.run_id == run_id)
    replies, followed, right, asked = session.exec(stmt).one()
    return int(replies), int(followed), int(right), int(asked)
