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
down_revision = "0018_human_input_forms"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # UNLOGGED on PostgreSQL: no write-ahead log, so a counted request does not wait for a WAL flush
    # (measured: the upsert then costs about one round trip, against several milliseconds logged). A
    # crash of the database empties them — the current minute's counts and the running streams'
    # leases, which only lets a few more requests through — and they are not replicated (a standby
    # serves no writes).
    unlogged = ["UNLOGGED"] if op.get_bind().dialect.name == "postgresql" else []
    op.create_table(
        "rate_windows",
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("window", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("scope", "window"),
        prefixes=unlogged,
    )
    op.create_table(
        "stream_leases",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("scope", sa.String(length=32), nullable=False),
        sa.Column("worker_id", sa.String(length=36), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", "scope"),
        prefixes=unlogged,
    )
    op.create_index("ix_stream_leases_scope_expires_at", "stream_leases", ["scope", "expires_at"])
    op.create_index("ix_stream_leases_worker_id", "stream_leases", ["worker_id"])


def downgrade() -> None:
    op.drop_index("ix_stream_leases_worker_id", table_name="stream_leases")
    op.drop_index("ix_stream_leases_scope_expires_at", table_name="stream_leases")
    op.drop_table("stream_leases")
    op.drop_table("rate_windows")
