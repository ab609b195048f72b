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
from loopwright.store import memory as memory_store
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import ConversationSummary, Message
from loopwright.store.threads import UUID_NIL, MessageTree, load_thread, load_tree, thread_messages
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


def test_message_tree_resolves_parents_and_finds_threads_and_versions() -> None:
    # m1 ← m2 (linear, UUID_NIL) ; m2b: m2 regenerated (parent m1) ; m3 after the newest (UUID_NIL: m2b);
    # m1b: the first question edited (no parent) ; m4 names a parent of another conversation (a root)
    tree = MessageTree.build(
        [
            ("m1", UUID_NIL),
            ("m2", UUID_NIL),
            ("m2b", "m1"),
            ("m3", UUID_NIL),
            ("m1b", None),
            ("m4", "elsewhere"),
        ]
    )
    assert tree.parent == {"m1": None, "m2": "m1", "m2b": "m1", "m3": "m2b", "m1b": None, "m4": None}
    assert tree.thread() == ["m4"] and tree.newest == "m4"
    assert tree.thread("m3") == ["m1", "m2b", "m3"]
    assert tree.thread("m2") == ["m1", "m2"]
    assert tree.thread("unknown") == []
    assert tree.siblings("m2") == tree.siblings("m2b") == ["m2", "m2b"]
    assert tree.siblings("m1") == ["m1", "m1b", "m4"]
    assert tree.siblings("m3") == ["m3"]
    # where switching to a version leads: the newest message of its branch
    assert tree.newest_under("m1") == "m3"
    assert tree.newest_under("m2") == "m2" and tree.newest_under("m2b") == "m3"
    assert MessageTree.build([]).thread() == []


async def _branched(db: Database) -> tuple[str, dict[str, str]]:
    """q1 → a1; q2 → a2; q2 regenerated (after q1) → a2b; q3 after the newest → a3."""
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "demo", {})
        user = await repo.get_or_create_end_user(s, app.id, "u")
        conv = await rows.create_conversation(s, app.id, user.id)
        m1 = await rows.create_message(s, conv, "q1")
        m2 = await rows.create_message(s, conv, "q2")
        m2b = await rows.create_message(s, conv, "q2", parent_message_id=m1.id)
        m3 = await rows.create_message(s, conv, "q3")
        msgs = {"m1": m1, "m2": m2, "m2b": m2b, "m3": m3}
        for i, (name, msg) in enumerate(msgs.items()):
            msg.created_at = m1.created_at + timedelta(seconds=i)
            await rows.set_result(s, msg.id, answer=f"a{name[1:]}")
        return conv.id, {name: msg.id for name, msg in msgs.items()}


async def test_load_thread_follows_the_branch_asked_for(db: Database) -> None:
    conv_id, ids = await _branched(db)
    async with db.session() as s:
        newest, _ = await load_thread(s, conv_id)
        older, _ = await load_thread(s, conv_id, leaf=ids["m2"])
        history = await load_history(s, conv_id)
        tree = await load_tree(s, conv_id)
    assert [m.id for m in newest] == [ids["m1"], ids["m2b"], ids["m3"]]
    assert [m.id for m in older] == [ids["m1"], ids["m2"]]
    # the run's context: the regenerated answer, never the one it replaced
    assert _shape(history) == [
        ("user", "q1"),
        ("assistant", "a1", []),
        ("user", "q2"),
        ("assistant", "a2b", []),
        ("user", "q3"),
        ("assistant", "a3", []),
    ]
    assert tree.siblings(ids["m2"]) == [ids["m2"], ids["m2b"]]


async def test_a_summary_stands_only_for_its_own_thread(db: Database) -> None:
    conv_id, ids = await _branched(db)
    async with db.transaction() as s:
        for covered, last in ((2, ids["m2"]), (1, ids["m1"])):
            values = memory_store.new_summary(
                conv_id, covered_messages=covered, last_message_id=last, summary=f"to {last}", model="m"
            )
            s.add(ConversationSummary(**values))
    async with db.session() as s:
        on_old_branch = await memory_store.latest_summary(s, conv_id, [ids["m1"], ids["m2"]])
        on_new_branch = await memory_store.latest_summary(s, conv_id, [ids["m1"], ids["m2b"], ids["m3"]])
        at_the_start = await memory_store.latest_summary(s, conv_id, [])
    assert on_old_branch is not None and on_old_branch.last_message_id == ids["m2"]
    # the summary of q1 → q2 → a2 does not stand for the branch that regenerated a2
    assert on_new_branch is not None and on_new_branch.last_message_id == ids["m1"]
    assert at_the_start is None


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
