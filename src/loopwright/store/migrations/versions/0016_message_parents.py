"""Answer versions: every message follows a parent (``messages.parent_message_id``, store.threads).

A message without a parent now starts a branch at the conversation's start (a new version of its first
message, as Dify's web app stores one). Rows written before (by any writer, test data included) read as
linear history: a missing parent becomes ``UUID_NIL``, "the message before it", so every old message
follows the previous one of its conversation, as it did. (A conversation's tree is read whole, by the
index on its messages' times: no new index.)

Revision ID: 0016_message_parents
Revises: 0015_answered_by
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_message_parents"
down_revision = "0015_answered_by"
branch_labels = None
depends_on = None

UUID_NIL = "00000000-0000-0000-0000-000000000000"  # store.threads.UUID_NIL, frozen here


def upgrade() -> None:
    messages = sa.table("messages", sa.column("parent_message_id", sa.String(36)))
    op.execute(
        messages.update().where(messages.c.parent_message_id.is_(None)).values(parent_message_id=UUID_NIL)
    )


def downgrade() -> None:
    """Nothing to undo: ``UUID_NIL`` and a missing parent both read as linear history before."""
