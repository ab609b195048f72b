"""GET /v1/messages/{id}/agent-log: Dify's console agent log, built from the stored rows."""

from __future__ import annotations

import httpx

from tests.server.conftest import NewApp, action


async def ask(client: httpx.AsyncClient, headers: dict[str, str], user: str = "alice") -> dict:  # type: ignore[type-arg]
    body = {"query": "What is 2+3?", "user": user, "response_mode": "blocking", "inputs": {}}
    r = await client.post("/v1/chat-messages", json=body, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


async def test_a_function_calling_messages_log(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(
        [
            {"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]},
            {"text": "Again.", "tool_calls": [["calculator", {"expression": "2+"}]]},
            "It is 5.",
        ]
    )
    answer = await ask(client, app.headers)
    r = await client.get(
        f"/v1/messages/{answer['message_id']}/agent-log", params={"user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200, r.text
    log = r.json()
    meta = log["meta"]
    assert (meta["status"], meta["executor"], meta["agent_mode"], meta["iterations"]) == (
        "success",
        "alice",
        "function_call",
        3,
    )
    assert meta["total_tokens"] > 0 and meta["elapsed_time"] > 0
    assert meta["metrics"]["tool_calls"] == 2 and meta["metrics"]["tool_errors"] == 1
    first, second, last = log["iterations"]
    assert first["thought"] == "Let me compute." and first["tokens"] > 0
    [call] = first["tool_calls"]
    assert (call["tool_name"], call["status"], call["error"]) == ("calculator", "success", None)
    assert call["tool_input"] == {"expression": "2+3"} and call["tool_output"] == "5"
    assert call["tool_label"]["en_US"] and call["time_cost"] >= 0
    assert first["tool_raw"]["inputs"] and first["tool_raw"]["outputs"]
    [bad] = second["tool_calls"]
    assert bad["status"] == "error" and bad["error"]
    assert last["tool_calls"] == [] and last["thought"] == "It is 5."


async def test_a_react_messages_log_and_other_users(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(
        [action("calculator", {"expression": "6*7"}), action("Final Answer", "42")],
        features=[],
        strategy="react",
    )
    answer = await ask(client, app.headers)
    url = f"/v1/messages/{answer['message_id']}/agent-log"
    log = (await client.get(url, params={"user": "alice"}, headers=app.headers)).json()
    assert log["meta"]["agent_mode"] == "react"
    assert log["iterations"][0]["tool_calls"][0]["tool_output"] == "42"
    other = await client.get(url, params={"user": "mallory"}, headers=app.headers)
    assert other.status_code == 404 and other.json()["message"] == "Message Not Exists."
    missing = await client.get(url, headers=app.headers)
    assert missing.status_code == 400
