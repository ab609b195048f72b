"""Handoffs between apps through the HTTP API: a message moves to the app it is handed to (Dify's
stream says who answers, the stored message records it, the next message starts there), hands back,
stays within its bound, and a handoff to an app that cannot take it is a tool error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from a2a.types import a2a_pb2 as a2a
from ag_ui.core import EventType
from fastapi import FastAPI
from sqlalchemy import select

from loopwright.agent.handoffs import tool_name
from loopwright.model.entities import ToolMessage, content_text
from loopwright.model.scripted import ScriptedModel
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAgentThought
from tests.live_server import serving
from tests.server.conftest import FC, NewApp, ServiceApp, parse_sse
from tests.server.test_ag_ui_wire import ag_ui, run_input

MISSING = "00000000-0000-0000-0000-000000000000"


async def chat(
    client: httpx.AsyncClient, app: ServiceApp, query: str, conversation_id: str = ""
) -> list[dict[str, Any]]:
    body = {
        "inputs": {},
        "user": "alice",
        "response_mode": "streaming",
        "query": query,
        "conversation_id": conversation_id,
    }
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def configure(db: Database, app_id: str, **changes: Any) -> dict[str, Any]:
    """A new configuration version of the app with ``changes``; returns it."""
    async with db.transaction() as s:
        latest = await repo.latest_config(s, app_id)
        assert latest is not None
        config = {**latest.config, **changes}
        await repo.add_config_version(s, app_id, config)
    return config


def handoff(target: str, reason: str) -> dict[str, Any]:
    return {"tool_calls": [[tool_name(target), {"reason": reason}]]}


def script(server_app: FastAPI, config: dict[str, Any], replies: list[Any]) -> ScriptedModel:
    """The app's scripted model, given its replies now (its configuration names the others' ids)."""
    path = Path(config["model"].removeprefix("scripted:"))
    path.write_text(json.dumps({"replies": replies, "features": FC}), encoding="utf-8")
    model = server_app.state.loopwright.model(config["model"])
    assert isinstance(model, ScriptedModel)
    return model


def texts(messages: list[Any]) -> list[str]:
    return [content_text(m.content) for m in messages]


async def thought_tokens(db: Database, message_id: str) -> list[int]:
    async with db.transaction() as s:
        rows = await s.scalars(
            select(MessageAgentThought)
            .where(MessageAgentThought.message_id == message_id)
            .order_by(MessageAgentThought.position)
        )
        return [r.tokens or 0 for r in rows]


async def stored(db: Database, message_id: str) -> Message:
    async with db.transaction() as s:
        message = await s.get(Message, message_id)
    assert message is not None
    return message


async def test_a_conversation_is_handed_over_and_back_stored_and_replayed(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    desk = await new_app([], name="front desk")
    billing = await new_app([], name="billing")
    desk_config = await configure(
        db,
        desk.id,
        instruction="You are the front desk.",
        handoffs=[{"app": billing.id, "description": "questions about invoices"}],
    )
    billing_config = await configure(
        db,
        billing.id,
        instruction="You answer billing questions.",
        handoffs=[{"app": desk.id, "description": "anything that is not billing"}],
    )
    desk_model = script(
        server_app, desk_config, [handoff(billing.id, "an invoice question"), "We open at 9."]
    )
    billing_model = script(
        server_app, billing_config, ["Your last invoice was 42 EUR.", handoff(desk.id, "not about billing")]
    )

    # 1: the front desk hands over; billing answers, with its own instruction and the message carried
    first = await chat(client, desk, "How much was my last invoice?")
    handed = [e for e in first if e["event"] == "agent_thought" and "answered_by" in e]
    assert [e["answered_by"] for e in handed] == [billing.id]
    assert handed[0]["thought"] == "billing answers from here on: an invoice question"
    end = first[-1]
    assert end["event"] == "message_end"
    answer = "".join(e["answer"] for e in first if e["event"] == "agent_message")
    assert answer == "Your last invoice was 42 EUR."
    prompt = billing_model.requests[0].messages
    assert texts(prompt)[0] == "You answer billing questions."
    assert any(isinstance(m, ToolMessage) and m.name == tool_name(billing.id) for m in prompt)
    assert texts(prompt)[-1] == "How much was my last invoice?"
    message = await stored(db, end["message_id"])
    assert (message.app_id, message.answered_by) == (desk.id, billing.id)
    # both apps' usage is the message's: the desk's handing round and billing's answer
    desk_round, handoff_row, billing_round = await thought_tokens(db, end["message_id"])
    assert desk_round > 0 and billing_round > 0 and handoff_row == 0
    spent = desk_round + billing_round
    assert message.message_tokens + message.answer_tokens == spent
    assert end["metadata"]["usage"]["total_tokens"] == spent

    # 2: the conversation stays with billing, which hands back; the desk sees the history replayed
    conversation = end["conversation_id"]
    second = await chat(client, desk, "And what are your opening hours?", conversation)
    assert [e["answered_by"] for e in second if "answered_by" in e] == [desk.id]
    assert second[-1]["event"] == "message_end"
    message = await stored(db, second[-1]["message_id"])
    assert message.answered_by == desk.id
    history = texts(billing_model.requests[1].messages)
    assert "How much was my last invoice?" in history and "Your last invoice was 42 EUR." in history
    desk_prompt = texts(desk_model.requests[1].messages)
    assert desk_prompt[0] == "You are the front desk."
    assert "Your last invoice was 42 EUR." in desk_prompt
    assert "".join(e["answer"] for e in second if e["event"] == "agent_message") == "We open at 9."

    # the history API says who answered each message
    r = await client.get(
        "/v1/messages", params={"user": "alice", "conversation_id": conversation}, headers=desk.headers
    )
    assert r.status_code == 200, r.text
    assert [m["answered_by"] for m in r.json()["data"]] == [billing.id, desk.id]


async def test_hand_overs_in_one_message_are_bounded(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    a = await new_app([], name="first")
    b = await new_app([], name="second")
    a_config = await configure(db, a.id, handoffs=[{"app": b.id}], max_handoffs=1)
    b_config = await configure(db, b.id, handoffs=[{"app": a.id}])
    a_model = script(server_app, a_config, [handoff(b.id, "yours")])
    script(server_app, b_config, [handoff(a.id, "no, yours"), "Fine, I will answer: 4."])

    events = await chat(client, a, "What is 2 + 2?")
    assert events[-1]["event"] == "message_end"
    refused = [e for e in events if e["event"] == "agent_thought" and e["tool"] == tool_name(a.id)]
    assert refused and "answer it yourself" in refused[-1]["observation"]
    message = await stored(db, events[-1]["message_id"])
    assert (message.status, message.answered_by, message.answer) == (
        "normal",
        b.id,
        "Fine, I will answer: 4.",
    )
    assert len(a_model.requests) == 1  # the loop never went back to the first app


async def test_a_handoff_to_a_missing_or_disabled_app_is_a_tool_error(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    off = await new_app(["never asked"], name="switched off")
    async with db.transaction() as s:
        await repo.set_app_access(s, off.id, status="disabled")
    app = await new_app([], name="desk")
    config = await configure(
        db, app.id, handoffs=[{"app": MISSING, "description": "gone"}, {"app": off.id, "description": "off"}]
    )
    script(
        server_app,
        config,
        [handoff(MISSING, "try it"), handoff(off.id, "try that"), "I will help you myself."],
    )
    events = await chat(client, app, "Help?")
    assert events[-1]["event"] == "message_end"
    observations = [e["observation"] for e in events if e["event"] == "agent_thought" and e["observation"]]
    assert any(f"{MISSING} is not available" in o for o in observations)
    assert any(f"{off.id} is not available" in o for o in observations)
    assert not any("answered_by" in e for e in events)
    message = await stored(db, events[-1]["message_id"])
    assert (message.status, message.answer, message.answered_by) == (
        "normal",
        "I will help you myself.",
        app.id,
    )


async def test_ag_ui_names_the_app_taking_over_in_a_step(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    desk = await new_app([], name="desk")
    expert = await new_app(["The expert's answer."], name="expert")
    config = await configure(db, desk.id, handoffs=[{"app": expert.id, "description": "hard ones"}])
    script(server_app, config, [handoff(expert.id, "hard")])
    async with serving(server_app) as url:
        status, events = await ag_ui(url, desk.key, run_input("thread-h", "A hard question"))
    assert status == 200
    steps = [e.step_name for e in events if e.type == EventType.STEP_STARTED]
    assert f"handoff to {expert.id}" in steps
    text = "".join(e.delta for e in events if e.type == EventType.TEXT_MESSAGE_CONTENT)
    assert text == "The expert's answer."
    async with db.transaction() as s:
        answered = await s.scalar(select(Message.answered_by).where(Message.app_id == desk.id))
    assert answered == expert.id


async def test_a_handoff_carries_only_the_history_its_entry_allows(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    desk = await new_app([], name="desk")
    billing = await new_app([], name="billing")
    entry = {"app": billing.id, "description": "invoices", "history": "last_n", "last_n": 2}
    config = await configure(db, desk.id, handoffs=[entry])
    script(server_app, config, ["First answer.", "Second answer.", handoff(billing.id, "invoice")])
    billing_model = script(server_app, await configure(db, billing.id), ["Billing here."])
    conversation = ""
    for query in ("First question", "Second question", "Third question"):
        events = await chat(client, desk, query, conversation)
        assert events[-1]["event"] == "message_end", events[-1]
        conversation = events[-1]["conversation_id"]
    seen = texts(billing_model.requests[0].messages)
    assert "Second question" in seen and "Second answer." in seen  # the newest two messages
    assert "First question" not in seen and "First answer." not in seen
    assert seen[-1] == "Third question"
    assert any(isinstance(m, ToolMessage) for m in billing_model.requests[0].messages)  # this message's work


async def test_a2a_says_who_answers_in_a_working_status(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    from tests.server.test_a2a_wire import a2a_client, answer_of, kind, user_message

    desk = await new_app([], name="desk")
    expert = await new_app([], name="expert")
    config = await configure(db, desk.id, handoffs=[{"app": expert.id, "description": "hard ones"}])
    script(server_app, config, [handoff(expert.id, "hard")])
    script(server_app, await configure(db, expert.id), ["The expert's answer."])
    async with serving(server_app) as url, a2a_client(url, desk) as client:
        replies = [r async for r in client.send_message(user_message("A hard question"))]
        read = await client.get_task(a2a.GetTaskRequest(id=replies[0].task.id))
    updates = [r.status_update for r in replies if kind(r) == "status_update"]
    said = [
        (u.status.message.parts[0].text, u.status.message.parts[1].data.struct_value["answered_by"])
        for u in updates
        if len(u.status.message.parts) == 2
    ]
    assert said == [("expert answers from here on: hard", expert.id)]
    assert answer_of(read) == "The expert's answer."


async def test_a_message_paused_for_approval_after_a_handoff_goes_on_in_the_app_it_went_to(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    from tests.server.test_approvals import decide

    desk = await new_app([], name="desk")
    maths = await new_app([], name="maths")
    config = await configure(db, desk.id, handoffs=[{"app": maths.id, "description": "sums"}])
    script(server_app, config, [handoff(maths.id, "a sum")])
    maths_config = await configure(db, maths.id, approval={"tools": ["calculator"], "timeout": 600})
    call = {"tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    script(server_app, maths_config, [call, "It is 5."])
    events = await chat(client, desk, "What is 2 + 3?")
    waiting = events[-3]  # then Dify 1.13's human_input_required and workflow_paused
    assert waiting["event"] == "tool_approval_required", waiting

    r = await decide(client, desk, waiting["task_id"], {"call_id": "call_a", "action": "approve"})
    assert r.status_code == 200, r.text
    rest = [e for e in parse_sse(r.text) if e["event"] != "ping"]
    assert rest[-1]["event"] == "message_end", rest[-1]
    assert "".join(e["answer"] for e in rest if e["event"] == "agent_message") == "It is 5."
    await db.writer.flush()
    message = await stored(db, waiting["message_id"])
    assert (message.status, message.answer, message.answered_by) == ("normal", "It is 5.", maths.id)


async def test_openai_tells_the_handoff_among_the_agents_tool_calls(
    server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    import openai

    desk = await new_app([], name="desk")
    expert = await new_app([], name="expert")
    config = await configure(db, desk.id, handoffs=[{"app": expert.id, "description": "hard ones"}])
    script(server_app, config, [handoff(expert.id, "hard")])
    script(server_app, await configure(db, expert.id), ["The expert's answer."])
    async with serving(server_app) as url:
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=desk.key, max_retries=0)
        reply = await client.chat.completions.create(
            model=desk.id,
            messages=[{"role": "user", "content": "A hard question"}],
            extra_body={"include_reasoning": True},
        )
        await client.close()
    message = reply.choices[0].message
    assert message.content == "The expert's answer."
    extra = message.model_extra or {}
    [call] = extra["agent_tool_calls"]
    assert call["function"]["name"] == tool_name(expert.id)
    assert json.loads(call["function"]["arguments"]) == {"reason": "hard"}
    assert call["output"] == f"Handed over to {expert.id}."
    assert tool_name(expert.id) in extra["reasoning_content"]


async def test_the_conversations_budget_counts_what_every_app_spent(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    from loopwright.store.models import UsageCounter

    desk = await new_app([], name="desk")
    expert = await new_app([], name="expert")
    config = await configure(
        db,
        desk.id,
        handoffs=[{"app": expert.id, "description": "hard ones"}],
        budget={"conversation_tokens": 100000},
    )
    script(server_app, config, [handoff(expert.id, "hard")])
    script(server_app, await configure(db, expert.id), ["The expert's answer."])
    events = await chat(client, desk, "A hard question")
    end = events[-1]
    assert end["event"] == "message_end"
    desk_round, _, expert_round = await thought_tokens(db, end["message_id"])
    await db.writer.flush()
    async with db.transaction() as s:
        counter = await s.get(UsageCounter, ("conversation", end["conversation_id"], ""))
    assert counter is not None and counter.tokens == desk_round + expert_round > desk_round
