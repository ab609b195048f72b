"""Strategy "plan" on Dify's wire: the plan is a thought row whose checklist ticks as steps end, each
wave of steps a thought row with its tool calls, and the stored thoughts say the same."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.server.conftest import NewApp, parse_sse

PLAN_REPLIES: list[Any] = [
    {
        "tool_calls": [
            [
                "make_plan",
                {
                    "steps": [
                        {"id": "s1", "task": "add", "tool": "calculator", "arguments": {"expression": "2+3"}},
                        {
                            "id": "s2",
                            "task": "double it",
                            "tool": "calculator",
                            "arguments": {"expression": "{{s1}}*2"},
                            "after": ["s1"],
                        },
                    ]
                },
            ]
        ]
    },
    "It is 10.",
]


async def test_the_plan_streams_as_thoughts_that_tick(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(PLAN_REPLIES, strategy="plan")
    body = {"query": "Double 2+3", "inputs": {}, "user": "alice", "response_mode": "streaming"}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    thoughts = [e for e in events if e["event"] == "agent_thought"]
    plan_id = thoughts[0]["id"]
    plan_texts = [t["thought"] for t in thoughts if t["id"] == plan_id]
    assert "- [ ] s1: add (calculator)" in plan_texts[1]
    assert plan_texts[-1].endswith("- [x] s1: add (calculator)\n- [x] s2: double it (calculator)")
    waves = {t["id"]: t for t in thoughts if t["tool"] == "calculator"}  # each row as it stands last
    first, second = waves.values()
    assert (
        first["thought"] == "s1: add"
        and "2+3" in first["tool_input"]
        and json.loads(first["observation"]) == {"calculator": "5"}
    )
    assert second["thought"] == "s2: double it" and "5*2" in second["tool_input"]
    assert json.loads(second["observation"]) == {"calculator": "10"}
    assert {t["position"] for t in thoughts} == {1, 2, 3, 4}
    answer = "".join(e["answer"] for e in events if e["event"] == "agent_message")
    assert answer == "It is 10." and events[-1]["event"] == "message_end"

    # stored: the plan's row with its ticks, a row per wave, the answer
    params = {"user": "alice", "conversation_id": events[0]["conversation_id"]}
    r = await client.get("/v1/messages", params=params, headers=app.headers)
    stored = r.json()["data"][0]["agent_thoughts"]
    assert stored[0]["thought"] == plan_texts[-1]
    assert [t["tool"] for t in stored] == ["", "calculator", "calculator", ""]
