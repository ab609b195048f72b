"""Memory: conversation summaries (compaction), and end users' working memory and observations
(memory across conversations).

Revision ID: 0012_memory
Revises: 0011_usage_counters
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_memory"
down_revision = "0011_usage_counters"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "conversation_summaries",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("covered_messages", sa.Integer(), nullable=False),
        sa.Column("last_message_id", sa.String(length=36), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_conversation_summaries_conversation",
        "conversation_summaries",
        ["conversation_id", "covered_messages"],
    )

    op.create_table(
        "memory_blocks",
        sa.Column("end_user_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["end_user_id"], ["end_users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("end_user_id"),
    )
    op.create_table(
        "memory_observations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("end_user_id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["end_user_id"], ["end_users.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("message_id"),
    )
    op.create_index(
        "ix_memory_observations_user", "memory_observations", ["app_id", "end_user_id", "created_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_memory_observations_user", table_name="memory_observations")
    op.drop_table("memory_observations")
    op.drop_table("memory_blocks")
    op.drop_index("ix_conversation_summaries_conversation", table_name="conversation_summaries")
    op.drop_table("conversation_summaries")
