"""What the database holds, as the pages read it: overview counts, meetings, runs, studies.

The pages never import ``db`` (ARCHITECTURE.md: pages -> elitr_core -> db); these are the read
queries they show as they are, so they are named here rather than wrapped. Each takes a session
from :func:`elitr_core.data.database.reading`.
"""

from db.benchmark import (
    differentiating_keys,
    meeting_browser,
    meeting_transcript,
    meetings,
    overview_counts,
)
from db.responses import response_rows
from db.runs import ScoreFilter, filter_options, runs_per_model
from db.scores import feedback_rows, scores_per_evaluator
from db.studies import list_studies

__all__ = [
    "ScoreFilter",
    "differentiating_keys",
    "feedback_rows",
    "filter_options",
    "list_studies",
    "meeting_browser",
    "meeting_transcript",
    "meetings",
    "overview_counts",
    "response_rows",
    "runs_per_model",
    "scores_per_evaluator",
]
