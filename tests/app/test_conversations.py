"""app.conversations: pages of conversations and messages, renames, deletes and ratings, each scoped to
one end user — and a page of messages costs the same number of queries whatever its length."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import event

from loopwright.app.admin import conversations
from loopwright.app.config import AppConfig
from loopwright.app.lookup import AppLookup
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import (
    Conversation,
    Message,
    MessageAgentThought,
    MessageFeedback,
    MessageFile,
    utcnow,
)
from loopwright.store.threads import UUID_NIL
from loopwright.tools.files.manager import ToolFiles

MESSAGES = 6
THOUGHTS_PER_MESSAGE = 2


@dataclass
class Stored:
    app_id: str
    conversation_id: str
    message_ids: list[str]  # oldest first


async def no_tool_files() -> ToolFiles:
    raise AssertionError("no message here has a tool file to sign")


async def stored_conversation(db: Database, lookup: AppLookup, user: str = "alice") -> Stored:
    """An app, ``user``'s conversation of MESSAGES messages (each with thoughts and a remote file) and
    a rating of every other message."""
    async with db.transaction() as s:
        app, config = await repo.create_app(s, "a", AppConfig(opening_statement="Welcome!").model_dump())
    end_user_id = await lookup.end_user_id(app.id, user)
    start = utcnow()
    async with db.transaction() as s:
        conv = Conversation(
            app_id=app.id, end_user_id=end_user_id, app_config_id=config.id, name="hello", inputs={}
        )
        s.add(conv)
        await s.flush()
        ids = []
        for i in range(MESSAGES):
            at = start + timedelta(seconds=i)
            m = Message(
                conversation_id=conv.id,
                app_id=app.id,
                query=f"q{i}",
                answer=f"a{i}",
                parent_message_id=UUID_NIL,  # as the Service API writes them
                created_at=at,
            )
            s.add(m)
            await s.flush()
            ids.append(m.id)
            for position in (2, 1):  # stored out of order: the page orders them
                values = repo.new_thought(m.id, position)
                values.update(thought=f"t{i}.{position}", tool_labels_str='{"calc": {"en_US": "Calc"}}')
                s.add(MessageAgentThought(**values))
            s.add(
                MessageFile(
                    message_id=m.id,
                    type="image",
                    transfer_method="remote_url",
                    url=f"https://example.com/{i}.png",
                    created_by_role="end_user",
                    created_by=end_user_id,
                )
            )
            if i % 2 == 0:
                s.add(MessageFeedback(message_id=m.id, end_user_id=end_user_id, rating="like"))
    return Stored(app.id, conv.id, ids)


@contextmanager
def counted_queries(db: Database) -> Iterator[list[str]]:
    """The SQL statements the engine runs inside the block."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", record)


async def test_a_page_of_messages_costs_the_same_queries_whatever_its_length(db: Database) -> None:
    lookup = AppLookup(db)
    stored = await stored_conversation(db, lookup)
    await db.writer.flush()

    async def page(limit: int) -> tuple[int, list[conversations.MessageView]]:
        with counted_queries(db) as statements:
            got = await conversations.message_page(
                db, lookup, no_tool_files, stored.app_id, "alice", stored.conversation_id, limit=limit
            )
        return len(statements), got.items

    one, short = await page(1)
    many, full = await page(MESSAGES)
    assert [m.id for m in short] == stored.message_ids[-1:]
    assert [m.id for m in full] == stored.message_ids
    assert sum(len(m.thoughts) for m in full) == MESSAGES * THOUGHTS_PER_MESSAGE
    assert many == one  # no query per message
    assert many <= 6  # conversation, messages, ratings, files, thoughts (and the transaction's own)


