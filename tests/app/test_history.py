from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta

from loopwright.app.run.history import load_history, trim_to_budget
from loopwright.model.entities import (
    AssistantMessage,
    PromptMessage,
    SystemMessage,
    ToolMessage,
    UserMessage,
)
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message
from loopwright.store.threads import UUID_NIL, thread_messages
from tests.store import rows


def _shape(messages: Sequence[PromptMessage]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for msg in messages:
        if isinstance(msg, AssistantMessage):
            calls = [(c.name, json.loads(c.arguments)) for c in msg.tool_calls]
            out.append(("assistant", msg.content, calls))
        elif isinstance(msg, ToolMessage):
            out.append(("tool", msg.name, msg.content))
        elif isinstance(msg, UserMessage):
            out.append(("user", msg.content))
        else:
            out.append(("system", msg.content))
    return out


async def _conversation(db: Database) -> tuple[str, list[str]]:
    """Turn 1: a tool round then an answer; turn 2: a plain answer; turn 3: invalid stored JSON;
    turn 4: the current message."""
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "demo", {})
        user = await repo.get_or_create_end_user(s, app.id, "u")
        conv = await rows.create_conversation(s, app.id, user.id)
        m1 = await rows.create_message(s, conv, "weather in Paris?")
        await rows.add_thought(
            s,
            m1.id,
            1,
            thought="Let me look.",
            tools=["weather", "weather"],
            inputs=[{"city": "Paris"}, {"city": "Lyon"}],
            observations=["sunny", "rain"],
        )
        await rows.add_thought(s, m1.id, 2, thought="Sunny in Paris.")
        await rows.set_result(s, m1.id, answer="Sunny in Paris.")
        m2 = await rows.create_message(s, conv, "thanks", parent_message_id=m1.id)
        await rows.set_result(s, m2.id, answer="You're welcome.")
        m3 = await rows.create_message(s, conv, "again", parent_message_id=m2.id)
        t3 = await rows.add_thought(s, m3.id, 1, tools=["a", "b"])
        t3.tool_input, t3.observation = "{broken", "raw text"  # stored text a reader must survive
        m4 = await rows.create_message(s, conv, "current", parent_message_id=m3.id)
        msgs = [m1, m2, m3, m4]
        for i, msg in enumerate(msgs):
            msg.created_at = m1.created_at + timedelta(seconds=i)
        return conv.id, [x.id for x in msgs]


async def test_load_history(db: Database) -> None:
    conv_id, ids = await _conversation(db)
    async with db.session() as s:
        history = await load_history(s, conv_id, exclude_message_id=ids[3])
    assert _shape(history) == [
        ("user", "weather in Paris?"),
        ("assistant", "Let me look.", [("weather", {"city": "Paris"}), ("weather", {"city": "Lyon"})]),
        ("tool", "weather", "sunny"),
        ("tool", "weather", "rain"),
        ("assistant", "Sunny in Paris.", []),
        ("user", "thanks"),
        ("assistant", "You're welcome.", []),
        ("user", "again"),
        ("assistant", "", [("a", {}), ("b", {})]),  # invalid input JSON → {} per tool
        ("tool", "a", "raw text"),  # non-JSON observation → the raw string for every tool
        ("tool", "b", "raw text"),
    ]
    first = history[1]
    assert isinstance(first, AssistantMessage)
    call_ids = [c.id for c in first.tool_calls]
    assert len(set(call_ids)) == 2
    assert [m.tool_call_id for m in history[2:4] if isinstance(m, ToolMessage)] == call_ids


async def test_load_history_empty_and_current_only(db: Database) -> None:
    async with db.session() as s:
        assert await load_history(s, "nothing") == []


def _msg(id_: str, parent: str | None) -> Message:
    return Message(id=id_, conversation_id="c", app_id="a", query=id_, parent_message_id=parent)


def test_thread_messages() -> None:
    # linear (UUID_NIL parents) down to a message without parent
    linear = [_msg("m3", UUID_NIL), _msg("m2", UUID_NIL), _msg("m1", None), _msg("m0", None)]
    assert [m.id for m in thread_messages(linear)] == ["m3", "m2", "m1"]
    # a regenerated answer: m3b replaces m3a, both children of m2
    branched = [_msg("m3b", "m2"), _msg("m3a", "m2"), _msg("m2", "m1"), _msg("m1", None)]
    assert [m.id for m in thread_messages(branched)] == ["m3b", "m2", "m1"]
    assert thread_messages([]) == []


def _count(messages: Sequence[PromptMessage]) -> int:
    return len(messages)


def _twelve() -> list[PromptMessage]:
    return [
        SystemMessage("s1"),
        UserMessage("u1"),
        AssistantMessage("a1"),
        ToolMessage("t1", "c1"),
        AssistantMessage("a2"),
        SystemMessage("s2"),
        UserMessage("u2"),
        AssistantMessage("a3"),
        ToolMessage("t2", "c2"),
        AssistantMessage("a4"),
        UserMessage("u3"),
        AssistantMessage("a5"),
    ]


def test_trim_to_budget_dify_cases() -> None:
    history = _twelve()
    assert len(trim_to_budget(history, _count, 20)) == 12
    trimmed = trim_to_budget(history, _count, 5)
    assert len(trimmed) == 4
    assert [getattr(m, "content", None) for m in trimmed] == ["s1", "s2", "u3", "a5"]


def test_trim_to_budget_drops_whole_turns() -> None:
    history = _twelve()
    kept = trim_to_budget(history, _count, 9)
    assert [m.content for m in kept] == ["s1", "s2", "u2", "a3", "t2", "a4", "u3", "a5"]
    assert trim_to_budget(history, _count, 1) == history[0:1] + history[5:6]  # only the system messages
    assert [m.content for m in trim_to_budget(history, _count, 100, max_messages=6)] == [
        "s1",
        "s2",
        "u2",
        "a3",
        "t2",
        "a4",
        "u3",
        "a5",
    ]
    assert [m.content for m in trim_to_budget(history, _count, 100, max_messages=3)] == [
        "s1",
        "s2",
        "u3",
        "a5",
    ]
    assert trim_to_budget([], _count, 0) == []
