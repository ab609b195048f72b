"""Small async functions over an ``AsyncSession``: apps and configs, API keys, end users, conversations,
messages, the thought store and feedback.

The functions ``flush`` but never ``commit``: the caller owns the transaction
(``async with db.transaction() as s: ...``). Lookups scoped to an app or an end user return ``None``
for anything outside that scope, so one end user never sees another's conversation.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, TypeVar

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from loopwright.model.entities import Usage
from loopwright.store import codec, streams
from loopwright.store.models import (
    PRICE_UNIT,
    ApiKey,
    App,
    AppConfig,
    Conversation,
    EndUser,
    Message,
    MessageAgentThought,
    MessageFeedback,
    MessageFile,
    UploadFile,
    Worker,
    new_id,
    utcnow,
)
from loopwright.store.writer import WriteFn, insert_unless_present

__all__ = [
    "Page",
    "add_config_version",
    "add_upload_file",
    "config_version",
    "conversation_id_taken",
    "create_api_key",
    "create_app",
    "delete_conversation",
    "feedback_ratings",
    "files_of_messages",
    "find_app_by_key",
    "find_end_user",
    "find_user_message",
    "first_message",
    "get_conversation",
    "get_message",
    "get_or_create_end_user",
    "keep_streamed",
    "latest_config",
    "list_conversations",
    "list_messages",
    "list_thoughts",
    "message_of_upload",
    "message_result",
    "new_conversation",
    "new_message",
    "new_message_file",
    "new_thought",
    "rename_conversation",
    "set_app_access",
    "set_feedback",
    "storable",
    "thought_values",
    "thoughts_of_messages",
    "touch_api_key",
]

T = TypeVar("T")

API_KEY_PREFIX = "app-"


@dataclass(slots=True)
class Page(Generic[T]):
    """One page of a cursor-paginated list (Dify's ``{limit, has_more, data}``)."""

    items: list[T]
    has_more: bool
    limit: int


# --- apps, configs, keys, end users ---------------------------------------------------------------


def touch_api_key(token: str, when: datetime) -> WriteFn:
    """A write that records when an app key was last used."""

    async def write(session: AsyncSession) -> None:
        await session.execute(update(ApiKey).where(ApiKey.token == token).values(last_used_at=when))

    return write


async def message_of_upload(session: AsyncSession, upload_id: str, app_id: str) -> tuple[bool, bool]:
    """Whether an upload was sent with any message, and whether with one of ``app_id``'s."""
    used = await session.scalar(
        select(Message.id)
        .join(MessageFile, MessageFile.message_id == Message.id)
        .where(MessageFile.upload_file_id == upload_id)
        .limit(1)
    )
    if used is None:
        return False, False
    owner = await session.scalar(select(Message.app_id).where(Message.id == used))
    return True, owner == app_id


async def create_app(
    session: AsyncSession,
    name: str,
    config: Mapping[str, Any],
    *,
    description: str = "",
    icon: str | None = None,
    mode: str = "agent-chat",
) -> tuple[App, AppConfig]:
    """A new app and its configuration version 1."""
    app = App(name=name, description=description, icon=icon, mode=mode)
    session.add(app)
    await session.flush()
    return app, await add_config_version(session, app.id, config)


async def add_config_version(session: AsyncSession, app_id: str, config: Mapping[str, Any]) -> AppConfig:
    """Append a configuration version (the previous ones stay, pinned by their conversations)."""
    current = await session.scalar(select(func.max(AppConfig.version)).where(AppConfig.app_id == app_id))
    row = AppConfig(app_id=app_id, version=(current or 0) + 1, config=dict(config))
    session.add(row)
    await session.flush()
    return row


async def latest_config(session: AsyncSession, app_id: str) -> AppConfig | None:
    stmt = select(AppConfig).where(AppConfig.app_id == app_id).order_by(AppConfig.version.desc()).limit(1)
    return await session.scalar(stmt)


async def config_version(session: AsyncSession, app_id: str, version: int) -> AppConfig | None:
    """One configuration version of an app, by its number."""
    stmt = select(AppConfig).where(AppConfig.app_id == app_id, AppConfig.version == version)
    return await session.scalar(stmt)


async def create_api_key(session: AsyncSession, app_id: str) -> ApiKey:
    """A new key ``app-`` + 24 URL-safe characters."""
    key = ApiKey(app_id=app_id, token=API_KEY_PREFIX + secrets.token_urlsafe(18))
    session.add(key)
    await session.flush()
    return key


async def list_apps(session: AsyncSession) -> list[App]:
    """Every app, oldest first."""
    return list(await session.scalars(select(App).order_by(App.created_at, App.id)))


async def delete_app(session: AsyncSession, app_id: str) -> bool:
    """Delete an app and, through the foreign keys' cascades, its configuration versions, keys, end
    users, conversations, messages, thoughts and feedback; whether there was one."""
    result = await session.execute(delete(App).where(App.id == app_id))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def config_versions(session: AsyncSession, app_id: str) -> list[AppConfig]:
    """Every configuration version of an app, oldest first."""
    stmt = select(AppConfig).where(AppConfig.app_id == app_id).order_by(AppConfig.version)
    return list(await session.scalars(stmt))


async def list_api_keys(session: AsyncSession, app_id: str | None = None) -> list[ApiKey]:
    """The API keys of one app (or of every app), oldest first."""
    stmt = select(ApiKey).order_by(ApiKey.created_at, ApiKey.id)
    if app_id is not None:
        stmt = stmt.where(ApiKey.app_id == app_id)
    return list(await session.scalars(stmt))


async def set_app_access(
    session: AsyncSession, app_id: str, *, status: str | None = None, enable_api: bool | None = None
) -> App | None:
    """Set an app's ``status`` (``normal`` serves; anything else is Dify's "abnormal") and/or its
    ``enable_api`` switch; the app, or ``None`` when there is none."""
    app = await session.get(App, app_id)
    if app is None:
        return None
    if status is not None:
        app.status = status
    if enable_api is not None:
        app.enable_api = enable_api
    await session.flush()
    return app


async def revoke_api_key(session: AsyncSession, key: str) -> bool:
    """Delete the API key whose id or token is ``key``; whether there was one."""
    result = await session.execute(delete(ApiKey).where((ApiKey.id == key) | (ApiKey.token == key)))
    return bool(result.rowcount)  # type: ignore[attr-defined]


async def find_app_by_key(session: AsyncSession, token: str, *, touch: bool = True) -> App | None:
    """The app an API key belongs to (and, with ``touch``, mark the key used), or ``None`` for an
    unknown key."""
    key = await session.scalar(select(ApiKey).where(ApiKey.token == token))
    if key is None:
        return None
    if touch:
        key.last_used_at = utcnow()
        await session.flush()
    return await session.get(App, key.app_id)


async def find_end_user(session: AsyncSession, app_id: str, session_id: str) -> EndUser | None:
    """The end user for a client's ``user`` string within one app, if it has been seen."""
    stmt = select(EndUser).where(EndUser.app_id == app_id, EndUser.session_id == session_id)
    return await session.scalar(stmt)


END_USER_IDS = uuid.UUID("5d1f4e0a-8c1b-4b7e-9a51-6c6f6f707772")  # the namespace of end users' ids


def new_end_user_id(app_id: str, session_id: str) -> str:
    """The id of a new end user: derived from the app and the client's ``user`` string, so that every
    worker that sees the user's first requests at once gives it the same one."""
    return str(uuid.uuid5(END_USER_IDS, f"{app_id}\n{session_id}"))


async def get_or_create_end_user(session: AsyncSession, app_id: str, session_id: str) -> EndUser:
    """The end user for a client's ``user`` string within one app (created by another worker
    meanwhile: that one)."""
    user = await find_end_user(session, app_id, session_id)
    if user is None:
        values = {"id": new_end_user_id(app_id, session_id), "app_id": app_id, "session_id": session_id}
        await session.execute(insert_unless_present(session, EndUser).values(**values, created_at=utcnow()))
        user = await find_end_user(session, app_id, session_id)
        assert user is not None
    return user


# --- conversations --------------------------------------------------------------------------------


def new_conversation(
    conversation_id: str,
    app_id: str,
    end_user_id: str,
    app_config_id: str,
    *,
    name: str,
    inputs: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """The column values of a new conversation pinned to configuration ``app_config_id``."""
    return {
        "id": conversation_id,
        "app_id": app_id,
        "end_user_id": end_user_id,
        "app_config_id": app_config_id,
        "name": name,
        "inputs": dict(inputs),
        "status": "normal",
        "is_deleted": False,
        "created_at": now,
        "updated_at": now,
    }


async def get_conversation(
    session: AsyncSession, app_id: str, end_user_id: str, conversation_id: str
) -> Conversation | None:
    """The conversation if it exists, belongs to this app and end user, and is not deleted."""
    stmt = select(Conversation).where(
        Conversation.id == conversation_id,
        Conversation.app_id == app_id,
        Conversation.end_user_id == end_user_id,
        Conversation.is_deleted.is_(False),
    )
    return await session.scalar(stmt)


async def conversation_id_taken(session: AsyncSession, conversation_id: str) -> bool:
    """Whether any conversation, of any app or end user, deleted or not, has this id."""
    stmt = select(Conversation.id).where(Conversation.id == conversation_id)
    return await session.scalar(stmt) is not None


CONVERSATION_SORTS = ("created_at", "-created_at", "updated_at", "-updated_at")  # Dify's ``sort_by``


async def list_conversations(
    session: AsyncSession,
    app_id: str,
    end_user_id: str,
    *,
    limit: int = 20,
    last_id: str | None = None,
    sort_by: str = "-updated_at",
) -> Page[Conversation]:
    """An end user's conversations in ``sort_by`` order (one of :data:`CONVERSATION_SORTS`; ``-``:
    newest first), the id breaking ties; ``last_id`` continues after that conversation (an unknown
    ``last_id`` gives an empty page)."""
    if sort_by not in CONVERSATION_SORTS:
        raise ValueError(f"sort_by must be one of {CONVERSATION_SORTS}")
    descending = sort_by.startswith("-")
    column = Conversation.created_at if sort_by.lstrip("-") == "created_at" else Conversation.updated_at
    scope = and_(
        Conversation.app_id == app_id,
        Conversation.end_user_id == end_user_id,
        Conversation.is_deleted.is_(False),
    )
    stmt = select(Conversation).where(scope)
    if last_id is not None:
        last = await session.scalar(select(Conversation).where(scope, Conversation.id == last_id))
        if last is None:
            return Page([], False, limit)
        anchor = last.created_at if column is Conversation.created_at else last.updated_at
        after = _older if descending else _newer
        stmt = stmt.where(after(column, Conversation.id, anchor, last.id))
    if descending:
        stmt = stmt.order_by(column.desc(), Conversation.id.desc())
    else:
        stmt = stmt.order_by(column.asc(), Conversation.id.asc())
    stmt = stmt.limit(limit + 1)
    rows = list(await session.scalars(stmt))
    return Page(rows[:limit], len(rows) > limit, limit)


async def rename_conversation(session: AsyncSession, conversation: Conversation, name: str) -> Conversation:
    conversation.name = name
    conversation.updated_at = utcnow()
    await session.flush()
    return conversation


async def delete_conversation(session: AsyncSession, conversation: Conversation) -> None:
    """Soft delete: the rows stay, lookups and lists no longer return it."""
    conversation.is_deleted = True
    conversation.updated_at = utcnow()
    await session.flush()


# --- messages -------------------------------------------------------------------------------------


def new_message(
    message_id: str,
    conversation_id: str,
    app_id: str,
    query: str,
    *,
    inputs: Mapping[str, Any],
    parent_message_id: str | None,
    now: datetime,
    worker_id: str | None = None,
) -> dict[str, Any]:
    """The column values of a new message (its answer comes with :func:`message_result`). With a
    ``worker_id`` the message is ``running`` in that worker until its result is recorded."""
    values = {
        "id": message_id,
        "conversation_id": conversation_id,
        "app_id": app_id,
        "query": query,
        "inputs": dict(inputs),
        "parent_message_id": parent_message_id,
        "created_at": now,
    }
    if worker_id is not None:
        values.update(status=RUNNING, worker_id=worker_id)
    return values


def new_message_file(message_id: str, values: Mapping[str, Any], *, now: datetime) -> dict[str, Any]:
    """A ``message_files`` row: ``values`` (type, transfer method, url, upload id, belongs_to, created
    by) with its id (``values["id"]`` when given: an id already sent to clients) and message."""
    return {"id": values.get("id") or new_id(), **values, "message_id": message_id, "created_at": now}


async def get_message(session: AsyncSession, conversation_id: str, message_id: str) -> Message | None:
    stmt = select(Message).where(Message.id == message_id, Message.conversation_id == conversation_id)
    return await session.scalar(stmt)


async def list_messages(
    session: AsyncSession, conversation_id: str, *, limit: int = 20, first_id: str | None = None
) -> Page[Message]:
    """Messages oldest first, as Dify's message list: the newest ``limit`` messages, or with
    ``first_id`` the ``limit`` messages just before that one; ``has_more`` says older ones exist."""
    stmt = select(Message).where(Message.conversation_id == conversation_id)
    if first_id is not None:
        first = await get_message(session, conversation_id, first_id)
        if first is None:
            return Page([], False, limit)
        stmt = stmt.where(_older(Message.created_at, Message.id, first.created_at, first.id))
    stmt = stmt.order_by(Message.created_at.desc(), Message.id.desc()).limit(limit + 1)
    rows = list(await session.scalars(stmt))
    page = rows[:limit]
    page.reverse()
    return Page(page, len(rows) > limit, limit)


def message_result(
    *,
    answer: str | None = None,
    usage: Usage | None = None,
    status: str | None = None,
    error: str | None = None,
    metadata: str | None = None,
) -> dict[str, Any]:
    """The column values that record a message's outcome (only those given): answer, usage (tokens,
    price, currency, latency), status (``normal`` | ``error`` | ``stopped`` | ``waiting``: paused for
    approvals), error text, metadata."""
    if status is not None and status not in ("normal", "error", "stopped", "waiting"):
        raise ValueError(f"invalid message status: {status!r}")
    values: dict[str, Any] = {}
    if answer is not None:
        values["answer"] = answer
    if usage is not None:
        values.update(
            message_tokens=usage.prompt_tokens,
            answer_tokens=usage.completion_tokens,
            total_price=usage.total_price,
            currency=usage.currency,
            provider_response_latency=usage.latency,
        )
    if status is not None:
        values["status"] = status
        values["worker_id"] = None  # no longer running anywhere
    if error is not None:
        values["error"] = error
    if metadata is not None:
        values["message_metadata"] = metadata
    return values


# --- the thought store ----------------------------------------------------------------------------


def new_thought(
    message_id: str,
    position: int,
    *,
    created_by: str = "",
    created_by_role: str = "account",
    thought_id: str | None = None,
) -> dict[str, Any]:
    """The column values of a new thought row, Dify's initial values (``create_agent_thought``).
    ``created_by_role`` is ``"account"`` by default, as Dify writes even for end users. ``thought_id``
    gives the row an id chosen earlier (the one already sent to clients in ``agent_thought`` events)."""
    values: dict[str, Any] = {
        "message_id": message_id,
        "position": position,
        "message_chain_id": None,
        "thought": "",
        "tool": "",
        "tool_labels_str": "{}",
        "tool_meta_str": "{}",
        "tool_input": "",
        "observation": "",
        "tool_process_data": None,
        "message": "",
        "message_token": 0,
        "message_unit_price": Decimal(0),
        "message_price_unit": PRICE_UNIT,
        "message_files": "[]",
        "answer": "",
        "answer_token": 0,
        "answer_unit_price": Decimal(0),
        "answer_price_unit": PRICE_UNIT,
        "tokens": 0,
        "total_price": Decimal(0),
        "currency": "USD",
        "latency": 0.0,
        "created_by_role": created_by_role,
        "created_by": created_by,
        "created_at": utcnow(),
    }
    if thought_id is not None:
        values["id"] = thought_id
    return values


def thought_values(
    thought_id: str,
    position: int,
    *,
    thought: str,
    tool_names: Sequence[str],
    tool_inputs: Sequence[Any],
    observations: Sequence[str],
    metas: Sequence[Mapping[str, Any]],
    answer: str,
    file_ids: Sequence[str],
    usage: Usage | None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Every column a round sets, from the round as it stands, in Dify's encodings: tool names
    ``;``-joined; inputs, observations and metas as one JSON object keyed by tool name (a repeated
    tool numbered ``name_1`` …; none: ``""``, ``""`` and ``"{}"``); labels from ``labels`` or the name;
    usage as token counts, unit prices, price units and total price. Always the same keys (the writer
    keeps updates of one table in order only among rows with the same keys)."""
    names = list(tool_names)
    u = usage or Usage()
    return {
        "id": thought_id,
        "position": position,
        "thought": storable(thought),
        "tool": codec.join_tool_names(names),
        "tool_input": codec.encode_per_tool(names, list(tool_inputs)) if names else "",
        "observation": storable(codec.encode_per_tool(names, list(observations)))
        if any(observations)
        else "",
        "tool_meta_str": codec.encode_per_tool(names, [dict(m) for m in metas]) if any(metas) else "{}",
        "tool_labels_str": codec.dump_json(codec.tool_labels(codec.join_tool_names(names), labels)),
        "message_files": codec.dump_json(list(file_ids)),
        "answer": storable(answer),
        "message_token": u.prompt_tokens,
        "message_unit_price": u.prompt_unit_price,
        "message_price_unit": u.prompt_price_unit,
        "answer_token": u.completion_tokens,
        "answer_unit_price": u.completion_unit_price,
        "answer_price_unit": u.completion_price_unit,
        "tokens": u.total_tokens,
        "total_price": u.total_price,
        "latency": u.latency,
    }


def storable(text: str) -> str:
    """Text every database accepts: PostgreSQL refuses NUL characters, which a model may emit."""
    return text.replace("\x00", "")


async def list_thoughts(session: AsyncSession, message_id: str) -> list[MessageAgentThought]:
    stmt = (
        select(MessageAgentThought)
        .where(MessageAgentThought.message_id == message_id)
        .order_by(MessageAgentThought.position)
    )
    return list(await session.scalars(stmt))


# --- feedback -------------------------------------------------------------------------------------


async def set_feedback(
    session: AsyncSession,
    message_id: str,
    end_user_id: str,
    rating: str | None,
    content: str | None = None,
) -> MessageFeedback | None:
    """Set an end user's rating of a message (``like`` | ``dislike``); ``None`` removes it."""
    if rating not in (None, "like", "dislike"):
        raise ValueError(f"invalid rating: {rating!r}")
    stmt = select(MessageFeedback).where(
        MessageFeedback.message_id == message_id, MessageFeedback.end_user_id == end_user_id
    )
    row = await session.scalar(stmt)
    if rating is None:
        if row is not None:
            await session.delete(row)
            await session.flush()
        return None
    if row is None:
        row = MessageFeedback(message_id=message_id, end_user_id=end_user_id, rating=rating, content=content)
        session.add(row)
    else:
        row.rating = rating
        row.content = content
        row.updated_at = utcnow()
    await session.flush()
    return row


def _older(
    time: InstrumentedAttribute[datetime],
    row_id: InstrumentedAttribute[str],
    anchor_time: datetime,
    anchor_id: str,
) -> ColumnElement[bool]:
    """Rows that come after the anchor row in newest-first order (time, then id, both descending): the
    keyset condition of the conversation and message pages."""
    return or_(time < anchor_time, and_(time == anchor_time, row_id < anchor_id))


def _newer(
    time: InstrumentedAttribute[datetime],
    row_id: InstrumentedAttribute[str],
    anchor_time: datetime,
    anchor_id: str,
) -> ColumnElement[bool]:
    """Rows that come after the anchor row in oldest-first order (the mirror of :func:`_older`)."""
    return or_(time > anchor_time, and_(time == anchor_time, row_id > anchor_id))


async def count_apps(session: AsyncSession) -> int:
    """How many apps the database holds."""
    return int(await session.scalar(select(func.count()).select_from(App)) or 0)


async def ping(session: AsyncSession) -> None:
    """A round trip to the database (raises when it cannot answer)."""
    await session.execute(select(1))


# --- workers and the messages they were running (app.run.recovery) ---------------------------------------

RUNNING = "running"
INTERRUPTED_ERROR = (
    "interrupted: the server process answering this message stopped before the answer was complete"
)


async def heartbeat(session: AsyncSession, worker_id: str, now: datetime, *, host: str, pid: int) -> None:
    """Record that ``worker_id`` (process ``pid`` on ``host``) lives; its row is made on the first beat."""
    row = await session.get(Worker, worker_id)
    if row is None:
        session.add(Worker(id=worker_id, started_at=now, heartbeat_at=now, host=host, pid=pid))
    else:
        row.heartbeat_at = now


async def workers_on(session: AsyncSession, host: str) -> list[Worker]:
    """The registered workers on ``host``."""
    return list(await session.scalars(select(Worker).where(Worker.host == host)))


async def remove_worker(session: AsyncSession, worker_id: str) -> None:
    await session.execute(delete(Worker).where(Worker.id == worker_id))


LOST_ERROR = "interrupted: the answer could not be saved (the database was unavailable when the run ended)"


async def interrupt_lost(
    session: AsyncSession, worker_id: str, running: Collection[str], created_before: datetime
) -> int:
    """Mark ``error`` (with :data:`LOST_ERROR`) the messages still stored as running in this live
    worker that it no longer runs: their result could not be written (the database was down). Only
    messages created before ``created_before``: one that is just starting may not be registered yet.
    Each keeps what its stream stored (:func:`keep_streamed`). Returns how many were marked."""
    lost = (
        (Message.status == RUNNING)
        & (Message.worker_id == worker_id)
        & Message.id.not_in(list(running))
        & (Message.created_at < created_before)
    )
    marked = await _mark_error(session, lost, LOST_ERROR)
    await keep_streamed(session, marked)
    return len(marked)


async def interrupt_orphans(session: AsyncSession, alive_since: datetime, dead: Collection[str] = ()) -> int:
    """Mark ``error`` (with :data:`INTERRUPTED_ERROR`) every running message whose worker is in
    ``dead``, has not beaten since ``alive_since``, or has no row (it stopped, or never registered),
    and forget those workers. Each keeps its thoughts as stored and what its stream stored
    (:func:`keep_streamed`). Returns how many messages were marked."""
    if dead:
        await session.execute(delete(Worker).where(Worker.id.in_(list(dead))))
    live = select(Worker.id).where(Worker.heartbeat_at >= alive_since)
    orphaned = (Message.status == RUNNING) & (Message.worker_id.is_(None) | Message.worker_id.not_in(live))
    marked = await _mark_error(session, orphaned, INTERRUPTED_ERROR)
    await session.execute(delete(Worker).where(Worker.heartbeat_at < alive_since))
    await keep_streamed(session, marked)
    return len(marked)


async def _mark_error(session: AsyncSession, where: ColumnElement[bool], error: str) -> list[str]:
    """Mark the running messages ``where`` holds ``error`` with ``error``; their ids."""
    result = await session.execute(
        update(Message)
        .where(where)
        .values(status="error", error=error, worker_id=None)
        .returning(Message.id)
        .execution_options(synchronize_session=False)
    )
    return list(result.scalars())


async def keep_streamed(session: AsyncSession, message_ids: Collection[str]) -> None:
    """Save in these messages — cut before their end, their rows as the run last wrote them — what
    their streams stored (``store.streams``: nothing when the journal is off or stored nothing): the
    answer a client showed after the stored events (:func:`streams.seen_by_client`), and the thought
    rows those events announced that are not stored, or stored in an older state (fewer tools, then
    fewer observations, then fewer files, then no thought: a round's state only grows), in the
    columns an ``agent_thought`` event carries. Reads only these messages' chunks."""
    chunks = await streams.chunks_of_messages(session, message_ids)
    if not chunks:
        return
    stored = await thoughts_of_messages(session, list(chunks))
    for message_id, message_chunks in chunks.items():
        seen = streams.seen_by_client(message_chunks)
        if seen.answer:
            await session.execute(
                update(Message)
                .where(Message.id == message_id)
                .values(answer=storable(seen.answer))
                .execution_options(synchronize_session=False)
            )
        rows = {row.id: row for row in stored.get(message_id, [])}
        await _keep_thoughts(session, message_id, list(seen.thoughts.values()), rows)


# the columns of a thought row an ``agent_thought`` event shows (and :func:`keep_streamed` updates)
_SHOWN = ("thought", "tool", "tool_input", "observation", "tool_labels_str", "message_files")


async def _keep_thoughts(
    session: AsyncSession,
    message_id: str,
    announced: Sequence[Mapping[str, Any]],
    stored: Mapping[str, MessageAgentThought],
) -> None:
    new: list[dict[str, Any]] = []
    for payload in announced:
        thought_id = str(payload["id"])
        values = _announced_values(payload)
        row = stored.get(thought_id)
        if row is None:
            new.append({**new_thought(message_id, values["position"], thought_id=thought_id), **values})
        elif _progress(values) > _progress({column: getattr(row, column) for column in _SHOWN}):
            await session.execute(
                update(MessageAgentThought)
                .where(MessageAgentThought.id == thought_id)
                .values(**{column: values[column] for column in _SHOWN})
                .execution_options(synchronize_session=False)
            )
    if new:
        await session.execute(insert_unless_present(session, MessageAgentThought), new)


def _announced_values(payload: Mapping[str, Any]) -> dict[str, Any]:
    """A thought row's values from an ``agent_thought`` event's payload (Dify's joined strings decoded,
    then encoded again by :func:`thought_values`; what the event does not carry is left empty)."""
    tool, names = str(payload.get("tool") or ""), codec.split_tool_names(payload.get("tool"))
    inputs = codec.decode_history_inputs(tool, payload.get("tool_input"))
    observations = codec.decode_history_observations(tool, payload.get("observation"))
    labels = payload.get("tool_labels")
    return thought_values(
        str(payload["id"]),
        int(payload.get("position") or 0),
        thought=str(payload.get("thought") or ""),
        tool_names=names,
        tool_inputs=list(inputs.values()),
        observations=list(observations.values()),
        metas=[{} for _ in names],
        answer="",
        file_ids=[str(f) for f in payload.get("message_files") or ()],
        usage=None,
        labels=labels if isinstance(labels, Mapping) else None,
    )


def _progress(shown: Mapping[str, Any]) -> tuple[int, int, int, bool]:
    """How far a round's state (the :data:`_SHOWN` columns of its row) has got: its tools, their
    observations, its files, its thought."""
    tool, observation = shown["tool"], shown["observation"]
    observed = codec.decode_history_observations(tool, observation) if observation else {}
    done = sum(1 for o in observed.values() if o)
    files = codec.decode_json_list(shown["message_files"])
    return (len(codec.split_tool_names(tool)), done, len(files), bool(shown["thought"]))


# --- reads of the Service API's lists and feedback (app.admin.conversations, app.files.uploads) ---------


async def first_message(session: AsyncSession, conversation_id: str) -> Message | None:
    """The conversation's oldest message (its query names the conversation)."""
    stmt = (
        select(Message)
        .where(Message.conversation_id == conversation_id)
        .order_by(Message.created_at, Message.id)
        .limit(1)
    )
    return await session.scalar(stmt)


async def find_user_message(
    session: AsyncSession, app_id: str, end_user_id: str, message_id: str
) -> Message | None:
    """A message of one of this end user's conversations in this app, else ``None``."""
    stmt = (
        select(Message)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Message.id == message_id,
            Conversation.app_id == app_id,
            Conversation.end_user_id == end_user_id,
        )
    )
    return await session.scalar(stmt)


async def thoughts_of_messages(
    session: AsyncSession, message_ids: Sequence[str]
) -> dict[str, list[MessageAgentThought]]:
    """The thoughts of several messages in one query, each message's in position order (a message
    without thoughts has no key)."""
    if not message_ids:
        return {}
    stmt = (
        select(MessageAgentThought)
        .where(MessageAgentThought.message_id.in_(message_ids))
        .order_by(MessageAgentThought.message_id, MessageAgentThought.position)
    )
    out: dict[str, list[MessageAgentThought]] = {}
    for row in await session.scalars(stmt):
        out.setdefault(row.message_id, []).append(row)
    return out


async def files_of_messages(
    session: AsyncSession, message_ids: Sequence[str]
) -> dict[str, list[MessageFile]]:
    """The files of several messages in one query, each message's oldest first (a message without files
    has no key)."""
    if not message_ids:
        return {}
    stmt = select(MessageFile).where(MessageFile.message_id.in_(message_ids)).order_by(MessageFile.created_at)
    out: dict[str, list[MessageFile]] = {}
    for row in await session.scalars(stmt):
        out.setdefault(row.message_id, []).append(row)
    return out


async def uploads_by_id(session: AsyncSession, upload_ids: Sequence[str]) -> dict[str, UploadFile]:
    """Several uploads in one query, by id (an unknown id has no key)."""
    if not upload_ids:
        return {}
    stmt = select(UploadFile).where(UploadFile.id.in_(upload_ids))
    return {row.id: row for row in await session.scalars(stmt)}


async def app_feedbacks(
    session: AsyncSession, app_id: str, *, page: int = 1, limit: int = 20
) -> list[tuple[MessageFeedback, Message]]:
    """A page of every rating of the app's messages, newest first, each with its message."""
    stmt = (
        select(MessageFeedback, Message)
        .join(Message, Message.id == MessageFeedback.message_id)
        .where(Message.app_id == app_id)
        .order_by(MessageFeedback.created_at.desc(), MessageFeedback.id.desc())
        .offset((page - 1) * limit)
        .limit(limit)
    )
    return [(feedback, message) for feedback, message in (await session.execute(stmt)).all()]


async def feedback_ratings(
    session: AsyncSession, message_ids: Sequence[str], end_user_id: str
) -> dict[str, str]:
    """One end user's ratings of several messages in one query: message id → ``like`` | ``dislike``."""
    if not message_ids:
        return {}
    stmt = select(MessageFeedback).where(
        MessageFeedback.message_id.in_(message_ids), MessageFeedback.end_user_id == end_user_id
    )
    return {row.message_id: row.rating for row in await session.scalars(stmt)}


async def add_upload_file(
    session: AsyncSession,
    *,
    file_id: str,
    app_id: str,
    end_user_id: str,
    name: str,
    size: int,
    extension: str,
    mime_type: str,
    storage_key: str,
) -> UploadFile:
    """The row of a file an end user uploaded (its bytes are already at ``storage_key``)."""
    row = UploadFile(
        id=file_id,
        app_id=app_id,
        end_user_id=end_user_id,
        name=name,
        size=size,
        extension=extension,
        mime_type=mime_type,
        storage_key=storage_key,
    )
    session.add(row)
    await session.flush()
    return row
