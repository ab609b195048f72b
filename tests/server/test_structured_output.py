"""Structured output over the Service API: the app's output_schema; the answer is the JSON text, and
message_end says whether it followed the schema."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from loopwright.agent.output import OUTPUT_TOOL
from loopwright.app.config import AppConfig
from tests.server.conftest import NewApp, action, parse_sse

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["city", "population"],
}
GOOD = {"city": "Lyon", "population": 513000}
BAD = {"city": "Lyon"}


def answer(value: Any) -> dict[str, Any]:
    return {"tool_calls": [[OUTPUT_TOOL, value]]}


async def ask(client: httpx.AsyncClient, key: str, mode: str) -> Any:
    body = {"inputs": {}, "user": "alice", "response_mode": mode, "query": "Biggest city on the Rhône?"}
    r = await client.post("/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return r.json() if mode == "blocking" else [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def test_the_answer_is_the_json_text_and_message_end_says_it_is_valid(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([answer(BAD), answer(GOOD)], output_schema=SCHEMA)
    body = await ask(client, app.key, "blocking")
    assert json.loads(body["answer"]) == GOOD
    assert body["metadata"]["structured_output"] == {"valid": True, "errors": []}


async def test_streamed_the_json_text_arrives_as_the_answer(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([action("Final Answer", GOOD)], features=[], output_schema=SCHEMA)
    events = await ask(client, app.key, "streaming")
    assert json.loads([e for e in events if e["event"] == "agent_message"][-1]["answer"]) == GOOD
    assert events[-1]["metadata"]["structured_output"]["valid"] is True


async def test_an_answer_that_never_follows_falls_back_to_text_and_says_so(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([answer(BAD)] * 3, output_schema=SCHEMA)
    body = await ask(client, app.key, "blocking")
    assert json.loads(body["answer"]) == BAD
    verdict = body["metadata"]["structured_output"]
    assert verdict["valid"] is False and any("population" in e for e in verdict["errors"])


def test_an_invalid_schema_is_refused_in_the_app_config() -> None:
    with pytest.raises(ValueError, match="JSON Schema"):
        AppConfig(output_schema={"type": 12})
