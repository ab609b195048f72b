"""Annotations: question→answer pairs an app answers without its model, its annotation-reply setting,
the hits and the enable/disable jobs.

Revision ID: 0004_annotations
Revises: 0003_workers
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_annotations"
down_revision = "0003_workers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "message_annotations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("conversation_id", sa.String(length=36), nullable=True),
        sa.Column("message_id", sa.String(length=36), nullable=True),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("hit_count", sa.Integer(), nullable=False),
        sa.Column("account_id", sa.String(length=255), nullable=True),
        sa.Column("embedding_spec", sa.String(length=255), nullable=True),
        sa.Column("embedding", sa.LargeBinary(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_message_annotations_app_created", "message_annotations", ["app_id", "created_at"])
    op.create_table(
        "app_annotation_settings",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("score_threshold", sa.Float(), nullable=False),
        sa.Column("embedding", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("app_id"),
    )
    op.create_table(
        "app_annotation_hit_histories",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("annotation_id", sa.String(length=36), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("message_id", sa.String(length=36), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("annotation_question", sa.Text(), nullable=False),
        sa.Column("annotation_content", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_app_annotation_hit_histories_annotation", "app_annotation_hit_histories", ["annotation_id"]
    )
    op.create_table(
        "annotation_jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("app_id", sa.String(length=36), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["app_id"], ["apps.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )


def downgrade() -> None:
    op.drop_table("annotation_jobs")
    op.drop_index("ix_app_annotation_hit_histories_annotation", table_name="app_annotation_hit_histories")
    op.drop_table("app_annotation_hit_histories")
    op.drop_table("app_annotation_settings")
    op.drop_index("ix_message_annotations_app_created", table_name="message_annotations")
    op.drop_table("message_annotations")
