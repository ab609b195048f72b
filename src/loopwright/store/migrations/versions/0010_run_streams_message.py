"""Run streams found by their message: the sweep that marks a cut message interrupted reads its stream
(``repositories.keep_streamed``) without going through every stream kept.

Revision ID: 0010_run_streams_message
Revises: 0009_drop_stop_requests
"""

from __future__ import annotations

from alembic import op

revision = "0010_run_streams_message"
down_revision = "0009_drop_stop_requests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_run_streams_message_id", "run_streams", ["message_id"])


def downgrade() -> None:
    op.drop_index("ix_run_streams_message_id", table_name="run_streams")
