"""studies: claims as leases (lease_minutes), per-address join limits (join_limit,
join_window_minutes, studyjoin), and the seats admission takes without locking the study

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 18:00:00

Existing studies keep their behaviour: no lease and no join limit (the researcher sets them);
every unit gets ``per_item`` seats, filled by its non-excluded participations in the order
they were made, so nobody already working loses their task.
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = '0008'
down_revision: str | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ADD COLUMN (SQLite too): a batch copy of the study table would drop a table
    # that study items, participations and assignments refer to
    op.add_column('study', sa.Column('lease_minutes', sa.Integer(), nullable=True))
    op.add_column('study', sa.Column('join_limit', sa.Integer(), nullable=True))
    op.add_column('study', sa.Column('join_window_minutes', sa.Integer(), nullable=False,
                                     server_default='60'))
    seat = op.create_table(
        'studyseat',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('study_id', sa.Integer(), nullable=False),
        sa.Column('unit', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('seat', sa.Integer(), nullable=False),
        sa.Column('participation_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['participation_id'], ['participation.id']),
        sa.ForeignKeyConstraint(['study_id'], ['study.id']),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('study_id', 'unit', 'seat', name='uq_study_seat'),
    )
    op.create_index(op.f('ix_studyseat_study_id'), 'studyseat', ['study_id'], unique=False)
    op.create_table(
        'studyjoin',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('study_id', sa.Integer(), nullable=False),
        sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('at', sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(['study_id'], ['study.id']),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_studyjoin_client', 'studyjoin', ['study_id', 'client', 'at'],
                    unique=False)
    _fill_seats(seat)


def _fill_seats(seat: sa.Table) -> None:
    """per_item seats per unit of every study, held by its live participations in order."""
    bind = op.get_bind()
    units = bind.execute(sa.text(
        "SELECT DISTINCT s.id, s.per_item, i.unit FROM study s "
        "JOIN studyitem i ON i.study_id = s.id ORDER BY s.id, i.unit")).all()
    held = bind.execute(sa.text(
        "SELECT study_id, unit, id FROM participation WHERE status != 'excluded' "
        "ORDER BY id")).all()
    holders: dict[tuple[int, str], list[int]] = {}
    for study_id, unit, part_id in held:
        holders.setdefault((study_id, unit), []).append(part_id)
    rows = []
    for study_id, per_item, unit in units:
        mine = holders.get((study_id, unit), [])
        # a unit over-filled before (there was no seat to refuse it) keeps every holder
        for number in range(max(per_item, len(mine))):
            rows.append({"study_id": study_id, "unit": unit, "seat": number,
                         "participation_id": mine[number] if number < len(mine) else None})
    if rows:
        op.bulk_insert(seat, rows)


def downgrade() -> None:
    op.drop_index('ix_studyjoin_client', table_name='studyjoin')
    op.drop_table('studyjoin')
    op.drop_index(op.f('ix_studyseat_study_id'), table_name='studyseat')
    op.drop_table('studyseat')
    for column in ('join_window_minutes', 'join_limit', 'lease_minutes'):
        # ALTER TABLE ... DROP COLUMN (SQLite 3.35+ has it): no copy of the study table
        op.execute(f'ALTER TABLE study DROP COLUMN {column}')
