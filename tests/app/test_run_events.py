"""The event journal (app.run.journal): numbering, batched writes, follow from any point to the end."""

from __future__ import annotations

import asyncio

from sqlalchemy import select

from loopwright.app.dify.events import EventHead, MessageEnd
from loopwright.app.run.journal import EventJournal, Replayed
from loopwright.store.db import Database
from loopwright.store.models import RunEvent

HEAD = EventHead("task-1", "msg-1", "conv-1", 1700000000)


async def collect(journal: EventJournal, after: int) -> list[Replayed]:
    out: list[Replayed] = []
    async for batch in journal.follow(HEAD.task_id, after, ping_interval=60):
        out.extend(batch)
    return out


async def test_deltas_are_written_in_batches_and_followed_to_an_empty_final_chunk(db: Database) -> None:
    journal = EventJournal(db, interval=60)  # nothing is written until flushed
    record = journal.open(HEAD, "app", "alice", None)
    for piece in ["a", "b", "c"]:
        record.add(piece)
    record.add(MessageEnd(HEAD, {"usage": {}}).payload())
    await journal.settled()  # one chunk for the four events
    record.end()  # after its events were written: an empty final chunk
    await journal.settled()
    async with db.sessionmaker() as s:
        chunks = [(c.first_seq, c.last_seq, c.final) for c in (await s.scalars(select(RunEvent)))]
    assert chunks == [(1, 4, False), (5, 4, True)]
    got = await asyncio.wait_for(collect(journal, 0), 10)
    assert [(r.seq, r.item) for r in got[:3]] == [(1, "a"), (2, "b"), (3, "c")]
    assert isinstance(got[3].item, dict) and got[3].item["event"] == "message_end"
    assert await asyncio.wait_for(collect(journal, 4), 10) == []  # the end, heard though it holds nothing
    assert [r.seq for r in await asyncio.wait_for(collect(journal, 2), 10)] == [3, 4]


async def test_a_follower_gets_what_is_written_after_it_started(db: Database) -> None:
    journal = EventJournal(db, interval=0.01, poll_interval=60)  # only the local wake-up can tell it
    record = journal.open(HEAD, "app", "alice", None)
    record.add("first")
    await journal.settled()
    follower = asyncio.ensure_future(collect(journal, 0))
    await asyncio.sleep(0.05)
    record.add("second")
    record.end()
    got = await asyncio.wait_for(follower, 10)
    assert [(r.seq, r.item) for r in got] == [(1, "first"), (2, "second")]
