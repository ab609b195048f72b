"""Runs paused for a person's approval of their tool calls.

Revision ID: 0005_approvals
Revises: 0004_annotations
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_approvals"
down_revision = "0004_annotations"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending_approvals",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("end_user_id", sa.String(length=36), nullable=False),
        sa.Column("config_id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("message_created_at", sa.DateTime(), nullable=False),
        sa.Column("calls", sa.Text(), nullable=False),
        sa.Column("run_state", sa.Text(), nullable=False),
        sa.Column("stream_state", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("task_id"),
    )
    op.create_index("ix_pending_approvals_expires_at", "pending_approvals", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_pending_approvals_expires_at", table_name="pending_approvals")
    op.drop_table("pending_approvals")
