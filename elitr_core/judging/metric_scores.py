"""N-gram metrics stored as evaluators (``rouge-l``, ``token-f1``), computed on demand.

Each metric becomes an evaluator of kind ``metric`` whose scores (mapped onto 1..10) enter every
comparison like a judge's. Scores already stored are the cache: a second call computes only the
responses that have none yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session

from db.evaluators import evaluator_for
from db.responses import responses_without_score
from db.runs import ScoreFilter
from db.scores import score_row, upsert_scores
from elitr_core.errors import UserError
from elitr_core.judging.metrics import METRICS, metric_score

DESCRIPTIONS = {
    "rouge-l": "ROUGE-L F1 against the reference (Lin 2004), 1 + 9 x value",
    "token-f1": "SQuAD token F1 against the reference (Rajpurkar et al. 2016), 1 + 9 x value",
}


def compute_metrics(
    session: Session, slugs: Sequence[str], flt: ScoreFilter | None = None
) -> dict[str, int]:
    """Score every matching response with each metric not yet stored; return how many were
    computed per metric.

    Raises
    ------
    UserError
        An unknown metric slug.
    """
    unknown = [s for s in slugs if s not in METRICS]
    if unknown:
        raise UserError(f"unknown metric(s) {', '.join(unknown)}: choose from "
                        f"{', '.join(METRICS)}")
    flt = flt or ScoreFilter()
    computed: dict[str, int] = {}
    for slug in slugs:
        evaluator_id = evaluator_for(session=session, slug=slug, kind="metric",
                                     source="metric", description=DESCRIPTIONS.get(slug, ""))
        todo = responses_without_score(session, evaluator_id, flt)
        upsert_scores(session=session, rows=[
            score_row(response_id=rid, evaluator_id=evaluator_id,
                      value=metric_score(slug, text, reference))
            for rid, text, reference in todo
        ])
        computed[slug] = len(todo)
    return computed
