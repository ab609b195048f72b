"""AG-UI over an app, against a real server: every event parses with ``ag-ui-protocol``'s models, a
tool round is a step with its call and result, a thread is a conversation of the Service API (with its
thoughts), and bad input is a 4xx ``RUN_ERROR``, never a 500."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pydantic
from ag_ui.core import Event, EventType, RunAgentInput, UserMessage
from fastapi import FastAPI

from tests.live_server import serving
from tests.server.conftest import NewApp

EVENTS: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(Event)

TOOL_ROUND = [
    {"tool_calls": [["calculator", {"expression": "17 * 23"}]]},
    "17 times 23 is 391.",
]


def run_input(thread_id: str, text: str, **extra: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` as AG-UI's clients send it (built and dumped with the protocol's models)."""
    asked = RunAgentInput(
        thread_id=thread_id,
        run_id=str(uuid.uuid4()),
        messages=[UserMessage(id=str(uuid.uuid4()), content=text)],
        state={},
        tools=[],
        context=[],
        **extra,
    )
    body: dict[str, Any] = asked.model_dump(mode="json", by_alias=True)
    return body


async def ag_ui(url: str, key: str, body: dict[str, Any]) -> tuple[int, list[Any]]:
    """POST /ag-ui; the status and every event, each parsed with ``ag-ui-protocol``'s models."""
    headers = {"Authorization": f"Bearer {key}", "Accept": "text/event-stream"}
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        response = await client.post("/ag-ui", json=body, headers=headers)
    if response.headers["content-type"].startswith("application/json"):
        return response.status_code, [response.json()]
    events = []
    for line in response.text.split("\n"):
        if line.startswith("data: "):
            events.append(EVENTS.validate_python(json.loads(line[len("data: ") :])))
        else:
            assert not line or line.startswith(":"), line  # blank lines between frames, comments (pings)
    return response.status_code, events


async def test_a_tool_round_streams_as_a_step_with_its_call_and_result_then_the_answer(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        status, events = await ag_ui(url, app.key, run_input("thread-1", "What is 17 * 23?"))
    assert status == 200
    kinds = [e.type for e in events]
    assert kinds[0] == EventType.RUN_STARTED and kinds[-1] == EventType.RUN_FINISHED
    assert kinds.count(EventType.STEP_STARTED) == kinds.count(EventType.STEP_FINISHED) == 2
    start = next(e for e in events if e.type == EventType.TOOL_CALL_START)
    args = "".join(e.delta for e in events if e.type == EventType.TOOL_CALL_ARGS)
    result = next(e for e in events if e.type == EventType.TOOL_CALL_RESULT)
    assert start.tool_call_name == "calculator" and json.loads(args) == {"expression": "17 * 23"}
    assert result.tool_call_id == start.tool_call_id and "391" in result.content
    order = [kinds.index(k) for k in (EventType.TOOL_CALL_START, EventType.TOOL_CALL_END)]
    assert order == sorted(order) and kinds.index(EventType.TOOL_CALL_RESULT) > order[1]
    answer = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert answer.endswith("17 times 23 is 391.")
    opened = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_START]
    closed = [e.message_id for e in events if e.type == EventType.TEXT_MESSAGE_END]
    assert opened == closed and len(set(opened)) == len(opened)
    finished = events[-1]
    assert finished.thread_id == "thread-1" and finished.run_id == events[0].run_id
    assert finished.result["conversationId"] and finished.usage[0].total_tokens > 0


