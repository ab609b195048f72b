"""Initial schema: apps, configs, keys, end users, conversations, messages, thoughts, files, feedback.

Revision ID: 0001_initial
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from loopwright.store.models import DecimalText

revision = "0001_initial"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "apps",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("mode", sa.String(length=32), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("icon", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("token", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_api_keys_token", "api_keys", ["token"], unique=True)

    op.create_table(
        "app_configs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("app_id", "version", name="uq_app_configs_app_version"),
    )
    op.create_table(
        "end_users",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("session_id", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("app_id", "session_id", name="uq_end_users_app_session"),
    )
    op.create_table(
        "conversations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("app_config_id", sa.String(length=36), nullable=False),
        sa.Column("end_user_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("is_deleted", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["app_config_id"],
            ["app_configs.id"],
        ),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["end_user_id"],
            ["end_users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_conversations_app_end_user",
        "conversations",
        ["app_id", "end_user_id", "updated_at"],
        unique=False,
    )

    op.create_table(
        "upload_files",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("end_user_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("extension", sa.String(length=32), nullable=False),
        sa.Column("mime_type", sa.String(length=255), nullable=False),
        sa.Column("storage_key", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["end_user_id"],
            ["end_users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "messages",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("message_tokens", sa.Integer(), nullable=False),
        sa.Column("answer_tokens", sa.Integer(), nullable=False),
        sa.Column("total_price", DecimalText(10, 7), nullable=False),
        sa.Column("currency", sa.String(length=16), nullable=False),
        sa.Column("provider_response_latency", sa.Float(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("message_metadata", sa.Text(), nullable=True),
        sa.Column("parent_message_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["conversation_id"], ["conversations.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_messages_conversation_created", "messages", ["conversation_id", "created_at"], unique=False
    )

    op.create_table(
        "message_agent_thoughts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("message_chain_id", sa.String(length=36), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("thought", sa.Text(), nullable=True),
        sa.Column("tool", sa.Text(), nullable=True),
        sa.Column("tool_labels_str", sa.Text(), nullable=False),
        sa.Column("tool_meta_str", sa.Text(), nullable=False),
        sa.Column("tool_input", sa.Text(), nullable=True),
        sa.Column("observation", sa.Text(), nullable=True),
        sa.Column("tool_process_data", sa.Text(), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("message_token", sa.Integer(), nullable=True),
        sa.Column("message_unit_price", DecimalText(10, 7), nullable=True),
        sa.Column("message_price_unit", DecimalText(10, 7), nullable=False),
        sa.Column("message_files", sa.Text(), nullable=True),
        sa.Column("answer", sa.Text(), nullable=True),
        sa.Column("answer_token", sa.Integer(), nullable=True),
        sa.Column("answer_unit_price", DecimalText(10, 7), nullable=True),
        sa.Column("answer_price_unit", DecimalText(10, 7), nullable=False),
        sa.Column("tokens", sa.Integer(), nullable=True),
        sa.Column("total_price", DecimalText(10, 7), nullable=True),
        sa.Column("currency", sa.String(length=16), nullable=True),
        sa.Column("latency", sa.Float(), nullable=True),
        sa.Column("created_by_role", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_message_agent_thoughts_message_position",
        "message_agent_thoughts",
        ["message_id", "position"],
        unique=False,
    )

    op.create_table(
        "message_feedbacks",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("end_user_id", sa.String(length=36), nullable=False),
        sa.Column("rating", sa.String(length=16), nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["end_user_id"],
            ["end_users.id"],
        ),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("message_id", "end_user_id", name="uq_message_feedbacks_message_end_user"),
    )
    op.create_table(
        "message_files",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("type", sa.String(length=32), nullable=False),
        sa.Column("transfer_method", sa.String(length=32), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("belongs_to", sa.String(length=16), nullable=False),
        sa.Column("upload_file_id", sa.String(length=36), nullable=True),
        sa.Column("created_by_role", sa.String(length=32), nullable=False),
        sa.Column("created_by", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["upload_file_id"],
            ["upload_files.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_message_files_message", "message_files", ["message_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_message_files_message", table_name="message_files")

    op.drop_table("message_files")
    op.drop_table("message_feedbacks")
    op.drop_index("ix_message_agent_thoughts_message_position", table_name="message_agent_thoughts")

    op.drop_table("message_agent_thoughts")
    op.drop_index("ix_messages_conversation_created", table_name="messages")

    op.drop_table("messages")
    op.drop_table("upload_files")
    op.drop_index("ix_conversations_app_end_user", table_name="conversations")

    op.drop_table("conversations")
    op.drop_table("end_users")
    op.drop_table("app_configs")
    op.drop_index("ix_api_keys_token", table_name="api_keys")

    op.drop_table("api_keys")
    op.drop_table("apps")
