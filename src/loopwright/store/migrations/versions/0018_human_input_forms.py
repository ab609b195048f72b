"""Dify's Human Input forms of runs paused for approvals (``human_input_forms``).

Revision ID: 0018_human_input_forms
Revises: 0015_answered_by
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_human_input_forms"
down_revision = "0016_message_parents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "human_input_forms",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("form_id", sa.String(length=36), nullable=False),
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("node_id", sa.String(length=36), nullable=False),
        sa.Column("calls", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=True),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_human_input_forms_task_id", "human_input_forms", ["task_id"])
    op.create_index("ix_human_input_forms_expires_at", "human_input_forms", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_human_input_forms_expires_at", table_name="human_input_forms")
    op.drop_index("ix_human_input_forms_task_id", table_name="human_input_forms")
    op.drop_table("human_input_forms")
