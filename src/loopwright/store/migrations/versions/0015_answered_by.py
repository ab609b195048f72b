"""Handoffs: the app that produced each message (``messages.answered_by``).

Revision ID: 0015_answered_by
Revises: 0012_memory
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_answered_by"
down_revision = "0012_memory"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.add_column(sa.Column("answered_by", sa.String(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("answered_by")
