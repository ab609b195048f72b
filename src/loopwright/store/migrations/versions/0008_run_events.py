"""Run streams and their events, kept so that a client can re-attach to a stream from any worker.

Revision ID: 0008_run_events
Revises: 0007_app_access
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_run_events"
down_revision = "0007_app_access"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_streams",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("message_created_at", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=36), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("stop_user", sa.String(length=255), nullable=True),
        sa.PrimaryKeyConstraint("task_id"),
    )
    op.create_index("ix_run_streams_ended_at", "run_streams", ["ended_at"])
    op.create_table(
        "run_events",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("first_seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("last_seq", sa.Integer(), nullable=False),
        sa.Column("items", sa.Text(), nullable=False),
        sa.Column("final", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["run_streams.task_id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("task_id", "first_seq"),
    )


def downgrade() -> None:
    op.drop_table("run_events")
    op.drop_index("ix_run_streams_ended_at", table_name="run_streams")
    op.drop_table("run_streams")
