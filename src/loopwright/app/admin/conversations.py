"""An end user's conversations and messages as the Service API lists and changes them.

Every function is scoped to one app and one end user (the client's ``user`` string, created on first
sight as everywhere else): a conversation or message outside that scope is "not found", never
another user's. Each call is one transaction. A page of messages costs the same few queries whatever
its length — the thoughts, files and ratings of the whole page are read at once.

The results are small typed views; the server turns them into Dify's bodies.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.agent.prompts import fill_inputs
from loopwright.app.errors import CONVERSATION_NOT_EXISTS as CONVERSATION_NOT_FOUND
from loopwright.app.files.file_inputs import has_files, inputs_view, prompt_view
from loopwright.app.files.uploads import preview_url
from loopwright.app.lookup import AppLookup
from loopwright.app.run.message_writes import conversation_name
from loopwright.errors import NotFoundError, UserInputError
from loopwright.knowledge.citations import history_resources
from loopwright.store import repositories as repo
from loopwright.store import threads
from loopwright.store.db import Database
from loopwright.store.models import (
    Conversation,
    EndUser,
    Message,
    MessageAgentThought,
    MessageFile,
    UploadFile,
    unix_seconds,
)
from loopwright.store.repositories import Page
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.signing import tool_file_of_url

__all__ = [
    "ConversationView",
    "MessageFileView",
    "MessageView",
    "ThoughtView",
    "VersionsView",
    "conversation_page",
    "delete_conversation",
    "message_page",
    "rate_message",
    "rename_conversation",
    "require_conversation",
    "recent_exchanges",
    "saved_retriever_resources",
    "EndUserView",
    "FeedbackView",
    "app_feedbacks",
    "end_user",
]

log = logging.getLogger("loopwright.app")

LAST_CONVERSATION_NOT_FOUND = "Last Conversation Not Exists."
FIRST_MESSAGE_NOT_FOUND = "First Message Not Exists."
MESSAGE_NOT_FOUND = "Message Not Exists."
MAX_NAME_CHARS = 255  # the column's size

Rating = Literal["like", "dislike"]


@dataclass(frozen=True, slots=True)
class ConversationView:
    id: str
    name: str
    inputs: dict[str, Any]
    status: str
    introduction: str  # the opening statement of its configuration version, its inputs filled in
    created_at: int  # Unix seconds
    updated_at: int


@dataclass(frozen=True, slots=True)
class ThoughtView:
    id: str
    message_id: str
    position: int
    thought: str | None
    tool: str | None
    tool_labels: dict[str, Any]
    tool_input: str | None
    observation: str | None
    files: list[Any]  # the ids of the files the round made
    created_at: int


@dataclass(frozen=True, slots=True)
class MessageFileView:
    id: str
    type: str
    url: str  # an upload's or a tool file's freshly signed (a stored signature would have expired)
    belongs_to: str
    transfer_method: str
    upload_file_id: str | None  # the upload's, or the tool file's id (as Dify)
    filename: str
    mime_type: str
    size: int  # bytes; -1 when unknown (Dify's value for a remote file)


@dataclass(frozen=True, slots=True)
class VersionsView:
    """Where a message stands among its versions (store.threads): the message it follows (resolved:
    never ``UUID_NIL``; None for a first message) and the ids of every version, itself included, oldest
    first. More than one: it was regenerated or its question edited."""

    parent_id: str | None
    ids: list[str]


@dataclass(frozen=True, slots=True)
class MessageView:
    id: str
    conversation_id: str
    parent_message_id: str | None
    inputs: dict[str, Any]
    query: str
    answer: str
    files: list[MessageFileView]
    rating: str | None  # this end user's feedback
    created_at: int
    thoughts: list[ThoughtView]
    status: str
    error: str | None
    # the citations its ``message_end`` carried, as Dify's history shows them
    retriever_resources: list[dict[str, Any]]
    answered_by: str | None = None  # handoffs: the app whose agent answered (app.run.handoffs)
    versions: VersionsView | None = None


@dataclass(frozen=True, slots=True)
class EndUserView:
    id: str
    app_id: str
    session_id: str  # the client's ``user`` string
    created_at: datetime


async def end_user(db: Database, app_id: str, end_user_id: str) -> EndUserView | None:
    """One of the app's end users by id (None for an unknown id or another app's user)."""
    async with db.sessionmaker() as session:
        row = await session.get(EndUser, end_user_id)
    if row is None or row.app_id != app_id:
        return None
    return EndUserView(row.id, row.app_id, row.session_id, row.created_at)


@dataclass(frozen=True, slots=True)
class FeedbackView:
    id: str
    conversation_id: str
    message_id: str
    rating: str
    content: str | None
    end_user_id: str
    created_at: datetime
    updated_at: datetime


async def app_feedbacks(db: Database, app_id: str, *, page: int, limit: int) -> list[FeedbackView]:
    """A page of every end user's ratings of the app's messages, newest first."""
    async with db.sessionmaker() as session:
        rows = await repo.app_feedbacks(session, app_id, page=page, limit=limit)
    return [
        FeedbackView(
            f.id, m.conversation_id, m.id, f.rating, f.content, f.end_user_id, f.created_at, f.updated_at
        )
        for f, m in rows
    ]


# --- conversations -----------------------------------------------------------------------------------


async def conversation_page(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    user: str,
    *,
    limit: int,
    last_id: str | None = None,
    sort_by: str = "-updated_at",
    tool_files: Callable[[], Awaitable[ToolFiles]] | None = None,
) -> Page[ConversationView]:
    """The end user's conversations in ``sort_by`` order (Dify's values: ``created_at``,
    ``updated_at``, ``-`` for newest first; default most recently updated first); ``last_id``
    continues after that one (:class:`NotFoundError` when it is not theirs)."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        if last_id and await repo.get_conversation(session, app_id, end_user_id, last_id) is None:
            raise NotFoundError(LAST_CONVERSATION_NOT_FOUND)
        page = await repo.list_conversations(
            session, app_id, end_user_id, limit=limit, last_id=last_id or None, sort_by=sort_by
        )
    signed = tool_files is not None and any(has_files(c.inputs) for c in page.items)
    signer = await tool_files() if signed and tool_files is not None else None
    views = [await _conversation_view(lookup, c, signer) for c in page.items]
    return Page(views, page.has_more, page.limit)


