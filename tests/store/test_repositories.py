from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.model.entities import Usage
from loopwright.store import models as m
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.store import rows


async def _setup(s: AsyncSession, user: str = "alice") -> tuple[m.App, m.EndUser]:
    app, _ = await repo.create_app(s, "demo", {"model": "scripted"})
    end_user = await repo.get_or_create_end_user(s, app.id, user)
    return app, end_user


async def test_apps_and_config_versions(db: Database) -> None:
    async with db.transaction() as s:
        app, v1 = await repo.create_app(s, "demo", {"a": 1}, description="d")
        assert (app.mode, v1.version, v1.config) == ("agent-chat", 1, {"a": 1})
        v2 = await repo.add_config_version(s, app.id, {"a": 2})
        assert v2.version == 2 and v2.id != v1.id
        latest = await repo.latest_config(s, app.id)
        assert latest is not None and latest.id == v2.id
        assert await repo.latest_config(s, "nope") is None
    async with db.session() as s:
        old = await s.get(m.AppConfig, v1.id)
        assert old is not None and old.config == {"a": 1}  # never updated in place


async def test_api_keys(db: Database) -> None:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "one", {})
        other, _ = await repo.create_app(s, "two", {})
        key = await repo.create_api_key(s, app.id)
        other_key = await repo.create_api_key(s, other.id)
        assert re.fullmatch(r"app-[A-Za-z0-9_-]{24}", key.token)
        assert key.last_used_at is None
    async with db.transaction() as s:
        found = await repo.find_app_by_key(s, key.token)
        assert found is not None and found.id == app.id
        found_other = await repo.find_app_by_key(s, other_key.token)
        assert found_other is not None and found_other.id == other.id
        assert await repo.find_app_by_key(s, "app-unknown") is None
    async with db.session() as s:
        row = await s.get(m.ApiKey, key.id)
        assert row is not None and row.last_used_at is not None


async def test_end_users_unique_per_app(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        again = await repo.get_or_create_end_user(s, app.id, "alice")
        assert again.id == alice.id
        other_app, _ = await repo.create_app(s, "x", {})
        elsewhere = await repo.get_or_create_end_user(s, other_app.id, "alice")
        assert elsewhere.id != alice.id


async def test_conversation_pinned_and_isolated(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        bob = await repo.get_or_create_end_user(s, app.id, "bob")
        v1 = await repo.latest_config(s, app.id)
        conv = await rows.create_conversation(s, app.id, alice.id, inputs={"lang": "en"})
        await repo.add_config_version(s, app.id, {"model": "new"})
        assert v1 is not None and conv.app_config_id == v1.id
        assert (await repo.get_conversation(s, app.id, alice.id, conv.id)) is conv
        assert await repo.get_conversation(s, app.id, bob.id, conv.id) is None
        assert await repo.get_conversation(s, "other-app", alice.id, conv.id) is None
        assert (await repo.list_conversations(s, app.id, bob.id)).items == []
        renamed = await repo.rename_conversation(s, conv, "Trip")
        assert renamed.name == "Trip"
        await repo.delete_conversation(s, conv)
        assert await repo.get_conversation(s, app.id, alice.id, conv.id) is None
        assert (await repo.list_conversations(s, app.id, alice.id)).items == []
        assert await repo.latest_config(s, "no-such-app") is None  # nothing to pin a conversation to


async def test_list_conversations_pagination(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        convs = [await rows.create_conversation(s, app.id, alice.id, name=f"c{i}") for i in range(5)]
        base = convs[0].updated_at
        for i, c in enumerate(convs):
            c.updated_at = base + timedelta(seconds=i)
        convs[1].updated_at = convs[2].updated_at  # a tie is broken by id, nothing is lost
        await s.flush()
        seen: list[str] = []
        last_id = None
        pages = 0
        while True:
            page = await repo.list_conversations(s, app.id, alice.id, limit=2, last_id=last_id)
            seen += [c.id for c in page.items]
            pages += 1
            if not page.has_more:
                break
            last_id = page.items[-1].id
        assert pages == 3 and sorted(seen) == sorted(c.id for c in convs) and len(set(seen)) == 5
        assert seen[0] == convs[4].id and seen[-1] == convs[0].id
        assert (await repo.list_conversations(s, app.id, alice.id, last_id="unknown")).items == []


async def test_messages_and_pagination(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        conv = await rows.create_conversation(s, app.id, alice.id, inputs={"k": 1})
        msgs = [await rows.create_message(s, conv, f"q{i}") for i in range(5)]
        assert msgs[0].inputs == {"k": 1} and conv.updated_at == msgs[-1].created_at
        for i, msg in enumerate(msgs):
            msg.created_at = msgs[0].created_at + timedelta(seconds=i)
        await s.flush()
        page = await repo.list_messages(s, conv.id, limit=2)
        assert [x.query for x in page.items] == ["q3", "q4"] and page.has_more
        page = await repo.list_messages(s, conv.id, limit=2, first_id=page.items[0].id)
        assert [x.query for x in page.items] == ["q1", "q2"] and page.has_more
        page = await repo.list_messages(s, conv.id, limit=2, first_id=page.items[0].id)
        assert [x.query for x in page.items] == ["q0"] and not page.has_more
        page = await repo.list_messages(s, conv.id, limit=10)
        assert len(page.items) == 5 and not page.has_more
        assert (await repo.list_messages(s, conv.id, first_id="nope")).items == []
        assert await repo.get_message(s, "other-conv", msgs[0].id) is None


async def test_save_message_result(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        conv = await rows.create_conversation(s, app.id, alice.id)
        msg = await rows.create_message(s, conv, "hi")
        usage = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, total_price=Decimal("0.0021"))
        usage.latency = 1.5
        await rows.set_result(s, msg.id, answer="hello", usage=usage)
        await rows.set_result(s, msg.id, status="error", error="boom")
        with pytest.raises(ValueError):
            repo.message_result(status="weird")
    async with db.session() as s:
        row = await s.get(m.Message, msg.id)
        assert row is not None
        assert (row.answer, row.message_tokens, row.answer_tokens) == ("hello", 10, 5)
        assert row.total_price == Decimal("0.0021") and row.provider_response_latency == 1.5
        assert (row.status, row.error) == ("error", "boom")


async def test_feedback(db: Database) -> None:
    async with db.transaction() as s:
        app, alice = await _setup(s)
        conv = await rows.create_conversation(s, app.id, alice.id)
        msg = await rows.create_message(s, conv, "hi")
        fb = await repo.set_feedback(s, msg.id, alice.id, "like")
        assert fb is not None and fb.rating == "like"
        fb2 = await repo.set_feedback(s, msg.id, alice.id, "dislike", "wrong")
        assert fb2 is not None and fb2.id == fb.id and (fb2.rating, fb2.content) == ("dislike", "wrong")
        assert await repo.set_feedback(s, msg.id, alice.id, None) is None
        assert await s.get(m.MessageFeedback, fb.id) is None
        with pytest.raises(ValueError):
            await repo.set_feedback(s, msg.id, alice.id, "meh")
