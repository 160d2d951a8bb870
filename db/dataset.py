"""Read queries of the shared dataset (``export dataset``): studies and the order
in which annotators were added (their pseudonyms follow it). No Prolific id, completion code
or token is read here."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlmodel import Session, col

from db.models import Evaluator, Participation, Study, StudyItem


def study_rows(*, session: Session) -> list[dict[str, Any]]:
    """Every study's design (not its Prolific settings): name, evaluator, assignment, scores
    per item, attention-check rate, status, creation time, items and annotators."""
    items = (select(func.count()).where(col(StudyItem.study_id) == col(Study.id))
             .scalar_subquery())
    people = (select(func.count(func.distinct(col(Participation.annotator_id))))
              .where(col(Participation.study_id) == col(Study.id)).scalar_subquery())
    stmt = (select(col(Study.name).label("study"), col(Evaluator.slug).label("evaluator"),
                   col(Study.assignment), col(Study.per_item), col(Study.attention_rate),
                   col(Study.status), col(Study.created_at), items.label("items"),
                   people.label("annotators"))
            .join(Evaluator, col(Evaluator.id) == col(Study.evaluator_id))
            .order_by(col(Study.name)))
    return [dict(row._mapping) for row in session.execute(stmt)]