async def rename_conversation(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    user: str,
    conversation_id: str,
    *,
    name: str | None = None,
    auto_generate: bool = False,
    namer: Callable[[str], Awaitable[str]] | None = None,
) -> ConversationView:
    """Give the conversation ``name``, or with ``auto_generate`` the name ``namer`` (the app's model,
    :func:`~app.run.naming.generate_name`) makes of its first query — the query's first 20 characters when
    there is no namer or it fails; a conversation without messages keeps its name.
    :class:`UserInputError` for a blank or too long name."""
    end_user_id = await lookup.end_user_id(app_id, user)
    generated: str | None = None
    if auto_generate:
        async with db.transaction() as session:
            conv = await _conversation(session, app_id, end_user_id, conversation_id)
            first = await repo.first_message(session, conv.id)
        if first is not None:  # the model is called outside any transaction
            generated = await _generated_name(namer, first.query)
    async with db.transaction() as session:
        conv = await _conversation(session, app_id, end_user_id, conversation_id)
        new_name = (generated or conv.name) if auto_generate else _checked_name(name)
        await repo.rename_conversation(session, conv, new_name)
    return await _conversation_view(lookup, conv)


async def _generated_name(namer: Callable[[str], Awaitable[str]] | None, query: str) -> str:
    if namer is not None:
        try:
            made = await namer(query)
        except Exception:
            log.warning("naming a conversation with the model failed; the query names it", exc_info=True)
        else:
            if made:
                return made
    return conversation_name(query)


def _checked_name(name: str | None) -> str:
    name = (name or "").strip()
    if not name:
        raise UserInputError("name is required when auto_generate is false")
    if len(name) > MAX_NAME_CHARS:
        raise UserInputError(f"name must be at most {MAX_NAME_CHARS} characters")
    return name