async def test_a_snapshot_asked_for_holds_the_question_the_tool_call_and_the_answer(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(TOOL_ROUND)
    async with serving(server_app) as url:
        body = run_input("thread-2", "What is 17 * 23?", forwarded_props={"messagesSnapshot": True})
        _, events = await ag_ui(url, app.key, body)
    snapshots = [e for e in events if e.type == EventType.MESSAGES_SNAPSHOT]
    assert len(snapshots) == 1 and events[-2] is snapshots[0]
    roles = [m.role for m in snapshots[0].messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    call = snapshots[0].messages[1].tool_calls[0]
    assert call.function.name == "calculator" and snapshots[0].messages[2].tool_call_id == call.id
    assert snapshots[0].messages[3].content == "17 times 23 is 391."


async def test_a_thread_is_one_conversation_of_the_service_api_with_its_thoughts(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app([*TOOL_ROUND, "You asked about 17 * 23."])
    thread = str(uuid.uuid4())
    async with serving(server_app) as url:
        _, first = await ag_ui(
            url, app.key, run_input(thread, "What is 17 * 23?", forwarded_props={"user": "ada"})
        )
        _, second = await ag_ui(
            url, app.key, run_input(thread, "What did I ask?", forwarded_props={"user": "ada"})
        )
        headers = {"Authorization": f"Bearer {app.key}"}
        async with httpx.AsyncClient(base_url=url) as client:
            conversations = (
                await client.get("/v1/conversations", params={"user": "ada"}, headers=headers)
            ).json()
            params = {"user": "ada", "conversation_id": thread}
            messages = (await client.get("/v1/messages", params=params, headers=headers)).json()
    assert not any(e.type == EventType.MESSAGES_SNAPSHOT for e in first)  # not asked for
    assert first[-1].result["conversationId"] == second[-1].result["conversationId"] == thread
    assert [c["id"] for c in conversations["data"]] == [thread]
    assert [m["query"] for m in messages["data"]] == ["What is 17 * 23?", "What did I ask?"]
    assert messages["data"][0]["agent_thoughts"][0]["tool"] == "calculator"
    assert messages["data"][1]["answer"] == "You asked about 17 * 23."


async def test_bad_input_is_a_4xx_run_error_and_a_bad_key_is_refused(
    server_app: FastAPI, new_app: NewApp
) -> None:
    app = await new_app(
        ["hi", "hi"], user_input_form=[{"variable": "city", "type": "text-input", "required": True}]
    )
    async with serving(server_app) as url:
        not_an_input = await ag_ui(url, app.key, {"threadId": "t", "messages": "no"})
        no_question = await ag_ui(url, app.key, {**run_input("t", "x"), "messages": []})
        missing_input = await ag_ui(url, app.key, run_input("t", "hi"))
        bad_props = await ag_ui(url, app.key, run_input("t", "hi", forwarded_props={"inputs": "city"}))
        wrong_key = await ag_ui(url, "app-not-a-key", run_input("t", "hi"))
        theirs = str(uuid.uuid4())
        await ag_ui(
            url, app.key, run_input(theirs, "hi", forwarded_props={"user": "ada", "inputs": {"city": "Oslo"}})
        )
        not_yours = await ag_ui(
            url, app.key, run_input(theirs, "hi", forwarded_props={"inputs": {"city": "Oslo"}})
        )
        no_thread = await ag_ui(url, app.key, run_input(" ", "hi"))
        answered = await ag_ui(
            url, app.key, run_input("t", "hi", forwarded_props={"inputs": {"city": "Oslo"}})
        )
    for status, (error,) in (not_an_input, no_question, missing_input, bad_props):
        assert status == 400 and EVENTS.validate_python(error).type == EventType.RUN_ERROR
    assert "runId is required" in not_an_input[1][0]["message"]
    assert "user message" in no_question[1][0]["message"]
    assert "city is required" in missing_input[1][0]["message"]
    assert wrong_key[0] == 401
    assert not_yours[0] == 404 and not_yours[1][0]["type"] == "RUN_ERROR"  # another user's thread
    assert no_thread[0] == 400 and "threadId" in no_thread[1][0]["message"]
    assert answered[0] == 200 and answered[1][-1].type == EventType.RUN_FINISHED


async def test_a_failing_run_ends_with_run_error(server_app: FastAPI, new_app: NewApp) -> None:
    app = await new_app([{"error": "the model is down"}])
    async with serving(server_app) as url:
        status, events = await ag_ui(url, app.key, run_input("t", "hi"))
    assert status == 200 and events[0].type == EventType.RUN_STARTED
    assert events[-1].type == EventType.RUN_ERROR and events[-1].message


async def test_a_run_waiting_for_approval_finishes_with_an_interrupt_per_call(
    server_app: FastAPI, new_app: NewApp
) -> None:
    calc = {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([calc, "It is 5."], approval={"tools": ["calculator"], "timeout": 600})
    async with serving(server_app) as url:
        status, events = await ag_ui(url, app.key, run_input("t", "What is 2 + 3?"))
    assert status == 200 and events[-1].type == EventType.RUN_FINISHED
    start = next(e for e in events if e.type == EventType.TOOL_CALL_START)
    assert not any(e.type == EventType.TOOL_CALL_RESULT for e in events)  # the call has not run
    (interrupt,) = events[-1].outcome.interrupts
    assert interrupt.id == "call_a" and interrupt.tool_call_id == start.tool_call_id
    assert events[-1].result["taskId"] in interrupt.message


async def test_a_browser_page_may_call_it(client: httpx.AsyncClient) -> None:
    preflight = {
        "Origin": "https://page.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type",
    }
    r = await client.options("/ag-ui", headers=preflight)
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
