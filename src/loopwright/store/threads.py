"""A conversation's current thread (Dify's ``extract_thread_messages``): its messages and their agent
thoughts, as stored. Turning them into prompt messages is the app's (``app.run.history``).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import Message, MessageAgentThought

__all__ = ["UUID_NIL", "load_thread", "thread_messages"]

UUID_NIL = "00000000-0000-0000-0000-000000000000"
"""A ``parent_message_id`` meaning "the message before, in a linear conversation"."""


def thread_messages(newest_first: Sequence[Message]) -> list[Message]:
    """The messages of the current thread, newest first.

    The newest message is in the thread. From there the thread continues at its parent; a parent of
    ``UUID_NIL`` means "the next older message" (linear history); no parent at all means the message
    starts the thread, so nothing older belongs to it.
    """
    out: list[Message] = []
    wanted: str | None = None  # the id the thread continues at; UUID_NIL = whichever comes next
    for msg in newest_first:
        if out and wanted not in (msg.id, UUID_NIL):
            continue
        out.append(msg)
        if not msg.parent_message_id:
            break
        wanted = msg.parent_message_id
    return out


async def load_thread(
    session: AsyncSession, conversation_id: str
) -> tuple[list[Message], dict[str, list[MessageAgentThought]]]:
    """The conversation's current thread, oldest first, and its thoughts by message id in position
    order (two queries, whatever the length)."""
    stmt = (
        select(Message)
        .where(Message.conversation_id == conversation_id)
        .order_by(Message.created_at.desc(), Message.id.desc())
    )
    thread = thread_messages(list(await session.scalars(stmt)))
    thread.reverse()
    ids = [m.id for m in thread]
    by_message: dict[str, list[MessageAgentThought]] = {}
    if ids:
        rows = await session.scalars(
            select(MessageAgentThought)
            .where(MessageAgentThought.message_id.in_(ids))
            .order_by(MessageAgentThought.message_id, MessageAgentThought.position)
        )
        for row in rows:
            by_message.setdefault(row.message_id, []).append(row)
    return thread, by_message