async def delete_conversation(
    db: Database, lookup: AppLookup, app_id: str, user: str, conversation_id: str
) -> None:
    """Delete the conversation (softly: lookups and lists no longer return it)."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        conv = await _conversation(session, app_id, end_user_id, conversation_id)
        await repo.delete_conversation(session, conv)


async def require_conversation(
    db: Database, lookup: AppLookup, app_id: str, user: str, conversation_id: str
) -> None:
    """:class:`NotFoundError` unless the conversation is the end user's (Dify's message)."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        await _conversation(session, app_id, end_user_id, conversation_id)


async def recent_exchanges(
    db: Database, lookup: AppLookup, app_id: str, user: str, message_id: str, *, limit: int
) -> list[tuple[str, str]]:
    """The last ``limit`` (query, answer) pairs of the thread that ends at one of the end user's
    messages, oldest first; :class:`NotFoundError` when the message is not theirs."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        message = await repo.find_user_message(session, app_id, end_user_id, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        tree = await threads.load_tree(session, message.conversation_id)
        thread = await threads.messages_by_id(session, tree.thread(message.id)[-limit:])
    return [(m.query, m.answer) for m in thread]


async def _conversation(
    session: AsyncSession, app_id: str, end_user_id: str, conversation_id: str
) -> Conversation:
    conv = await repo.get_conversation(session, app_id, end_user_id, conversation_id)
    if conv is None:
        raise NotFoundError(CONVERSATION_NOT_FOUND)
    return conv


async def _conversation_view(
    lookup: AppLookup, conv: Conversation, signer: ToolFiles | None = None
) -> ConversationView:
    version = await lookup.config(conv.app_config_id)  # cached: one query per version, not per row
    return ConversationView(
        id=conv.id,
        name=conv.name,
        inputs=inputs_view(conv.inputs, signer),
        status=conv.status,
        # the opening statement with the conversation's inputs filled in, as Dify stores it
        introduction=fill_inputs(version.config.opening_statement, prompt_view(conv.inputs))
        if version is not None
        else "",
        created_at=unix_seconds(conv.created_at),
        updated_at=unix_seconds(conv.updated_at),
    )


# --- messages ----------------------------------------------------------------------------------------


async def message_page(
    db: Database,
    lookup: AppLookup,
    tool_files: Callable[[], Awaitable[ToolFiles]],
    app_id: str,
    user: str,
    conversation_id: str,
    *,
    limit: int,
    first_id: str | None = None,
    message_id: str | None = None,
) -> Page[MessageView]:
    """A page of one thread of the conversation (store.threads), oldest first: the thread that ends at
    the newest message, or with ``message_id`` the one through that message (to the newest message
    of its branch); its newest ``limit`` messages, or with ``first_id`` the ``limit`` just before that
    one in its thread. Each comes with its thoughts, its files, the end user's rating and its
    versions. ``tool_files`` is called only when a message has a tool's file to sign."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        conv = await _conversation(session, app_id, end_user_id, conversation_id)
        tree = await threads.load_tree(session, conv.id)
        if first_id:
            if first_id not in tree:
                raise NotFoundError(FIRST_MESSAGE_NOT_FOUND)
            thread = tree.thread(first_id)[:-1]
        elif message_id:
            if message_id not in tree:
                raise NotFoundError(MESSAGE_NOT_FOUND)
            thread = tree.thread(tree.newest_under(message_id))
        else:
            thread = tree.thread()
        page = Page(await threads.messages_by_id(session, thread[-limit:]), len(thread) > limit, limit)
        ids = [m.id for m in page.items]
        ratings = await repo.feedback_ratings(session, ids, end_user_id)
        files = await repo.files_of_messages(session, ids)
        thoughts = await repo.thoughts_of_messages(session, ids)
        all_files = [f for rows in files.values() for f in rows]
        uploads = await repo.uploads_by_id(session, [f.upload_file_id for f in all_files if f.upload_file_id])
    details = await _file_details(tool_files, all_files, uploads)
    signer = await tool_files() if any(has_files(m.inputs) for m in page.items) else None
    views = [
        _message_view(
            m,
            ratings.get(m.id),
            files.get(m.id, []),
            thoughts.get(m.id, []),
            details,
            signer,
            VersionsView(tree.parent[m.id], tree.siblings(m.id)),
        )
        for m in page.items
    ]
    return Page(views, page.has_more, page.limit)


