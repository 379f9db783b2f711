"""LTI 1.3: sign-in state, gradebook links

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""
from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('lti_state',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('expires_at', sa.DateTime(), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )
    with op.batch_alter_table('lti_state', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lti_state_expires_at'), ['expires_at'], unique=False)

    op.create_table('lti_links',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('student_id', sa.String(length=200), nullable=False),
    sa.Column('lab', sa.String(length=100), nullable=False),
    sa.Column('issuer', sa.Text(), nullable=False),
    sa.Column('client_id', sa.Text(), nullable=False),
    sa.Column('deployment_id', sa.Text(), nullable=False),
    sa.Column('lti_user_id', sa.Text(), nullable=False),
    sa.Column('ags', sa.Text(), nullable=False),
    sa.Column('tool_url', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.Column('launched_at', sa.DateTime(), nullable=False),
    sa.Column('wanted', sa.Integer(), nullable=False),
    sa.Column('posted', sa.Integer(), nullable=False),
    sa.Column('next_try_at', sa.DateTime(), nullable=True),
    sa.Column('tries', sa.Integer(), nullable=False),
    sa.Column('posted_submission_id', sa.Integer(), nullable=True),
    sa.Column('posted_score', sa.Float(), nullable=True),
    sa.Column('posted_at', sa.DateTime(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['student_id'], ['students.student_id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('key')
    )
    with op.batch_alter_table('lti_links', schema=None) as batch_op:
        batch_op.create_index('ix_lti_links_due', ['wanted', 'posted'], unique=False)
        batch_op.create_index('ix_lti_links_student_lab', ['student_id', 'lab'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('lti_links', schema=None) as batch_op:
        batch_op.drop_index('ix_lti_links_student_lab')
        batch_op.drop_index('ix_lti_links_due')

    op.drop_table('lti_links')
    with op.batch_alter_table('lti_state', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lti_state_expires_at'))

    op.drop_table('lti_state')
