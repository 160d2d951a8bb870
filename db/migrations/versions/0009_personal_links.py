"""annotators: the one study a personal link made for a study opens (issue 39 item 4)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 23:50:00

Annotators created before have none: their link opens the studies of their pool as before
(which study it was made for was not recorded).
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0009'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # a table of its own, not a column of annotator: SQLite adds a foreign key only by
    # copying the table, which the scores and participations referring to it forbid
    op.create_table(
        'personallink',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('annotator_id', sa.Integer(), nullable=False),
        sa.Column('study_id', sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(['annotator_id'], ['annotator.id']),
        sa.ForeignKeyConstraint(['study_id'], ['study.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('annotator_id'),
    )


def downgrade() -> None:
    op.drop_table('personallink')
