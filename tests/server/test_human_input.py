"""Dify 1.13's human-input wire over a pause for tool approvals (in process): the
``human_input_required`` and ``workflow_paused`` events, the form routes, re-attaching with
``GET /v1/workflow/{task_id}/events``, and the form token's rules (its app, its user, once, in time)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from loopwright.store.db import Database
from loopwright.store.models import HumanInputForm, utcnow
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


async def test_reject_with_a_reason_and_edited_arguments(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([CALC, "I was not allowed."], **APPROVAL)
    events = await pause(client, app)
    form = by_name(events, "human_input_required")["data"]
    r = await submit(client, app, form["form_token"], "reject", reason="not today")
    assert r.status_code == 200, r.text
    rest = await follow(client, app, form_task(events))
    assert rest[0]["data"]["action_id"] == "reject" and "not today" in rest[0]["data"]["rendered_content"]
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"])["calculator"] == "The user denied this tool call: not today"

    app = await new_app([CALC, "It is 10."], **APPROVAL)
    events = await pause(client, app)
    form = by_name(events, "human_input_required")["data"]
    bad = await submit(client, app, form["form_token"], "approve", arguments="{not json")
    assert bad.status_code == 400  # and the form stays open
    r = await submit(client, app, form["form_token"], "approve", arguments='{"expression": "4+6"}')
    assert r.status_code == 200, r.text
    rest = await follow(client, app, form_task(events))
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert json.loads(observed[0]["observation"])["calculator"] == "10"


def form_task(events: list[dict[str, Any]]) -> str:
    return str(by_name(events, "human_input_required")["task_id"])


async def test_the_token_is_bound_to_its_app_and_user_and_used_once(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    other = await new_app(["hello"])
    events = await pause(client, app)
    token = by_name(events, "human_input_required")["data"]["form_token"]

    unknown = await client.get("/v1/form/human_input/" + "x" * 43, headers=app.headers)
    assert unknown.status_code == 404
    assert (await client.get(f"/v1/form/human_input/{token}", headers=other.headers)).status_code == 404
    assert (await submit(client, other, token, "approve")).status_code == 404
    assert (await submit(client, app, token, "approve", user="mallory")).status_code == 404
    wrong_user = await client.get(
        f"/v1/form/human_input/{token}", params={"user": "mallory"}, headers=app.headers
    )
    assert wrong_user.status_code == 404
    assert (await submit(client, app, token, "maybe")).status_code == 400
    assert (await submit(client, app, token, "approve", nope="x")).status_code == 400
    no_key = await client.get(f"/v1/form/human_input/{token}")
    assert no_key.status_code == 401
    # the token is not stored, only its digest
    async with db.sessionmaker() as s:
        rows = list((await s.execute(select(HumanInputForm))).scalars())
    assert len(rows) == 1 and rows[0].token_hash != token and token not in rows[0].calls

    assert (await submit(client, app, token, "approve")).status_code == 200
    reused = await submit(client, app, token, "approve")
    assert reused.status_code == 412 and reused.json()["code"] == "human_input_form_submitted"
    assert (await client.get(f"/v1/form/human_input/{token}", headers=app.headers)).status_code == 412
    rest = await follow(client, app, form_task(events))
    assert rest[-1]["event"] == "message_end"


async def test_an_expired_form_is_refused_and_the_timeout_is_announced(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI, db: Database
) -> None:
    app = await new_app([CALC, "Nobody answered."], **APPROVAL)
    events = await pause(client, app)
    token = by_name(events, "human_input_required")["data"]["form_token"]
    runtime = server_app.state.loopwright
    await runtime.settled()
    runtime.clock = lambda: utcnow() + timedelta(seconds=601)
    expired = await submit(client, app, token, "approve")
    assert expired.status_code == 412 and expired.json()["code"] == "human_input_form_expired"
    assert await runtime.expire_approvals() == 1
    await runtime.settled()
    rest = await follow(client, app, form_task(events))
    assert rest[0]["event"] == "human_input_form_timeout"
    assert (
        rest[0]["data"]["expiration_time"]
        == by_name(events, "human_input_required")["data"]["expiration_time"]
    )
    assert rest[-1]["event"] == "message_end"


async def test_a_form_decided_another_way_is_closed(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    events = await pause(client, app)
    token = by_name(events, "human_input_required")["data"]["form_token"]
    task_id = form_task(events)
    body = {"user": "alice", "decisions": [{"call_id": "call_a", "action": "approve"}]}
    r = await client.post(f"/v1/chat-messages/{task_id}/approvals", json=body, headers=app.headers)
    rest = parse_sse(r.text, pings=False)
    assert rest[0]["event"] == "human_input_form_filled" and rest[-1]["event"] == "message_end"
    assert (await submit(client, app, token, "approve")).status_code == 412


async def test_continue_on_pause_follows_the_run_across_its_pauses(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    second = {"tool_calls": [["calculator", {"expression": "5*2"}, "call_b"]]}
    app = await new_app([CALC, second, "It is 10."], **APPROVAL)
    events = await pause(client, app)
    first = by_name(events, "human_input_required")["data"]["form_token"]
    task_id = form_task(events)
    assert (await submit(client, app, first, "approve")).status_code == 200
    upto_second = await follow(client, app, task_id)  # ends at the next pause
    assert upto_second[-1]["event"] == "workflow_paused"
    token = by_name(upto_second, "human_input_required")["data"]["form_token"]
    assert token != first

    async def watch() -> list[dict[str, Any]]:
        return await follow(client, app, task_id, include_state_snapshot=True, continue_on_pause=True)

    watching = asyncio.ensure_future(watch())
    assert (await submit(client, app, token, "approve")).status_code == 200
    whole = await watching
    names = [e["event"] for e in whole]
    assert names.count("workflow_paused") == 2 and names.count("human_input_form_filled") == 2
    assert names[-1] == "message_end"
    message = await client.get(
        "/v1/messages",
        params={"user": "alice", "conversation_id": events[0]["conversation_id"]},
        headers=app.headers,
    )
    assert message.json()["data"][0]["answer"].endswith("It is 10.")
