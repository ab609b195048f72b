"""Stops between worker processes no longer go through a polled table: a notification on PostgreSQL,
a mark on the run's stream (``run_streams.stop_user``) on SQLite.

Revision ID: 0009_drop_stop_requests
Revises: 0008_run_events
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_drop_stop_requests"
down_revision = "0008_run_events"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_table("stop_requests")


def downgrade() -> None:
    op.create_table(
        "stop_requests",
        sa.Column("task_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("user", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("task_id"),
    )