async def test_a_page_carries_each_message_s_thoughts_files_and_rating(db: Database) -> None:
    lookup = AppLookup(db)
    stored = await stored_conversation(db, lookup)
    page = await conversations.message_page(
        db, lookup, no_tool_files, stored.app_id, "alice", stored.conversation_id, limit=3
    )
    assert page.has_more is True and page.limit == 3
    for i, m in zip(range(MESSAGES - 3, MESSAGES), page.items, strict=True):
        assert m.query == f"q{i}" and m.answer == f"a{i}"
        assert [(t.position, t.thought, t.message_id) for t in m.thoughts] == [
            (1, f"t{i}.1", m.id),
            (2, f"t{i}.2", m.id),
        ]
        assert m.thoughts[0].tool_labels == {"calc": {"en_US": "Calc"}}
        assert [(f.url, f.transfer_method) for f in m.files] == [
            (f"https://example.com/{i}.png", "remote_url")
        ]
        assert m.rating == ("like" if i % 2 == 0 else None)

    older = await conversations.message_page(
        db,
        lookup,
        no_tool_files,
        stored.app_id,
        "alice",
        stored.conversation_id,
        limit=3,
        first_id=page.items[0].id,
    )
    assert [m.id for m in older.items] == stored.message_ids[:3] and older.has_more is False


async def test_another_user_finds_nothing(db: Database) -> None:
    lookup = AppLookup(db)
    stored = await stored_conversation(db, lookup)
    with pytest.raises(NotFoundError, match="Conversation Not Exists."):
        await conversations.message_page(
            db, lookup, no_tool_files, stored.app_id, "bob", stored.conversation_id, limit=20
        )
    with pytest.raises(NotFoundError, match="Message Not Exists."):
        await conversations.rate_message(db, lookup, stored.app_id, "bob", stored.message_ids[0], "like")
    with pytest.raises(NotFoundError, match="Conversation Not Exists."):
        await conversations.delete_conversation(db, lookup, stored.app_id, "bob", stored.conversation_id)
    page = await conversations.conversation_page(db, lookup, stored.app_id, "bob", limit=20)
    assert page.items == []


async def test_unknown_cursors_are_not_found(db: Database) -> None:
    lookup = AppLookup(db)
    stored = await stored_conversation(db, lookup)
    with pytest.raises(NotFoundError, match="First Message Not Exists."):
        await conversations.message_page(
            db,
            lookup,
            no_tool_files,
            stored.app_id,
            "alice",
            stored.conversation_id,
            limit=20,
            first_id="nope",
        )
    with pytest.raises(NotFoundError, match="Last Conversation Not Exists."):
        await conversations.conversation_page(db, lookup, stored.app_id, "alice", limit=20, last_id="nope")


async def test_rename_delete_and_rate(db: Database) -> None:
    lookup = AppLookup(db)
    stored = await stored_conversation(db, lookup)
    args = (db, lookup, stored.app_id, "alice", stored.conversation_id)

    renamed = await conversations.rename_conversation(*args, name="  Maths  ")
    assert renamed.name == "Maths" and renamed.introduction == "Welcome!"
    renamed = await conversations.rename_conversation(*args, auto_generate=True)
    assert renamed.name == "q0"  # the first query names it
    for bad in ("", "   ", "x" * 256):
        with pytest.raises(UserInputError):
            await conversations.rename_conversation(*args, name=bad)
    [listed] = (await conversations.conversation_page(db, lookup, stored.app_id, "alice", limit=20)).items
    assert (listed.id, listed.name, listed.introduction) == (stored.conversation_id, "q0", "Welcome!")

    first = stored.message_ids[1]
    await conversations.rate_message(db, lookup, stored.app_id, "alice", first, "dislike", "wrong")
    page = await conversations.message_page(db, lookup, no_tool_files, *args[2:], limit=20)
    assert page.items[1].rating == "dislike"
    await conversations.rate_message(db, lookup, stored.app_id, "alice", first, None)
    page = await conversations.message_page(db, lookup, no_tool_files, *args[2:], limit=20)
    assert page.items[1].rating is None

    await conversations.delete_conversation(*args)
    assert (await conversations.conversation_page(db, lookup, stored.app_id, "alice", limit=20)).items == []
    with pytest.raises(NotFoundError):
        await conversations.rename_conversation(*args, name="again")
