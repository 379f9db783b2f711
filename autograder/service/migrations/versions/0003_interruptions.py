"""Interruptions: how often a job's grading was cut short by the service itself (its grading
process or server ended, not the notebook's worker), never charged to the notebook

Revision ID: 0003_interruptions
Revises: 0002
Create Date: 2026-11-27
"""
from alembic import op
import sqlalchemy as sa


revision = '0003_interruptions'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('interruptions', sa.Integer(), nullable=False,
                                      server_default='0'))


def downgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_column('interruptions')
