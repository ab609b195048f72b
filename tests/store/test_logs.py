"""The operators' log queries (store/logs.py) on real rows: every end user's conversations with their
message counts, a conversation's messages with feedback, and usage per day. Each test takes only
``db``, so test_postgres runs them on PostgreSQL too."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from loopwright.model.entities import Usage
from loopwright.store import logs
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message, utcnow
from tests.store import rows


async def _app_with_traffic(db: Database) -> tuple[str, str, list[str]]:
    """An app; alice's conversation of two messages (one rated, one failed), bob's of one; and a
    second app's conversation that must never show."""
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "logged", {"model": "local"})
        other, _ = await repo.create_app(s, "other", {"model": "local"})
        alice = await repo.get_or_create_end_user(s, app.id, "alice")
        bob = await repo.get_or_create_end_user(s, app.id, "bob")
        stranger = await repo.get_or_create_end_user(s, other.id, "alice")
        conv_a = await rows.create_conversation(s, app.id, alice.id, name="A")
        m1 = await rows.create_message(s, conv_a, "one")
        usage = Usage(prompt_tokens=10, completion_tokens=5, total_price=Decimal("0.0015"), latency=1.0)
        await rows.set_result(s, m1.id, answer="first", usage=usage)
        m2 = await rows.create_message(s, conv_a, "two", parent_message_id=m1.id)
        await rows.set_result(s, m2.id, status="error", error="model failed")
        await repo.set_feedback(s, m1.id, alice.id, "like", "good")
        conv_b = await rows.create_conversation(s, app.id, bob.id, name="B")
        m3 = await rows.create_message(s, conv_b, "three")
        await rows.set_result(
            s,
            m3.id,
            answer="third",
            usage=Usage(prompt_tokens=1, completion_tokens=2, total_price=Decimal("0.0001")),
        )
        conv_o = await rows.create_conversation(s, other.id, stranger.id)
        await rows.create_message(s, conv_o, "elsewhere")
        return app.id, conv_a.id, [m1.id, m2.id, m3.id]


async def test_app_conversations_of_every_end_user(db: Database) -> None:
    app_id, conv_a, _ = await _app_with_traffic(db)
    async with db.transaction() as s:
        found, total = await logs.app_conversations(s, app_id, offset=0, limit=10)
        first, _ = await logs.app_conversations(s, app_id, offset=0, limit=1)
        second, _ = await logs.app_conversations(s, app_id, offset=1, limit=1)
    assert total == 2
    assert sorted((r.user, r.conversation.name, r.messages) for r in found) == [
        ("alice", "A", 2),
        ("bob", "B", 1),
    ]
    assert {first[0].conversation.id, second[0].conversation.id} == {r.conversation.id for r in found}


async def test_conversation_messages_and_feedback(db: Database) -> None:
    app_id, conv_a, (m1, m2, _) = await _app_with_traffic(db)
    async with db.transaction() as s:
        found = await logs.conversation_messages(s, app_id, conv_a, limit=10)
        newest = await logs.conversation_messages(s, app_id, conv_a, limit=1)
        elsewhere = await logs.conversation_messages(s, "another-app", conv_a, limit=10)
        feedback = await logs.feedback_of_messages(s, [m1, m2])
    assert found is not None and newest is not None and elsewhere is None
    conv, user, messages = found
    assert conv.id == conv_a and user == "alice" and [m.id for m in messages] == [m1, m2]
    assert [m.id for m in newest[2]] == [m2]
    assert [(f.rating, f.content) for f in feedback[m1]] == [("like", "good")] and m2 not in feedback


async def test_daily_usage(db: Database) -> None:
    app_id, _, (m1, _, _) = await _app_with_traffic(db)
    today = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    async with db.transaction() as s:
        msg = await s.get(Message, m1)
        assert msg is not None
        msg.created_at = today - timedelta(days=1, hours=-1)  # yesterday, 01:00
    async with db.transaction() as s:
        days = await logs.daily_usage(s, app_id, today - timedelta(days=6))
        only_today = await logs.daily_usage(s, app_id, today)
    assert [d.day for d in days] == [str((today - timedelta(days=1)).date()), str(today.date())]
    yesterday, now = days
    assert (yesterday.messages, yesterday.message_tokens, yesterday.answer_tokens) == (1, 10, 5)
    assert yesterday.total_price == Decimal("0.0015") and yesterday.errors == 0
    assert (now.messages, now.conversations, now.end_users, now.errors) == (2, 2, 2, 1)
    assert now.total_price == Decimal("0.0001")
    assert [d.day for d in only_today] == [str(today.date())]
