"""Rate and stream limits counted across the workers of a PostgreSQL database: per-minute counters
(``rate_windows``) and stream leases (``stream_leases``). SQLite databases get the tables too (one
schema), but count in memory (app.run.rate_limits says why).

Revision ID: 0019_rate_counters
Revises: 0015_answered_by
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_rate_counters"
down_revision = "0015_answered_by"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "rate_windows",
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("window", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "window"),
    )
    op.create_table(
        "stream_leases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("worker_id", sa.String(length=36), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", "scope"),
    )
    op.create_index("ix_stream_leases_scope_expires_at", "stream_leases", ["scope", "expires_at"])
    op.create_index("ix_stream_leases_worker_id", "stream_leases", ["worker_id"])


def downgrade() -> None:
    op.drop_index("ix_stream_leases_worker_id", table_name="stream_leases")
    op.drop_index("ix_stream_leases_scope_expires_at", table_name="stream_leases")
    op.drop_table("stream_leases")
    op.drop_table("rate_windows")
