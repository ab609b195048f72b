"""What an app remembers of one of its end users (``memory.long_term``; app.run.memory), for the admin
API: view it, replace the working memory, delete one observation or everything."""

from __future__ import annotations

from dataclasses import dataclass

from loopwright.errors import NotFoundError
from loopwright.store import memory as store
from loopwright.store.db import Database
from loopwright.store.models import EndUser

__all__ = [
    "EndUserMemory",
    "Observation",
    "delete_memory",
    "delete_observation",
    "memory_of",
    "set_working_memory",
]


class EndUserNotFoundError(NotFoundError):
    def __init__(self, end_user_id: str) -> None:
        super().__init__(f"end user {end_user_id} not found in this app")


@dataclass(frozen=True, slots=True)
class Observation:
    id: str
    text: str
    conversation_id: str
    message_id: str
    created_at: str  # ISO 8601, UTC


@dataclass(frozen=True, slots=True)
class EndUserMemory:
    end_user_id: str
    working_memory: str
    observations: list[Observation]  # newest first


async def _check(db: Database, app_id: str, end_user_id: str) -> None:
    async with db.sessionmaker() as session:
        user = await session.get(EndUser, end_user_id)
    if user is None or user.app_id != app_id:
        raise EndUserNotFoundError(end_user_id)


async def memory_of(db: Database, app_id: str, end_user_id: str) -> EndUserMemory:
    """The end user's working memory and observations in the app (raises when not the app's user)."""
    await _check(db, app_id, end_user_id)
    async with db.sessionmaker() as session:
        block = await store.get_block(session, app_id, end_user_id)
        rows = await store.observations(session, app_id, end_user_id)
    seen = [
        Observation(r.id, r.text, r.conversation_id, r.message_id, r.created_at.isoformat()) for r in rows
    ]
    return EndUserMemory(end_user_id, block, seen)


async def set_working_memory(db: Database, app_id: str, end_user_id: str, content: str) -> None:
    await _check(db, app_id, end_user_id)
    async with db.transaction() as session:
        await store.set_block(session, app_id, end_user_id, content)


async def delete_observation(db: Database, app_id: str, end_user_id: str, observation_id: str) -> None:
    await _check(db, app_id, end_user_id)
    async with db.transaction() as session:
        if not await store.delete_observation(session, app_id, end_user_id, observation_id):
            raise NotFoundError(f"observation {observation_id} not found")


async def delete_memory(db: Database, app_id: str, end_user_id: str) -> None:
    await _check(db, app_id, end_user_id)
    async with db.transaction() as session:
        await store.delete_memory(session, app_id, end_user_id)
