"""Usage counters: what an app, an end user and a conversation spent, for the app's budgets.

Revision ID: 0011_usage_counters
Revises: 0010_run_streams_message
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_usage_counters"
down_revision = "0010_run_streams_message"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "usage_counters",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("scope_id", sa.String(length=36), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost_units", sa.BigInteger(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "scope_id", "day"),
    )


def downgrade() -> None:
    op.drop_table("usage_counters")
