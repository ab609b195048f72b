"""Many clients that drop their stream at random points: every run goes on to its end, every message
and thought is saved, and each stream can still be replayed whole (bench/ has the 1,000-client run)."""

from __future__ import annotations

import asyncio
import random

import httpx
from sqlalchemy import func, select

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAgentThought
from tests.live_server import serving
from tests.server.conftest import NewApp, new_app
from tests.sse import ACCEPT_SSE, numbered

__all__ = ["new_app"]  # a fixture, used by name

SEED = 7
CLIENTS = 30
ANSWER = "one two three four five six seven eight nine ten " * 4


async def drop_after(client: httpx.AsyncClient, headers: dict[str, str], count: int) -> str:
    """Stream a message, drop the connection after ``count`` events; its task id."""
    body = {"query": "Count.", "user": "alice", "response_mode": "streaming", "inputs": {}}
    async with client.stream("POST", "/v1/chat-messages", json=body, headers={**headers, **ACCEPT_SSE}) as r:
        task_id = ""
        seen = 0
        buffer = ""
        async for text in r.aiter_text():
            buffer += text
            *frames, buffer = buffer.split("\n\n")
            for f in frames:
                for seq, event in numbered(f + "\n\n"):
                    task_id = task_id or str(event.get("task_id", ""))
                    seen += seq is not None
            if seen >= count:
                break  # the client goes away mid-stream
    return task_id


async def test_clients_dropping_mid_stream_lose_nothing(new_app: NewApp, db: Database) -> None:
    app = await new_app([ANSWER] * CLIENTS, delay=0.005)
    server = create_app(db, Settings(), ping_interval=0.5)
    rng = random.Random(SEED)
    points = [rng.randint(1, 40) for _ in range(CLIENTS)]
    async with serving(server) as url, httpx.AsyncClient(base_url=url, timeout=60) as client:
        task_ids = await asyncio.gather(*(drop_after(client, app.headers, n) for n in points))
        runtime = server.state.loopwright
        await asyncio.wait_for(runtime.settled(), 120)
        await runtime.journal.settled()
        await db.writer.flush()
        async with db.sessionmaker() as s:
            messages = list(await s.scalars(select(Message)))
            thoughts = dict(
                (
                    await s.execute(
                        select(MessageAgentThought.message_id, func.count()).group_by(
                            MessageAgentThought.message_id
                        )
                    )
                ).all()
            )
        assert len(messages) == CLIENTS
        for message in messages:
            assert message.status == "normal" and message.answer.strip() == ANSWER.strip()
            assert thoughts.get(message.id) == 1
        for task_id in task_ids:
            replay = await client.get(f"/v1/chat-messages/{task_id}/events?user=alice", headers=app.headers)
            events = [(s, e) for s, e in numbered(replay.text) if s is not None]
            assert [s for s, _ in events] == list(range(1, len(events) + 1))
            assert events[-1][1]["event"] == "message_end"
            answer = "".join(str(e["answer"]) for _, e in events if e["event"] == "agent_message")
            assert answer.strip() == ANSWER.strip()
