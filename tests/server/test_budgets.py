"""Budgets over the Service API: a run stopped by a cap ends with ``budget_exceeded`` and keeps its
answer so far; the next request of a capped conversation, end user or app is refused with 429 before
anything runs; the counters are in the database (a new server on it keeps them)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.store.models import Message, UsageCounter
from tests.server.conftest import NewApp, ServiceApp, parse_sse


def step(i: int) -> dict[str, Any]:
    """A tool round of 100 prompt + 10 completion tokens."""
    call = ["calculator", {"expression": f"{i}+1"}]
    usage = {"prompt_tokens": 100, "completion_tokens": 10}
    return {"text": f"Step {i}.", "tool_calls": [call], "usage": usage}


def answer(text: str = "Done.") -> dict[str, Any]:
    return {"text": text, "usage": {"prompt_tokens": 100, "completion_tokens": 10}}


async def chat(client: httpx.AsyncClient, app: ServiceApp, **body: Any) -> httpx.Response:
    body = {"inputs": {}, "user": "alice", "response_mode": "streaming", "query": "go", **body}
    return await client.post("/v1/chat-messages", json=body, headers=app.headers)


def events_of(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def test_a_run_stopped_by_its_cap_keeps_its_answer_so_far(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([step(0), step(1), step(2), answer()], budget={"run_tokens": 300})
    events = events_of(await chat(client, app))
    last = events[-1]
    assert last["event"] == "error" and last["code"] == "budget_exceeded" and last["status"] == 429
    assert "budget.run_tokens" in last["message"]
    observed = [e for e in events if e["event"] == "agent_thought" and e["observation"]]
    assert len(observed) == 2  # two rounds ran; the third call would have crossed 300 tokens
    await db.writer.flush()
    async with db.sessionmaker() as s:
        message = (await s.execute(select(Message))).scalar_one()
    assert message.status == "error" and "budget.run_tokens" in (message.error or "")
    assert message.answer == "Step 1."  # the answer so far is kept


async def test_model_and_tool_call_caps(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([step(0), step(1), answer()], budget={"run_model_calls": 1})
    last = events_of(await chat(client, app))[-1]
    assert last["code"] == "budget_exceeded" and "budget.run_model_calls" in last["message"]
    app = await new_app([step(0), step(1), answer()], budget={"run_tool_calls": 1})
    events = events_of(await chat(client, app))
    assert events[-1]["code"] == "budget_exceeded" and "budget.run_tool_calls" in events[-1]["message"]
    assert sum(1 for e in events if e["event"] == "agent_thought" and e["observation"]) == 1


async def test_a_capped_conversation_is_refused_with_429(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app([answer("one"), answer("two"), answer("three")], budget={"conversation_tokens": 200})
    first = events_of(await chat(client, app))
    assert first[-1]["event"] == "message_end"
    conversation = first[-1]["conversation_id"]
    # 110 spent, and the next prompt is estimated short: the second run goes (220 spent)
    second = events_of(await chat(client, app, conversation_id=conversation))
    assert second[-1]["event"] == "message_end"
    refused = await chat(client, app, conversation_id=conversation)
    assert refused.status_code == 429 and refused.json()["code"] == "budget_exceeded"
    assert "budget.conversation_tokens" in refused.json()["message"]
    # a new conversation of the same user is not capped by this one's
    third = events_of(await chat(client, app))
    assert third[-1]["event"] == "message_end"


async def test_a_capped_end_user_is_refused_until_the_next_day(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app([answer(), answer(), answer()], budget={"end_user_daily_tokens": 100})
    assert events_of(await chat(client, app))[-1]["event"] == "message_end"  # 110: over the cap now
    refused = await chat(client, app)
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "budget_exceeded" and body["status"] == 429
    assert "budget.end_user_daily_tokens" in body["message"]
    # another end user of the app is not capped by alice's spending
    assert events_of(await chat(client, app, user="bob"))[-1]["event"] == "message_end"
    # the next UTC day, alice may ask again
    runtime = server_app.state.loopwright
    today = runtime.clock()
    runtime.clock = lambda: today.replace(year=today.year + 1)
    assert events_of(await chat(client, app))[-1]["event"] == "message_end"


async def test_the_daily_counter_survives_a_restart(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([answer(), answer()], budget={"app_daily_cost": "0.5", "app_daily_tokens": 50})
    assert events_of(await chat(client, app))[-1]["event"] == "message_end"
    async with db.sessionmaker() as s:
        counters = (await s.execute(select(UsageCounter))).scalars().all()
    assert [(c.scope, c.scope_id, c.tokens, c.runs) for c in counters] == [("app", app.id, 110, 1)]
    # A new server on the same database: the app's spending today is still there.
    transport = httpx.ASGITransport(app=create_app(db, Settings()))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as fresh:
        refused = await chat(fresh, app, user="carol")
    assert refused.status_code == 429 and refused.json()["code"] == "budget_exceeded"
    assert "budget.app_daily_tokens" in refused.json()["message"]


async def test_an_app_without_wider_caps_counts_nothing(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    app = await new_app([answer()], budget={"run_tokens": 1000})
    assert events_of(await chat(client, app))[-1]["event"] == "message_end"
    async with db.sessionmaker() as s:
        assert (await s.execute(select(UsageCounter))).first() is None


@pytest.mark.parametrize("bad", [{"run_tokens": -1}, {"app_daily_cost": "-0.5"}, {"nope": 1}])
def test_a_bad_budget_is_refused(bad: dict[str, Any]) -> None:
    from loopwright.app.config import AppConfig, ConfigImportError, load_app_yaml

    with pytest.raises(ConfigImportError):
        load_app_yaml(f"name: x\nbudget: {bad}\n")
    assert AppConfig().budget.run_tokens is None


async def test_a_message_that_pauses_for_approval_is_counted_once(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    from tests.server.test_approvals import decide, pause

    call = {**step(0), "tool_calls": [["calculator", {"expression": "2+3"}, "call_a"]]}
    app = await new_app(
        [call, answer()], approval={"tools": ["calculator"]}, budget={"app_daily_tokens": 10_000}
    )
    paused = await pause(client, app)
    assert paused[-3]["event"] == "tool_approval_required"  # then Dify 1.13's pause events
    resumed = await decide(client, app, paused[-1]["task_id"], {"call_id": "call_a", "action": "approve"})
    assert resumed.status_code == 200 and parse_sse(resumed.text, pings=False)[-1]["event"] == "message_end"
    await db.writer.flush()
    async with db.sessionmaker() as s:
        counters = (await s.execute(select(UsageCounter))).scalars().all()
    assert [(c.scope, c.tokens, c.runs) for c in counters] == [("app", 220, 1)]  # one message, both calls


async def test_the_admin_api_shows_what_the_app_and_its_end_users_spent(
    new_app: NewApp, db: Database
) -> None:
    token = "budget-admin-token"
    server = create_app(db, Settings(admin_token=token), ping_interval=0.05)
    replies = [answer(), answer(), answer()]
    app = await new_app(replies, budget={"end_user_daily_tokens": 1000, "app_daily_tokens": 5000})
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        for user in ("alice", "alice", "bob"):
            assert events_of(await chat(http, app, user=user))[-1]["event"] == "message_end"
        admin = {"Authorization": f"Bearer {token}"}
        seen = (await http.get(f"/console/api/apps/{app.id}/budget-usage", headers=admin)).json()
        bad = await http.get(f"/console/api/apps/{app.id}/budget-usage?day=soon", headers=admin)
        await server.state.loopwright.settled()
    assert (seen["app"]["tokens"], seen["app"]["runs"]) == (330, 3)
    assert [(u["user"], u["tokens"], u["runs"]) for u in seen["end_users"]] == [
        ("alice", 220, 2),
        ("bob", 110, 1),
    ]
    assert bad.status_code == 400
