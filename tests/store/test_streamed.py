"""What a client saw, rebuilt from a stream's stored chunks (``streams.seen_by_client``), and a message cut
by the death of its process saved from them when the sweep marks it (``repositories.keep_streamed``).

Every test here takes nothing but a database: ``tests/store/test_postgres.py`` runs them on PostgreSQL too.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store import codec, streams
from loopwright.store import models as m
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.streams import Chunk, Item
from tests.store import rows

DEAD = "00000000-0000-0000-0000-00000000dead"  # a worker without a row: its process is gone


def thought(thought_id: str, position: int, **shown: Any) -> dict[str, Any]:
    """An ``agent_thought`` payload as the journal stores it (Dify's joined strings)."""
    names = shown.pop("tools", [])
    inputs = shown.pop("inputs", [{} for _ in names])
    observations = shown.pop("observations", ["" for _ in names])
    return {
        "event": "agent_thought",
        "id": thought_id,
        "position": position,
        "thought": shown.pop("thought", ""),
        "observation": codec.round_observations(names, observations),
        "tool": codec.join_tool_names(names),
        "tool_labels": codec.tool_labels(codec.join_tool_names(names)),
        "tool_input": codec.round_inputs(names, inputs),
        "message_files": shown.pop("files", []),
    }


async def running_message(s: AsyncSession, query: str = "q") -> m.Message:
    app, _ = await repo.create_app(s, f"demo-{query}", {})
    user = await repo.get_or_create_end_user(s, app.id, "u")
    conv = await rows.create_conversation(s, app.id, user.id)
    msg = await rows.create_message(s, conv, query)
    await s.execute(update(m.Message).where(m.Message.id == msg.id).values(status="running", worker_id=DEAD))
    return msg


async def stream(s: AsyncSession, msg: m.Message, task_id: str, *batches: list[Item], later: int = 0) -> None:
    """A run stream of ``msg`` started ``later`` seconds from now, holding ``batches`` as consecutive
    chunks from event 1."""
    started = m.utcnow() + timedelta(seconds=later)
    s.add(
        m.RunStream(
            task_id=task_id,
            app_id=msg.app_id,
            user="u",
            message_id=msg.id,
            conversation_id=msg.conversation_id,
            message_created_at=0,
            worker_id=DEAD,
            started_at=started,
        )
    )
    await s.flush()
    chunks, seq = [], 1
    for items in batches:
        chunks.append(Chunk(task_id, seq, seq + len(items) - 1, list(items), False))
        seq += len(items)
    await streams.write_chunks(chunks, m.utcnow())(s)


async def test_what_a_client_saw_is_rebuilt_from_the_stored_chunks(db: Database) -> None:
    replace = {"event": "message_replace", "answer": "Hidden.", "reason": "output_moderation"}
    async with db.transaction() as s:
        msg = await running_message(s)
        await stream(
            s,
            msg,
            "task-1",
            [thought("t1", 1), "Let ", "me "],
            [thought("t1", 1, thought="Let me", tools=["calc"]), "add."],
            [replace, "Then ", {"event": "message", "answer": "more"}],
        )
        # the same events stored again in a chunk that overlaps (a worker that was only slow): once each
        await streams.write_chunks([Chunk("task-1", 5, 7, ["add.", replace, "Then "], False)], m.utcnow())(s)
    async with db.session() as s:
        chunks = (await streams.chunks_of_messages(s, [msg.id, "no-such-message"]))[msg.id]
        assert list(await streams.chunks_of_messages(s, ["no-such-message"])) == []
    seen = streams.seen_by_client(chunks)
    assert seen.answer == "Hidden.Then more"  # deltas and direct text, restarted by message_replace
    assert list(seen.thoughts) == ["t1"] and seen.thoughts["t1"]["tool"] == "calc"  # its last state
    assert not seen.text_after
    upto = streams.seen_by_client(chunks, upto=4)
    assert upto.answer == "Let me " and upto.text_after  # "add." came after event 4
    assert upto.thoughts["t1"]["tool"] == "calc"
    replaced = streams.seen_by_client(chunks, upto=6)
    assert replaced.answer == "Hidden." and replaced.text_after
    assert streams.seen_by_client(chunks, upto=9).text_after is False
    assert streams.seen_by_client([]) == streams.Seen()


async def test_a_message_marked_interrupted_keeps_the_answer_and_thoughts_its_stream_stored(
    db: Database,
) -> None:
    calc = {"tools": ["calc"], "inputs": [{"expression": "2 + 3"}]}
    async with db.transaction() as s:
        msg = await running_message(s)
        # round 1 finished: its row is stored (with its usage), as the run writes it at a round's end
        done = await rows.add_thought(
            s, msg.id, 1, thought="Let me add.", observations=["5"], tools=["calc"], inputs=calc["inputs"]
        )
        done.tokens = 42
        # an earlier stream of the message: only its latest counts
        await stream(s, msg, "task-old", ["Old text."])
        await stream(
            s,
            msg,
            "task-new",
            [thought(done.id, 1), "Let me add."],
            # the journal's last state of round 1 is only as far on as its stored row (the round's end
            # changed only its thought, which no event showed): the stored row stays
            [thought(done.id, 1, thought="Let me add.", **calc)],
            [thought(done.id, 1, thought="Let me", observations=["5"], **calc)],
            [thought("t2", 2), "counting ", "coun"],
            [thought("t2", 2, thought="", tools=["search"], inputs=[{"q": "天气"}])],
            later=1,
        )
        plain = await running_message(s, "no stream")  # the journal off: nothing to save from
    async with db.transaction() as s:
        assert await repo.interrupt_orphans(s, m.utcnow()) == 2
    async with db.session() as s:
        row = await s.get(m.Message, msg.id)
        other = await s.get(m.Message, plain.id)
        thoughts = await repo.list_thoughts(s, msg.id)
    assert row is not None and other is not None
    assert (row.status, row.worker_id, row.answer) == ("error", None, "Let me add.counting coun")
    assert row.error == repo.INTERRUPTED_ERROR
    assert (other.status, other.answer) == ("error", "")
    assert [(t.id, t.position) for t in thoughts] == [(done.id, 1), ("t2", 2)]
    first, cut = thoughts
    assert (first.thought, first.observation, first.tokens) == ("Let me add.", json.dumps({"calc": "5"}), 42)
    assert (cut.thought, cut.tool, cut.observation, cut.message_files) == ("", "search", "", "[]")
    assert json.loads(cut.tool_input or "") == {"search": {"q": "天气"}}
    assert json.loads(cut.tool_labels_str) == {"search": {"en_US": "search", "zh_Hans": "search"}}
    assert (cut.created_by_role, cut.tokens, cut.currency) == ("account", 0, "USD")  # Dify's initial values
    async with db.transaction() as s:
        assert await repo.interrupt_orphans(s, m.utcnow()) == 0  # marked once


async def test_a_thought_stored_before_its_last_announced_state_is_brought_up_to_it(db: Database) -> None:
    async with db.transaction() as s:
        msg = await running_message(s)
        # stored when the run paused for an approval (no observation yet), then resumed and cut
        paused = await rows.add_thought(s, msg.id, 1, thought="Check.", tools=["calc"], inputs=[{"e": "1"}])
        paused.tokens = 7
        observed = {"thought": "Check.", "tools": ["calc"], "inputs": [{"e": "1"}], "observations": ["1"]}
        await stream(
            s,
            msg,
            "task-1",
            [thought(paused.id, 1, **observed)],
            [thought(paused.id, 1, **observed, files=["f-1"])],
        )
    async with db.transaction() as s:
        assert await repo.interrupt_lost(s, DEAD, [], m.utcnow() + timedelta(seconds=1)) == 1
    async with db.session() as s:
        row = await s.get(m.Message, msg.id)
        [kept] = await repo.list_thoughts(s, msg.id)
    assert row is not None and (row.status, row.error, row.answer) == ("error", repo.LOST_ERROR, "")
    assert json.loads(kept.observation or "") == {"calc": "1"}
    assert json.loads(kept.message_files or "") == ["f-1"]
    assert (kept.thought, kept.tokens) == ("Check.", 7)  # what the event does not carry stays
