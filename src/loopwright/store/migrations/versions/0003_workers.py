"""Workers and running messages: a message being answered names the process answering it, so the
messages of a process that died can be marked interrupted.

Revision ID: 0003_workers
Revises: 0002_stop_requests
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003_workers"
down_revision = "0002_stop_requests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False, server_default=""),
        sa.Column("pid", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("worker_id", sa.String(length=36), nullable=True))
    op.create_index("ix_messages_status", "messages", ["status"])


def downgrade() -> None:
    op.drop_index("ix_messages_status", table_name="messages")
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("worker_id")
    op.drop_table("workers")
