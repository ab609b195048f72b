"""Dify 1.13's human-input wire over a pause for tool approvals (in process): the
``human_input_required`` and ``workflow_paused`` events, the form routes, re-attaching with
``GET /v1/workflow/{task_id}/events``, and the form token's rules (its app, its user, once, in time)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.store.db import Database
from loopwright.store.models import HumanInputForm, Message, utcnow
from tests.server.conftest import NewApp, ServiceApp, parse_sse

CALC = {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
APPROVAL = {"approval": {"tools": ["calculator"], "timeout": 600}}


async def pause(client: httpx.AsyncClient, app: ServiceApp, user: str = "alice") -> list[dict[str, Any]]:
    body = {"query": "What is 2 + 3?", "inputs": {}, "response_mode": "streaming", "user": user}
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return parse_sse(r.text, pings=False)


def by_name(events: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (found,) = [e for e in events if e["event"] == name]
    return found


async def submit(
    client: httpx.AsyncClient, app: ServiceApp, token: str, action: str, user: str = "alice", **inputs: Any
) -> httpx.Response:
    body = {"inputs": inputs, "action": action, "user": user}
    return await client.post(f"/v1/form/human_input/{token}", json=body, headers=app.headers)


async def follow(
    client: httpx.AsyncClient, app: ServiceApp, task_id: str, user: str = "alice", **params: Any
) -> list[dict[str, Any]]:
    query = {"user": user, **{k: str(v).lower() for k, v in params.items()}}
    r = await client.get(f"/v1/workflow/{task_id}/events", params=query, headers=app.headers)
    assert r.status_code == 200, r.text
    return parse_sse(r.text, pings=False)


async def test_a_pause_is_announced_as_dify_human_input(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    events = await pause(client, app)
    names = [e["event"] for e in events]
    assert names[-3:] == ["tool_approval_required", "human_input_required", "workflow_paused"]
    required = by_name(events, "human_input_required")
    task_id = required["task_id"]
    assert required["workflow_run_id"] == task_id
    form = required["data"]
    assert set(form) == {
        "form_id", "node_id", "node_title", "form_content", "inputs", "actions", "display_in_ui",
        "form_token", "resolved_default_values", "expiration_time",
    }  # fmt: skip
    assert [a["id"] for a in form["actions"]] == ["approve", "reject"]
    assert [i["output_variable_name"] for i in form["inputs"]] == ["arguments", "reason"]
    assert json.loads(form["resolved_default_values"]["arguments"]) == {"expression": "2+3"}
    assert "{{#$output.reason#}}" in form["form_content"] and "calculator" in form["form_content"]
    assert form["node_id"] == by_name(events, "tool_approval_required")["thought_id"]
    assert form["expiration_time"] == by_name(events, "tool_approval_required")["expires_at"]
    assert len(form["form_token"]) >= 40  # 256 random bits
    paused = by_name(events, "workflow_paused")["data"]
    assert paused["status"] == "paused" and paused["workflow_run_id"] == task_id
    assert paused["paused_nodes"] == [form["node_id"]]
    assert paused["reasons"] == [{"type": "human_input_required", **form}]

    r = await client.get(f"/v1/form/human_input/{form['form_token']}", headers=app.headers)
    assert r.status_code == 200, r.text
    definition = r.json()
    assert definition == {
        "form_content": form["form_content"],
        "inputs": form["inputs"],
        "resolved_default_values": form["resolved_default_values"],
        "user_actions": form["actions"],
        "expiration_time": form["expiration_time"],
    }

    r = await submit(client, app, form["form_token"], "approve")
    assert r.status_code == 200 and r.json() == {}
    rest = await follow(client, app, task_id)
    filled = rest[0]
    assert filled["event"] == "human_input_form_filled"
    assert filled["data"]["action_id"] == "approve" and filled["data"]["node_id"] == form["node_id"]
    assert rest[-1]["event"] == "message_end"
    answer = "".join(e["answer"] for e in rest if e["event"] == "agent_message")
    assert "It is 5." in answer
    # the whole stream, from its first event
    whole = await follow(client, app, task_id, include_state_snapshot=True)
    assert [e["event"] for e in whole][: len(names)] == names and whole[-1]["event"] == "message_end"
