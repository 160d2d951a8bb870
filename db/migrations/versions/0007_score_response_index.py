"""scores: drop the index on response_id, which the unique key (response_id, evaluator_id,
annotator_key, sample) already serves as its first column

Every query that filtered or joined score by response_id (alone or with evaluator_id) now
uses uq_score_key's index (tests/db/test_score_index_migration.py reads the plans); each
stored score costs one index entry fewer to write (bench/results/import-2026-11-24.md).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24 09:00:00
"""
from collections.abc import Sequence

from alembic import op

revision: str = '0007'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('score', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_score_response_id'))


def downgrade() -> None:
    with op.batch_alter_table('score', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_score_response_id'), ['response_id'], unique=False)
