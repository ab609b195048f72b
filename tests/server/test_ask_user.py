"""The ``ask_user`` tool on the server: a call pauses the run as an approval does, announced as Dify
1.13's ``human_input_required`` with a question form (input ``answer``, action ``submit``); the answer,
submitted through the form or the approvals endpoint, is the call's observation; a timeout answers that
nobody did."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI

from loopwright.store.models import utcnow
from loopwright.tools.builtin.ask_user import NOBODY_ANSWERED
from tests.server.conftest import NewApp, parse_sse
from tests.server.test_human_input import by_name, follow, form_task, pause, submit

ASK = {"text": "I need to know.", "tool_calls": [["ask_user", {"question": "Which city?"}, "call_q"]]}
UNITS = {"question": "Metric or imperial?", "options": ["metric", "imperial"]}
ASK_OPTIONS = {"tool_calls": [["ask_user", UNITS, "call_q"]]}
CONFIG: dict[str, Any] = {"tools": [{"name": "ask_user"}], "approval": {"timeout": 600}}


def observation(events: list[dict[str, Any]]) -> str:
    observed = [e for e in events if e["event"] == "agent_thought" and e["observation"]]
    return str(json.loads(observed[0]["observation"])["ask_user"])


async def test_a_question_pauses_the_run_and_the_form_answer_is_the_observation(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([ASK, "Lyon it is."], **CONFIG)
    events = await pause(client, app)
    names = [e["event"] for e in events]
    assert names[-3:] == ["tool_approval_required", "human_input_required", "workflow_paused"]
    form = by_name(events, "human_input_required")["data"]
    assert form["node_title"] == "Question"
    assert form["form_content"] == "Which city?\n\n{{#$output.answer#}}"
    assert form["inputs"] == [{"type": "paragraph", "output_variable_name": "answer", "default": None}]
    assert [a["id"] for a in form["actions"]] == ["submit"]
    assert form["resolved_default_values"] == {}
    definition = (await client.get(f"/v1/form/human_input/{form['form_token']}", headers=app.headers)).json()
    assert definition["inputs"] == form["inputs"] and definition["user_actions"] == form["actions"]

    token = form["form_token"]
    assert (await submit(client, app, token, "approve", answer="Lyon")).status_code == 400
    assert (await submit(client, app, token, "submit", answer="  ")).status_code == 400
    assert (await submit(client, app, token, "submit", reason="x")).status_code == 400
    r = await submit(client, app, token, "submit", answer="Lyon")  # the form stayed open
    assert r.status_code == 200 and r.json() == {}
    rest = await follow(client, app, form_task(events))
    filled = rest[0]
    assert filled["event"] == "human_input_form_filled"
    assert filled["data"]["action_id"] == "submit" and filled["data"]["action_text"] == "Submit"
    assert filled["data"]["rendered_content"] == "Which city?\n\nLyon"
    assert observation(rest) == "Lyon"
    assert rest[-1]["event"] == "message_end"
    assert "Lyon it is." in "".join(e["answer"] for e in rest if e["event"] == "agent_message")


async def test_options_make_a_select_and_only_an_option_is_taken(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app([ASK_OPTIONS, "Metric, then."], **CONFIG)
    events = await pause(client, app)
    form = by_name(events, "human_input_required")["data"]
    select = {"type": "select", "output_variable_name": "answer", "default": None}
    select["options"] = UNITS["options"]
    assert form["inputs"] == [select]
    assert (await submit(client, app, form["form_token"], "submit", answer="cubits")).status_code == 400
    assert (await submit(client, app, form["form_token"], "submit", answer="metric")).status_code == 200
    rest = await follow(client, app, form_task(events))
    assert observation(rest) == "metric"


async def test_the_approvals_endpoint_answers_too(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([ASK, "Paris it is."], **CONFIG)
    events = await pause(client, app)
    task_id = form_task(events)
    url = f"/v1/chat-messages/{task_id}/approvals"

    async def decide(decision: dict[str, Any]) -> httpx.Response:
        body = {"user": "alice", "decisions": [{"call_id": "call_q", **decision}]}
        return await client.post(url, json=body, headers=app.headers)

    assert (await decide({"action": "guess"})).status_code == 400
    r = await decide({"action": "answer", "answer": "Paris"})
    assert r.status_code == 200, r.text
    rest = parse_sse(r.text, pings=False)
    assert rest[0]["event"] == "human_input_form_filled" and rest[0]["data"]["action_id"] == "submit"
    assert observation(rest) == "Paris" and rest[-1]["event"] == "message_end"


async def test_only_a_question_takes_an_answer(client: httpx.AsyncClient, new_app: NewApp) -> None:
    calc = {"tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app([calc, "It is 5."], approval={"tools": ["calculator"], "timeout": 600})
    events = await pause(client, app)
    body = {"user": "alice", "decisions": [{"call_id": "call_a", "action": "answer", "answer": "5"}]}
    r = await client.post(f"/v1/chat-messages/{form_task(events)}/approvals", json=body, headers=app.headers)
    assert r.status_code == 400 and "not a question" in r.json()["message"]


async def test_a_question_nobody_answers_in_time_says_so(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app([ASK, "I will assume Paris."], **CONFIG)
    events = await pause(client, app)
    runtime = server_app.state.loopwright
    await runtime.settled()
    runtime.clock = lambda: utcnow() + timedelta(seconds=601)
    assert await runtime.expire_approvals() == 1
    await runtime.settled()
    rest = await follow(client, app, form_task(events))
    assert rest[0]["event"] == "human_input_form_timeout" and rest[0]["data"]["node_title"] == "Question"
    assert observation(rest) == NOBODY_ANSWERED
    assert rest[-1]["event"] == "message_end"
