"""filler answers: the replies of an interleaved run's answered fillers (issue 44 item 4,
``generate --interleave K --answered-filler``), stored apart from the benchmark's answers

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28 03:20:00

A new table only: runs made before have no answered filler.
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0011'
down_revision: str | None = '0010'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'filleranswer',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('conversation', sa.Integer(), nullable=False),
        sa.Column('turn', sa.Integer(), nullable=False),
        sa.Column('gap', sa.Integer(), nullable=False),
        sa.Column('question', sa.Text(), nullable=False),
        sa.Column('expected', sa.Text(), nullable=False),
        sa.Column('text', sa.Text(), nullable=False),
        sa.Column('correct', sa.Integer(), nullable=False),
        sa.Column('total', sa.Integer(), nullable=False),
        sa.Column('followed', sa.Boolean(), nullable=False),
        sa.Column('meta', sa.JSON(), nullable=False),
        sa.Column('created_at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['run.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'conversation', 'turn', name='uq_filler_turn'),
    )
    op.create_index(op.f('ix_filleranswer_run_id'), 'filleranswer', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_filleranswer_run_id'), table_name='filleranswer')
    op.drop_table('filleranswer')
