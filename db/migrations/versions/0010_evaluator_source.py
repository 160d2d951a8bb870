"""evaluators: the source that writes each one's scores (release, csv, judge, metric, study,
inspect, lm-eval), so that no source writes under another's evaluator (db/evaluators.py,
evaluator_for)

Stored evaluators get the source that made them, read from what they hold: the release's four
evaluators, a study's ``<pool>:<study>`` evaluator, a harness scorer by its description, a
metric by its kind, a judge pass by its pass records; any other one came from a scores CSV.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 23:55:00
"""
import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0010'
down_revision: str | None = '0009'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_RELEASE = {"gpt-4", "prometheus", "gold-human", "silver-human"}
_HARNESS = {"inspect_ai scorer ": "inspect", "lm-evaluation-harness scorer ": "lm-eval"}


def _source(slug: str, kind: str, description: str, config: object, scores: int) -> str:
    if isinstance(config, str):
        config = json.loads(config or "{}")
    if slug in _RELEASE:  # a pool of annotators a study made, unless the release filled it
        return "release" if scores or kind != "human" else "pool"
    if kind == "human" and slug.split(":", 1)[0] in ("gold-human", "silver-human") \
            and ":" in slug:
        return "study"
    for start, source in _HARNESS.items():
        if (description or "").startswith(start):
            return source
    if kind == "metric":
        return "metric"
    if isinstance(config, dict) and config.get("passes"):
        return "judge"
    return "csv"


def upgrade() -> None:
    # plain ALTER TABLE (no batch copy: other tables' foreign keys point at evaluator)
    op.add_column('evaluator', sa.Column('source', sa.String(length=16), nullable=False,
                                         server_default=''))
    bind = op.get_bind()
    rows = bind.execute(sa.text(
        "SELECT id, slug, kind, description, config, (SELECT count(*) FROM score WHERE "
        "score.evaluator_id = evaluator.id) FROM evaluator"))
    for id_, slug, kind, description, config, scores in list(rows):
        bind.execute(sa.text("UPDATE evaluator SET source = :s WHERE id = :i"),
                     {"s": _source(slug, kind, description, config, scores), "i": id_})


def downgrade() -> None:
    op.drop_column('evaluator', 'source')
