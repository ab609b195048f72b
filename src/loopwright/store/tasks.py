"""Messages read as the tasks of one end user (the A2A wire names a message a task): the message, the run
going on for it, the approvals it waits for."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import Conversation, EndUser, Message, PendingApproval, RunStream


async def user_message(session: AsyncSession, app_id: str, user: str, message_id: str) -> Message | None:
    """The message, when it is in a conversation of this app's end user ``user`` (the client's own id)
    that is not deleted; None for anyone else's, so that nobody learns it exists."""
    query = (
        select(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .join(EndUser, EndUser.id == Conversation.end_user_id)
        .where(
            Message.id == message_id,
            Message.app_id == app_id,
            EndUser.app_id == app_id,
            EndUser.session_id == user,
            Conversation.is_deleted.is_(False),
        )
    )
    return await session.scalar(query)


async def stream_task_id(session: AsyncSession, message_id: str) -> str | None:
    """The task id of the newest run stream of a message (the run that answers it, or did)."""
    query = (
        select(RunStream.task_id)
        .where(RunStream.message_id == message_id)
        .order_by(RunStream.started_at.desc())
        .limit(1)
    )
    return await session.scalar(query)


async def pending_for(session: AsyncSession, message_id: str) -> PendingApproval | None:
    """The approvals a paused message waits for, if it does."""
    query = select(PendingApproval).where(PendingApproval.message_id == message_id).limit(1)
    return await session.scalar(query)
