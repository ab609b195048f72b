"""Approvals over the Service API (in process): a stream that pauses before a tool needing approval,
the message saved waiting, and POST /v1/chat-messages/{task_id}/approvals resuming it."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.store.db import Database
from loopwright.store.models import Message, PendingApproval, utcnow
from tests.server.conftest import NewApp, ServiceApp, action, parse_sse

CALC = {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
APPROVAL = {"approval": {"tools": ["calculator"], "timeout": 600}}


def calc(thought: dict[str, Any]) -> str:
    """The calculator's observation in a thought (Dify's encoding: a JSON object by tool name)."""
    return str(json.loads(thought["observation"])["calculator"])


async def post(client: httpx.AsyncClient, app: ServiceApp, path: str, **body: Any) -> httpx.Response:
    return await client.post(path, json={"user": "alice", **body}, headers=app.headers)


async def pause(client: httpx.AsyncClient, app: ServiceApp) -> list[dict[str, Any]]:
    r = await post(
        client, app, "/v1/chat-messages", query="What is 2 + 3?", inputs={}, response_mode="streaming"
    )
    assert r.status_code == 200, r.text
    return parse_sse(r.text, pings=False)


async def decide(
    client: httpx.AsyncClient, app: ServiceApp, task_id: str, *decisions: dict[str, Any], user: str = "alice"
) -> httpx.Response:
    path = f"/v1/chat-messages/{task_id}/approvals"
    body = {"user": user, "decisions": list(decisions), "response_mode": "streaming"}
    return await client.post(path, json=body, headers=app.headers)


async def stored(db: Database, message_id: str) -> Message:
    await db.writer.flush()
    async with db.sessionmaker() as s:
        message = await s.get(Message, message_id)
        assert message is not None
        return message


async def test_the_stream_pauses_and_an_approval_resumes_it(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    events = await pause(client, app)
    names = [e["event"] for e in events]
    # Dify 1.13's announcement of the pause follows loopwright's own (app.run.human_input)
    assert names[-3:] == ["tool_approval_required", "human_input_required", "workflow_paused"]
    assert "message_end" not in names
    waiting = events[-3]
    assert waiting["tool_calls"] == [
        {"id": "call_a", "tool": "calculator", "arguments": {"expression": "2+3"}}
    ]
    thought = events[-4]
    assert thought["event"] == "agent_thought" and thought["tool"] == "calculator"
    assert thought["observation"] == "" and thought["id"] == waiting["thought_id"]
    task_id, message_id = waiting["task_id"], waiting["message_id"]
    message = await stored(db, message_id)
    assert message.status == "waiting" and message.answer == "" and message.worker_id is None

    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})
    assert r.status_code == 200, r.text
    rest = parse_sse(r.text, pings=False)
    assert {e["task_id"] for e in rest if "task_id" in e} == {task_id}
    assert {e["message_id"] for e in rest} == {message_id}
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert observed[0]["id"] == thought["id"] and calc(observed[0]) == "5"
    assert rest[-1]["event"] == "message_end"
    message = await stored(db, message_id)
    assert message.status == "normal" and message.answer == "Let me compute.\nIt is 5."

    # the history shows one message with the tool round and the answer
    r = await client.get(
        "/v1/messages",
        params={"user": "alice", "conversation_id": waiting["conversation_id"]},
        headers=app.headers,
    )
    (listed,) = r.json()["data"]
    assert listed["answer"] == "Let me compute.\nIt is 5." and calc(listed["agent_thoughts"][0]) == "5"

    again = await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})
    assert again.status_code == 404  # decided once; nothing waits any more


async def test_a_denial_is_the_tool_observation(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([CALC, "I was not allowed."], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "deny", "reason": "not now"})
    rest = parse_sse(r.text, pings=False)
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert calc(observed[0]) == "The user denied this tool call: not now"
    assert rest[-1]["event"] == "message_end"


async def test_edited_arguments_run_instead(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([CALC, "It is 10."], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    edit = {"call_id": "call_a", "action": "approve", "arguments": {"expression": "4+6"}}
    rest = parse_sse((await decide(client, app, task_id, edit)).text, pings=False)
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert calc(observed[0]) == "10"


async def test_only_the_same_user_may_decide_and_bad_decisions_are_refused(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([CALC, "ok"], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"}, user="mallory")
    assert r.status_code == 404
    r = await decide(client, app, task_id, {"call_id": "nope", "action": "approve"})
    assert r.status_code == 400 and "nope" in r.json()["message"]
    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "maybe"})
    assert r.status_code == 400
    # nothing was lost: the right decision still resumes it
    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})
    assert parse_sse(r.text, pings=False)[-1]["event"] == "message_end"


async def test_the_timeout_denies(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, server_app: FastAPI
) -> None:
    app = await new_app([CALC, "Nobody answered."], **APPROVAL)
    waiting = (await pause(client, app))[-1]
    runtime = server_app.state.loopwright
    await runtime.settled()
    assert await runtime.expire_approvals() == 0  # not yet
    runtime.clock = lambda: utcnow() + timedelta(seconds=601)
    assert await runtime.expire_approvals() == 1
    await runtime.settled()
    message = await stored(db, waiting["message_id"])
    assert message.status == "normal" and message.answer == "Let me compute.\nNobody answered."
    async with db.sessionmaker() as s:
        assert await s.get(PendingApproval, waiting["task_id"]) is None
    r = await decide(client, app, waiting["task_id"], {"call_id": "call_a", "action": "approve"})
    assert r.status_code == 404


async def test_a_late_decision_counts_as_denied(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app([CALC, "Too late."], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    server_app.state.loopwright.clock = lambda: utcnow() + timedelta(seconds=601)
    rest = parse_sse(
        (await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})).text, pings=False
    )
    observed = [e for e in rest if e["event"] == "agent_thought" and e["observation"]]
    assert "timed out" in calc(observed[0])


async def test_a_react_app_pauses_too(client: httpx.AsyncClient, new_app: NewApp) -> None:
    replies = [action("calculator", {"expression": "2+3"}), action("Final Answer", "5")]
    app = await new_app(replies, features=[], **APPROVAL)
    events = await pause(client, app)
    waiting = events[-3]  # before Dify 1.13's human_input_required and workflow_paused
    assert waiting["event"] == "tool_approval_required"
    call_id = waiting["tool_calls"][0]["id"]
    decided = await decide(client, app, waiting["task_id"], {"call_id": call_id, "action": "approve"})
    rest = parse_sse(decided.text, pings=False)
    assert rest[-1]["event"] == "message_end"
    assert [e["answer"] for e in rest if e["event"] == "agent_message"][-1] == "5"


async def test_blocking_mode_answers_with_what_the_run_waits_for(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    body = {"query": "What is 2 + 3?", "inputs": {}, "response_mode": "blocking"}
    r = await post(client, app, "/v1/chat-messages", **body)
    assert r.status_code == 200, r.text
    paused = r.json()
    assert paused["event"] == "tool_approval_required" and paused["answer"] == ""
    assert paused["tool_calls"][0]["id"] == "call_a"
    path = f"/v1/chat-messages/{paused['task_id']}/approvals"
    decision = {"decisions": [{"call_id": "call_a", "action": "approve"}], "response_mode": "blocking"}
    done = (await post(client, app, path, **decision)).json()
    assert done["event"] == "message" and done["answer"] == "Let me compute.\nIt is 5."
    assert done["message_id"] == paused["message_id"]


async def test_two_decisions_at_once_resume_the_run_once(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([CALC, "It is 5."], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    yes = {"call_id": "call_a", "action": "approve"}
    no = {"call_id": "call_a", "action": "deny", "reason": "no"}
    first, second = await asyncio.gather(decide(client, app, task_id, yes), decide(client, app, task_id, no))
    assert sorted([first.status_code, second.status_code]) == [200, 404]
    winner = first if first.status_code == 200 else second
    assert parse_sse(winner.text, pings=False)[-1]["event"] == "message_end"


async def test_a_message_may_pause_twice(client: httpx.AsyncClient, new_app: NewApp, db: Database) -> None:
    again = {"tool_calls": [["calculator", {"expression": "5*2"}, "call_b"]]}
    app = await new_app([CALC, again, "It is 10."], **APPROVAL)
    task_id = (await pause(client, app))[-1]["task_id"]
    second = parse_sse(
        (await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})).text, pings=False
    )
    waiting = second[-3]
    assert waiting["event"] == "tool_approval_required" and waiting["task_id"] == task_id
    assert waiting["tool_calls"][0]["id"] == "call_b"
    positions = {e["id"]: e["position"] for e in second if e["event"] == "agent_thought"}
    assert sorted(positions.values()) == [1, 2]  # the first round's row goes on, the second is new
    rest = parse_sse(
        (await decide(client, app, task_id, {"call_id": "call_b", "action": "approve"})).text, pings=False
    )
    assert rest[-1]["event"] == "message_end"
    message = await stored(db, waiting["message_id"])
    assert (
        message.status == "normal" and message.answer == "Let me compute.\n\nIt is 10."
    )  # a round with no text: an empty line, as Dify
    r = await client.get(
        "/v1/messages",
        params={"user": "alice", "conversation_id": waiting["conversation_id"]},
        headers=app.headers,
    )
    thoughts = r.json()["data"][0]["agent_thoughts"]
    assert [calc(t) for t in thoughts[:2]] == ["5", "10"] and len(thoughts) == 3


async def test_a_paused_message_can_be_stopped(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, server_app: FastAPI
) -> None:
    app = await new_app([CALC, "never"], **APPROVAL)
    waiting = (await pause(client, app))[-1]
    task_id = waiting["task_id"]
    runtime = server_app.state.loopwright
    assert not await runtime.stop_paused(task_id, app.id, "mallory")  # only its own user stops it
    r = await post(client, app, f"/v1/chat-messages/{task_id}/stop")
    assert r.json() == {"result": "success"}
    await asyncio.gather(*runtime._stopping)
    message = await stored(db, waiting["message_id"])
    assert message.status == "stopped"
    r = await decide(client, app, task_id, {"call_id": "call_a", "action": "approve"})
    assert r.status_code == 404