async def rate_message(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    user: str,
    message_id: str,
    rating: Rating | None,
    content: str | None = None,
) -> None:
    """Set the end user's rating of one of their messages (``None`` removes it)."""
    end_user_id = await lookup.end_user_id(app_id, user)
    async with db.transaction() as session:
        message = await repo.find_user_message(session, app_id, end_user_id, message_id)
        if message is None:
            raise NotFoundError(MESSAGE_NOT_FOUND)
        if rating is None and not await repo.feedback_ratings(session, [message.id], end_user_id):
            raise UserInputError("rating cannot be None when feedback not exists")  # Dify's text
        await repo.set_feedback(session, message.id, end_user_id, rating, content)


async def _file_details(
    tool_files: Callable[[], Awaitable[ToolFiles]],
    rows: Sequence[MessageFile],
    uploads: Mapping[str, UploadFile],
) -> dict[str, MessageFileView]:
    """Message file id → its view: an upload's name, type and size with a preview URL signed now, a
    tool file's from its description with its URL signed now, a remote file's URL as it came."""
    if not rows:
        return {}
    files = (
        await tool_files()
        if any(r.upload_file_id or r.transfer_method == "tool_file" for r in rows)
        else None
    )
    out: dict[str, MessageFileView] = {}
    for row in rows:
        url, name, mime, size, upload_id = row.url or "", _url_name(row.url or ""), "", -1, row.upload_file_id
        upload = uploads.get(row.upload_file_id or "")
        tool_file_id = tool_file_of_url(url) if row.transfer_method == "tool_file" else None
        if upload is not None and files is not None:
            url, name, mime, size = preview_url(files, upload.id), upload.name, upload.mime_type, upload.size
        elif tool_file_id is not None and files is not None:
            stored = await files.get(tool_file_id)
            upload_id = tool_file_id
            if stored is not None:
                url, name, mime, size = (
                    files.url_for(stored),
                    stored.name,
                    stored.mime_type,
                    stored.size or -1,
                )
        out[row.id] = MessageFileView(
            row.id, row.type, url, row.belongs_to, row.transfer_method, upload_id, name, mime, size
        )
    return out


def _url_name(url: str) -> str:
    """A remote file's name: the last segment of its path."""
    return url.partition("?")[0].rstrip("/").rsplit("/", 1)[-1]


def saved_retriever_resources(message: Message) -> list[dict[str, Any]]:
    """The citations saved with a message (those its ``message_end`` carried; ``[]`` when none)."""
    metadata = _json(message.message_metadata, {})
    resources = metadata.get("retriever_resources") if isinstance(metadata, dict) else None
    return resources if isinstance(resources, list) else []


def _message_view(
    m: Message,
    rating: str | None,
    files: Sequence[MessageFile],
    thoughts: Sequence[MessageAgentThought],
    details: Mapping[str, MessageFileView],
    signer: ToolFiles | None = None,
    versions: VersionsView | None = None,
) -> MessageView:
    return MessageView(
        id=m.id,
        conversation_id=m.conversation_id,
        parent_message_id=m.parent_message_id,
        inputs=inputs_view(m.inputs, signer),  # files with their URLs, as Dify shows them
        query=m.query,
        answer=m.answer,
        files=[details[f.id] for f in files],
        rating=rating,
        created_at=unix_seconds(m.created_at),
        thoughts=[_thought_view(t) for t in thoughts],
        status=m.status,
        error=m.error,
        # Dify's history shape of a citation (its id, message and time), not the stream's
        retriever_resources=history_resources(saved_retriever_resources(m), m.id, unix_seconds(m.created_at)),
        answered_by=m.answered_by,
        versions=versions,
    )


def _thought_view(t: MessageAgentThought) -> ThoughtView:
    files = _json(t.message_files, [])
    labels = _json(t.tool_labels_str, {})
    return ThoughtView(
        id=t.id,
        message_id=t.message_id,
        position=t.position,
        thought=t.thought,
        tool=t.tool,
        tool_labels=labels if isinstance(labels, dict) else {},
        tool_input=t.tool_input,
        observation=t.observation,
        files=files if isinstance(files, list) else [],
        created_at=unix_seconds(t.created_at),
    )


def _json(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default
