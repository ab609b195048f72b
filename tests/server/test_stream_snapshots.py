"""The exact bytes of a function-calling and a ReAct stream, pinned (ids and times replaced by
placeholders): every event, every field, its order and its JSON spelling, as Dify's clients see them.

Regenerate after a deliberate change with ``LOOPWRIGHT_UPDATE_SNAPSHOTS=1`` set for this module, and
review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import NewApp, action

SNAPSHOTS = Path(__file__).parent / "snapshots"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
TIME = re.compile(r'"(created_at|latency|time_to_first_token|time_to_generate)": ?[0-9.e-]+')

FC_REPLIES: list[Any] = [
    {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
    "It is 5.",
]
REACT_REPLIES = [action("calculator", {"expression": "6*7"}), action("Final Answer", "It is 42.", "Done.")]


def normalized(body: str) -> str:
    """The body with each distinct id numbered in order of appearance and times as ``<t>``; pings out."""
    names: dict[str, str] = {}

    def name(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"<id{len(names) + 1}>")

    body = TIME.sub(lambda m: f'"{m.group(1)}":<t>', UUID.sub(name, body))
    return "".join(f + "\n\n" for f in body.split("\n\n") if f and f != "event: ping")


def check(name: str, body: str) -> None:
    path = SNAPSHOTS / f"{name}.sse"
    if os.environ.get("LOOPWRIGHT_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(body, encoding="utf-8")
    assert body == path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "replies", "config"),
    [
        ("function_calling", FC_REPLIES, {}),
        ("react", REACT_REPLIES, {"features": [], "strategy": "react"}),
    ],
)
async def test_stream_bytes(
    client: httpx.AsyncClient, new_app: NewApp, name: str, replies: list[Any], config: dict[str, Any]
) -> None:
    app = await new_app(replies, **config)
    body = {"query": "What is it?", "inputs": {}, "user": "alice", "response_mode": "streaming"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    check(name, normalized(r.text))


async def test_error_stream_bytes(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([{"error": "provider down"}])
    body = {"query": "hi", "inputs": {}, "user": "alice", "response_mode": "streaming"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    check("model_error", normalized(r.text))
