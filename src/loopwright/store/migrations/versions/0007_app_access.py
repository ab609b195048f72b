"""Apps can be disabled, or have their Service API turned off (Dify's ``apps.status`` and
``apps.enable_api``): the Service API then answers 403 with Dify's messages.

Revision ID: 0007_app_access
Revises: 0005_approvals
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_app_access"
down_revision = "0005_approvals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.add_column(sa.Column("status", sa.String(length=32), nullable=False, server_default="normal"))
        batch.add_column(sa.Column("enable_api", sa.Boolean(), nullable=False, server_default=sa.true()))


def downgrade() -> None:
    with op.batch_alter_table("apps") as batch:
        batch.drop_column("enable_api")
        batch.drop_column("status")
