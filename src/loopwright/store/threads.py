"""A conversation's messages as a tree, and its threads (Dify's ``extract_thread_messages``).

Every message follows a parent: regenerating an answer or editing a sent question adds a sibling (a
message with the same parent), so a conversation can branch. A thread is the path from a message up
to the conversation's start; the current thread ends at the newest message. Turning a thread into
prompt messages is the app's (``app.run.history``).

``parent_message_id`` as stored: a message's id; ``UUID_NIL`` for "the message before it" (what the
Service API writes when the client names no parent, as Dify; every message of a linear conversation
has it); ``None`` for a message that starts the conversation (or a new branch at its start).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import Message, MessageAgentThought

__all__ = ["UUID_NIL", "MessageTree", "load_thread", "load_tree", "messages_by_id", "thread_messages"]

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


@dataclass(slots=True)
class MessageTree:
    """The messages of one conversation (ids only), oldest first, with each one's parent resolved:
    ``UUID_NIL`` becomes the message created just before it; a parent that is not in the conversation
    makes the message a root."""

    ids: list[str]
    parent: dict[str, str | None]
    children: dict[str | None, list[str]] = field(default_factory=dict)  # oldest first; None: roots

    @classmethod
    def build(cls, rows: Sequence[tuple[str, str | None]]) -> MessageTree:
        """From ``(id, stored parent)`` pairs, oldest first."""
        ids = [row[0] for row in rows]
        known = set(ids)
        parent: dict[str, str | None] = {}
        children: dict[str | None, list[str]] = {}
        before: str | None = None
        for message_id, stored in rows:
            up = before if stored == UUID_NIL else stored if stored in known else None
            parent[message_id] = up
            children.setdefault(up, []).append(message_id)
            before = message_id
        return cls(ids, parent, children)

    def __contains__(self, message_id: object) -> bool:
        return message_id in self.parent

    @property
    def newest(self) -> str | None:
        return self.ids[-1] if self.ids else None

    def thread(self, leaf: str | None = None) -> list[str]:
        """The ids of the thread that ends at ``leaf`` (default: the newest message), oldest first."""
        at = self.newest if leaf is None else leaf
        out: list[str] = []
        while at is not None and at in self.parent:
            out.append(at)
            at = self.parent[at]
        out.reverse()
        return out

    def newest_under(self, message_id: str) -> str:
        """The newest message of ``message_id``'s branch (itself, or its newest descendant): where the
        thread that goes through it ends."""
        order = {m: i for i, m in enumerate(self.ids)}
        best, stack = message_id, [message_id]
        while stack:
            for child in self.children.get(stack.pop(), ()):
                if order[child] > order[best]:
                    best = child
                stack.append(child)
        return best

    def siblings(self, message_id: str) -> list[str]:
        """The versions of a message: the messages with its parent (itself included), oldest first."""
        return list(self.children.get(self.parent.get(message_id), [message_id]))


async def load_tree(session: AsyncSession, conversation_id: str) -> MessageTree:
    """The conversation's tree (one query for ids and parents only)."""
    stmt = (
        select(Message.id, Message.parent_message_id)
        .where(Message.conversation_id == conversation_id)
        .order_by(Message.created_at, Message.id)
    )
    return MessageTree.build([(row.id, row.parent_message_id) for row in await session.execute(stmt)])


async def messages_by_id(session: AsyncSession, ids: Sequence[str]) -> list[Message]:
    """The messages with these ids, in the order given."""
    if not ids:
        return []
    found = {m.id: m for m in await session.scalars(select(Message).where(Message.id.in_(list(ids))))}
    return [found[i] for i in ids if i in found]


async def load_thread(
    session: AsyncSession, conversation_id: str, *, leaf: str | None = None
) -> tuple[list[Message], dict[str, list[MessageAgentThought]]]:
    """The thread that ends at ``leaf`` (default: the newest message), oldest first, and its thoughts
    by message id in position order (three queries, whatever the length)."""
    tree = await load_tree(session, conversation_id)
    thread = await messages_by_id(session, tree.thread(leaf))
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
