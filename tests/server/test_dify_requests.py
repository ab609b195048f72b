"""Request checks as Dify makes them, one table per endpoint: auth before the body, the 401 header,
CORS on /v1, ``inputs`` on every turn, the empty query, the empty ``conversation_id`` of a history."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.app.admin.suggestions import suggestion_prompt
from loopwright.app.config import AppConfig, names_conversations
from loopwright.app.run.naming import title_prompt
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store.db import Database
from loopwright.testing import ScriptedModel
from tests.live_server import serving
from tests.server.conftest import NewApp, ServiceApp
from tests.sse import aiter_sse, parse_sse

BAD_KEY = {"Authorization": "Bearer app-nope", "Content-Type": "application/json"}


def the_model(server_app: FastAPI) -> ScriptedModel:
    (model,) = server_app.state.loopwright._models.values()
    assert isinstance(model, ScriptedModel)
    return model


async def chat(client: httpx.AsyncClient, app: ServiceApp, **body: Any) -> httpx.Response:
    payload = {"query": "hi", "inputs": {}, "user": "alice", "response_mode": "blocking", **body}
    return await client.post("/v1/chat-messages", json=payload, headers=app.headers)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/chat-messages"),
        ("POST", "/v1/chat-messages/t/stop"),
        ("POST", "/v1/messages/m/feedbacks"),
        ("POST", "/v1/conversations/c/name"),
        ("DELETE", "/v1/conversations/c"),
    ],
)
async def test_a_bad_key_is_401_before_a_broken_body_is_read(
    client: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await client.request(method, path, content=b"{not json", headers=BAD_KEY)
    assert r.status_code == 401, r.text
    assert r.json() == {"code": "unauthorized", "message": "Access token is invalid", "status": 401}
    assert r.headers["www-authenticate"] == 'Bearer realm="api"'


async def test_every_401_carries_www_authenticate(client: httpx.AsyncClient) -> None:
    for headers in ({}, {"Authorization": "Basic x"}, {"Authorization": "Bearer dataset-nope"}):
        r = await client.get("/v1/parameters", headers=headers)
        assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="api"'
    r = await client.get("/v1/datasets", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="api"'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"query": "hi", "user": "alice"}, "inputs is required"),
        ({"query": "", "inputs": {}, "user": "alice"}, "query is required"),
        ({"query": "hi", "inputs": [], "user": "alice"}, "inputs"),
        ({"query": "hi", "inputs": {}, "user": "alice", "conversation_id": "x"}, "conversation_id"),
    ],
)
async def test_chat_body_checks(
    client: httpx.AsyncClient, new_app: NewApp, body: dict[str, Any], message: str
) -> None:
    app = await new_app(["never"])
    r = await client.post("/v1/chat-messages", json=body, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param", r.text
    assert message in r.json()["message"]


async def test_a_blank_query_is_run_as_dify_runs_it(client: httpx.AsyncClient, new_app: NewApp) -> None:
    """Dify refuses only the empty string."""
    app = await new_app(["Yes?"])
    assert (await chat(client, app, query=" ")).status_code == 200


async def test_cors_preflight_and_headers_on_v1(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    preflight = {
        "Origin": "https://page.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Content-Type",
    }
    r = await client.options("/v1/chat-messages", headers=preflight)
    assert r.status_code == 200
    assert r.headers["access-control-allow-origin"] == "*"
    allowed = {m.strip() for m in r.headers["access-control-allow-methods"].split(",")}
    assert allowed == {"GET", "PUT", "POST", "DELETE", "OPTIONS", "PATCH"}
    r = await chat(client, app)
    assert "access-control-allow-origin" not in r.headers  # no Origin: no CORS headers
    r = await client.get("/v1/parameters", headers={**app.headers, "Origin": "https://page.example"})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"
    r = await client.get("/v1/parameters", headers={"Origin": "https://page.example"})
    assert r.status_code == 401 and r.headers["access-control-allow-origin"] == "*"  # errors too


async def test_cors_origins_are_configurable(db: Database, new_app: NewApp) -> None:
    server = create_app(db, Settings(cors_allow_origins="https://ok.example"), ping_interval=0.05)
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for origin, allowed in (("https://ok.example", True), ("https://evil.example", False)):
            preflight = {"Origin": origin, "Access-Control-Request-Method": "GET"}
            r = await client.options("/v1/parameters", headers=preflight)
            assert (r.status_code == 200) is allowed
            assert (r.headers.get("access-control-allow-origin") == origin) is allowed


FORM = [
    {"variable": "city", "label": "City", "required": True},
    {"variable": "metric", "label": "Metric", "type": "checkbox"},
    {"variable": "days", "label": "Days", "type": "number"},
]


async def test_every_turn_runs_on_its_own_inputs(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    """Validated on each turn, used for that turn's instruction, stored on that message (Dify)."""
    app = await new_app(
        ["One.", "Two."], user_input_form=FORM, instruction="City: {{city}}; metric: {{metric}}"
    )
    r = await chat(client, app, inputs={"city": "Oslo", "metric": "yes", "days": "3"})
    assert r.status_code == 200, r.text
    conversation_id = r.json()["conversation_id"]
    r = await chat(client, app, inputs={}, conversation_id=conversation_id)
    assert (r.status_code, r.json()["message"]) == (400, "city is required in input form")
    r = await chat(client, app, inputs={"city": "Rome", "metric": "off"}, conversation_id=conversation_id)
    assert r.status_code == 200, r.text
    first, second = (request.messages[0].content for request in the_model(server_app).requests)
    assert "City: Oslo; metric: True" in str(first) and "City: Rome; metric: False" in str(second)
    r = await client.get(
        "/v1/messages", params={"conversation_id": conversation_id, "user": "alice"}, headers=app.headers
    )
    assert [m["inputs"] for m in r.json()["data"]] == [
        {"city": "Oslo", "metric": True, "days": 3},
        {"city": "Rome", "metric": False, "days": None},  # an optional input not sent: null, as Dify
    ]


async def test_an_empty_conversation_id_lists_no_messages(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello."])
    assert (await chat(client, app)).status_code == 200
    r = await client.get("/v1/messages", params={"conversation_id": "", "user": "alice"}, headers=app.headers)
    assert (r.status_code, r.json()) == (200, {"limit": 20, "has_more": False, "data": []})
    r = await client.get("/v1/messages", params={"user": "alice"}, headers=app.headers)
    assert r.status_code == 400 and r.json()["message"] == "conversation_id is required"


async def test_app_info_endpoints_the_sdks_call(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["never"])
    r = await client.get("/v1/")
    assert r.status_code == 200 and r.json()["welcome"] == "Dify OpenAPI" and r.json()["api_version"] == "v1"
    r = await client.get("/v1/meta", headers=app.headers)
    assert (r.status_code, r.json()) == (200, {"tool_icons": {}})
    r = await client.get("/v1/site", headers=app.headers)
    site = r.json()
    assert r.status_code == 200 and (site["title"], site["description"]) == ("calc", "calc app")
    assert set(site) >= {
        "chat_color_theme",
        "icon",
        "icon_url",
        "default_language",
        "use_icon_as_answer_icon",
    }
    assert (site["icon_type"], site["icon"], site["custom_disclaimer"]) == (None, None, "")
    for path in ("/v1/meta", "/v1/site"):
        assert (await client.get(path)).status_code == 401
    shown_as = {"icon": "🦉", "icon_background": "#FFEAD5", "footer": "Made by us."}
    shown = await new_app(["never"], site=shown_as)
    site = (await client.get("/v1/site", headers=shown.headers)).json()
    assert (site["icon_type"], site["icon"], site["icon_background"]) == ("emoji", "🦉", "#FFEAD5")
    assert site["custom_disclaimer"] == "Made by us."


UNAVAILABLE = {"code": "app_unavailable", "message": "App unavailable, please check your app configurations."}
NOT_WORKFLOW = {
    "code": "not_workflow_app",
    "message": "Please check if your app mode matches the right API route.",
}


@pytest.mark.parametrize(
    ("method", "path", "answer"),
    [
        ("POST", "/v1/completion-messages", UNAVAILABLE),
        ("POST", "/v1/completion-messages/t/stop", UNAVAILABLE),
        ("POST", "/v1/workflows/run", NOT_WORKFLOW),
        ("POST", "/v1/workflows/w/run", NOT_WORKFLOW),
        ("GET", "/v1/workflows/run/r", NOT_WORKFLOW),
        ("POST", "/v1/workflows/tasks/t/stop", NOT_WORKFLOW),
        ("GET", "/v1/workflows/logs", NOT_WORKFLOW),
    ],
)
async def test_routes_an_agent_chat_app_does_not_serve_answer_as_dify(
    client: httpx.AsyncClient, new_app: NewApp, method: str, path: str, answer: dict[str, str]
) -> None:
    app = await new_app(["never"])
    r = await client.request(method, path, json={"user": "alice"}, headers=app.headers)
    assert (r.status_code, r.json()) == (400, {**answer, "status": 400})
    assert (
        await client.request(method, path, headers={"Authorization": "Bearer app-nope"})
    ).status_code == 401


async def test_conversation_variables_and_suggested_questions(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["Hello."])
    r = await chat(client, app)
    conversation_id, message_id = r.json()["conversation_id"], r.json()["message_id"]
    params = {"user": "alice"}
    r = await client.get(f"/v1/conversations/{conversation_id}/variables", params=params, headers=app.headers)
    assert (r.status_code, r.json()) == (200, {"limit": 20, "has_more": False, "data": []})
    r = await client.get(
        f"/v1/conversations/{conversation_id}/variables", params={"user": "bob"}, headers=app.headers
    )
    assert r.status_code == 404 and r.json()["message"] == "Conversation Not Exists."
    r = await client.put(
        f"/v1/conversations/{conversation_id}/variables/v1",
        json={"value": 1, "user": "alice"},
        headers=app.headers,
    )
    assert (r.status_code, r.json()["message"]) == (404, "Conversation Variable Not Exists.")
    r = await client.get(f"/v1/messages/{message_id}/suggested", params=params, headers=app.headers)
    assert (r.status_code, r.json()) == (
        400,
        {"code": "bad_request", "message": "Suggested Questions Is Disabled.", "status": 400},
    )
    r = await client.get(f"/v1/messages/{message_id}/suggested", params={"user": "bob"}, headers=app.headers)
    assert (r.status_code, r.json()["message"]) == (404, "Message Not Exists.")
    r = await client.get(f"/v1/messages/{message_id}/suggested", headers=app.headers)
    assert (r.status_code, r.json()["message"]) == (400, "user is required")


async def test_conversations_sort_by(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["One.", "Two.", "Three."])
    a, b, c = [(await chat(client, app, query=q)).json()["conversation_id"] for q in ("a", "b", "c")]
    r = await client.post(
        f"/v1/conversations/{a}/name", json={"name": "A", "user": "alice"}, headers=app.headers
    )
    assert r.status_code == 200  # a is now the most recently updated

    async def ids(**params: Any) -> tuple[list[str], bool]:
        r = await client.get("/v1/conversations", params={"user": "alice", **params}, headers=app.headers)
        assert r.status_code == 200, r.text
        return [x["id"] for x in r.json()["data"]], r.json()["has_more"]

    assert (await ids(sort_by="created_at"))[0] == [a, b, c]
    assert (await ids(sort_by="-created_at"))[0] == [c, b, a]
    assert (await ids(sort_by="updated_at"))[0] == [b, c, a]
    assert (await ids())[0] == (await ids(sort_by="-updated_at"))[0] == [a, c, b]
    assert await ids(sort_by="created_at", limit=2) == ([a, b], True)
    assert await ids(sort_by="created_at", limit=2, last_id=b) == ([c], False)
    assert await ids(sort_by="-updated_at", limit=2, last_id=c) == ([b], False)
    r = await client.get(
        "/v1/conversations", params={"user": "alice", "sort_by": "name"}, headers=app.headers
    )
    assert r.status_code == 400 and r.json()["code"] == "invalid_param" and "sort_by" in r.json()["message"]


async def test_dify_strict_refuses_blocking_mode_as_dify(db: Database, new_app: NewApp) -> None:
    server = create_app(db, Settings(dify_strict=True), ping_interval=0.05)
    app = await new_app(["Streamed."])
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        for mode in ("blocking", None):
            r = await chat(client, app, response_mode=mode)
            assert (r.status_code, r.json()) == (
                400,
                {
                    "code": "invalid_param",
                    "message": "Agent Chat App does not support blocking mode",
                    "status": 400,
                },
            )
        r = await chat(client, app, response_mode="streaming")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    await server.state.loopwright.settled()


async def test_end_user_detail(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["never"])
    other = await new_app(["never"], name="other")
    files = {"file": ("a.png", b"\x89PNG\r\n\x1a\n", "image/png")}
    r = await client.post("/v1/files/upload", data={"user": "alice"}, files=files, headers=app.headers)
    alice = r.json()["created_by"]
    r = await client.get(f"/v1/end-users/{alice}", headers=app.headers)
    body = r.json()
    assert r.status_code == 200 and (body["id"], body["app_id"]) == (alice, app.id)
    assert (body["session_id"], body["external_user_id"], body["is_anonymous"]) == ("alice", "alice", False)
    assert body["type"] == "service_api" and body["created_at"] == body["updated_at"]
    not_found = {"code": "end_user_not_found", "message": "End user not found.", "status": 404}
    for key, user_id in ((other.headers, alice), (app.headers, str(uuid.uuid4())), (app.headers, "nope")):
        r = await client.get(f"/v1/end-users/{user_id}", headers=key)
        assert (r.status_code, r.json()) == (404, not_found)


async def test_app_feedbacks_lists_every_users_ratings(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["One.", "Two.", "Three."])
    other = await new_app(["Other."], name="other")
    rated = []
    for user, rating in (("alice", "like"), ("bob", "dislike")):
        sent = (await chat(client, app, user=user)).json()
        body = {"rating": rating, "user": user, "content": f"{user} says"}
        r = await client.post(f"/v1/messages/{sent['message_id']}/feedbacks", json=body, headers=app.headers)
        assert r.status_code == 200
        rated.append((sent["message_id"], sent["conversation_id"], rating, f"{user} says"))
    await chat(client, app)  # not rated
    sent = (await chat(client, other)).json()
    r = await client.post(
        f"/v1/messages/{sent['message_id']}/feedbacks",
        json={"rating": "like", "user": "alice"},
        headers=other.headers,
    )
    r = await client.get("/v1/app/feedbacks", headers=app.headers)
    data = r.json()["data"]
    assert r.status_code == 200 and len(data) == 2
    assert {(f["message_id"], f["conversation_id"], f["rating"], f["content"]) for f in data} == set(rated)
    assert all(
        f["app_id"] == app.id and f["from_source"] == "user" and f["from_account_id"] is None for f in data
    )
    r = await client.get("/v1/app/feedbacks", params={"page": 2, "limit": 1}, headers=app.headers)
    assert len(r.json()["data"]) == 1 and r.json()["data"][0]["id"] != data[0]["id"]
    r = await client.get("/v1/app/feedbacks", params={"limit": 102}, headers=app.headers)
    assert r.status_code == 400 and r.json()["code"] == "invalid_param"


async def test_parameters_report_what_the_app_has(client: httpx.AsyncClient, new_app: NewApp) -> None:
    form = [
        {"variable": "doc", "label": "Doc", "type": "file", "allowed_file_types": ["document"]},
        {"variable": "pics", "label": "Pics", "type": "file-list", "max_length": 3},
        {"variable": "meta", "label": "Meta", "type": "json_object"},
    ]
    plain = await new_app(["never"], user_input_form=form)
    knowing = await new_app(["never"], name="kb", toolsets=[{"type": "knowledge", "datasets": ["handbook"]}])
    p = (await client.get("/v1/parameters", headers=plain.headers)).json()
    assert p["retriever_resource"] == {"enabled": False}
    assert p["sensitive_word_avoidance"] == {"enabled": False, "type": "", "configs": []}
    doc, pics, meta = p["user_input_form"]
    assert (
        doc["file"]["allowed_file_types"] == ["document"] and doc["file"]["allowed_file_upload_methods"] == []
    )
    assert pics["file-list"]["max_length"] == 3 and meta == {
        "json_object": {"label": "Meta", "variable": "meta", "required": False, "default": None}
    }
    p = (await client.get("/v1/parameters", headers=knowing.headers)).json()
    assert p["retriever_resource"] == {"enabled": True}


async def test_introduction_is_filled_with_the_conversations_inputs(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    form = [{"variable": "name", "label": "Name"}]
    app = await new_app(["Hello."], user_input_form=form, opening_statement="Hi {{name}}, {{other}}!")
    assert (await chat(client, app, inputs={"name": "Ann"})).status_code == 200
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    assert r.json()["data"][0]["introduction"] == "Hi Ann, {{other}}!"  # unknown variables stay


async def test_max_active_requests_refuses_as_dify(new_app: NewApp, server_app: FastAPI) -> None:
    long = "Streaming slowly, chunk after chunk, so there is time to ask again. " * 20
    app = await new_app([long, "Next."], delay=0.2, max_active_requests=1)
    runtime = server_app.state.loopwright
    body = {"query": "hi", "inputs": {}, "user": "alice", "response_mode": "streaming"}
    async with (
        serving(server_app) as url,
        httpx.AsyncClient(base_url=url, headers=app.headers) as client,
    ):
        async with client.stream("POST", "/v1/chat-messages", json=body) as first:
            async for event in aiter_sse(first.aiter_lines(), pings=False):
                task_id = event["task_id"]
                break
            assert runtime.active.active(app.id) == 1  # the first run goes on (stopped below)
            r = await chat(client, app)
            assert r.status_code == 429, r.text
            assert r.json() == {
                "code": "too_many_requests",
                "message": "Too many requests. Please try again later. The current maximum concurrent "
                f"requests allowed for {app.id} is 1.",
                "status": 429,
            }
            stop = await client.post(f"/v1/chat-messages/{task_id}/stop", json={"user": "alice"})
            assert stop.status_code == 200
        await runtime.settled()
        assert runtime.active.active(app.id) == 0
        assert (await chat(client, app)).status_code == 200


TITLE = '{"Language Type": "English", "Your Reasoning": "a sum", "Your Output": "Adding two numbers"}'


async def test_the_model_names_a_new_conversation_after_its_answer(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(["It is 5.", TITLE, "Still 5."], generate_conversation_names=True)
    r = await chat(client, app, query="What is 2 + 3?")
    assert r.status_code == 200 and r.json()["answer"] == "It is 5."
    await server_app.state.loopwright.settled()
    naming_call = the_model(server_app).requests[-1].messages
    assert naming_call[0].content == title_prompt("What is 2 + 3?")
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    assert r.json()["data"][0]["name"] == "Adding two numbers"
    # auto_generate_name false: the first 20 characters of the query, no model call
    calls = len(the_model(server_app).requests)
    r = await chat(client, app, query="Another question here", auto_generate_name=False)
    await server_app.state.loopwright.settled()
    assert len(the_model(server_app).requests) == calls + 1
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    assert r.json()["data"][0]["name"] == "Another question her…"


async def test_rename_with_auto_generate_asks_the_apps_model(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(["It is 5.", TITLE])
    conversation_id = (await chat(client, app, query="What is 2 + 3?")).json()["conversation_id"]
    await server_app.state.loopwright.settled()
    r = await client.get("/v1/conversations", params={"user": "alice"}, headers=app.headers)
    assert r.json()["data"][0]["name"] == "What is 2 + 3?"  # the app does not name by itself
    body = {"auto_generate": True, "user": "alice"}
    r = await client.post(f"/v1/conversations/{conversation_id}/name", json=body, headers=app.headers)
    assert r.status_code == 200 and r.json()["name"] == "Adding two numbers"
    assert the_model(server_app).requests[-1].messages[0].content == title_prompt("What is 2 + 3?")


async def test_suggested_questions_from_the_apps_model(
    client: httpx.AsyncClient, new_app: NewApp, server_app: FastAPI
) -> None:
    app = await new_app(
        ["Hello.", "It is 5.", '["Why 5?", "And 2+4?"]'], suggested_questions_after_answer=True
    )
    first = (await chat(client, app, query="Hi")).json()
    second = (await chat(client, app, query="2+3?", conversation_id=first["conversation_id"])).json()
    p = (await client.get("/v1/parameters", headers=app.headers)).json()
    assert p["suggested_questions_after_answer"] == {"enabled": True}
    params = {"user": "alice"}
    r = await client.get(f"/v1/messages/{second['message_id']}/suggested", params=params, headers=app.headers)
    assert (r.status_code, r.json()) == (200, {"result": "success", "data": ["Why 5?", "And 2+4?"]})
    prompt = the_model(server_app).requests[-1].messages[0].content
    assert prompt == suggestion_prompt([("Hi", "Hello."), ("2+3?", "It is 5.")])
    r = await client.get(f"/v1/messages/{second['message_id']}/suggested", params=params, headers=app.headers)
    assert (r.status_code, r.json()["data"]) == (200, [])  # the model has nothing more to say: none, as Dify


async def test_ids_dify_reads_as_uuids_and_a_null_rating_with_nothing_to_remove(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(["Hello."])
    r = await chat(client, app)
    conversation_id, message_id = r.json()["conversation_id"], r.json()["message_id"]
    bad = [
        ("/v1/messages", {"conversation_id": "nope"}, "conversation_id is not a valid UUID"),
        (
            "/v1/messages",
            {"conversation_id": conversation_id, "first_id": "nope"},
            "first_id is not a valid UUID",
        ),
        ("/v1/conversations", {"last_id": "nope"}, "last_id is not a valid UUID"),
    ]
    for path, params, message in bad:
        r = await client.get(path, params={"user": "alice", **params}, headers=app.headers)
        assert (r.status_code, r.json()) == (
            400,
            {"code": "invalid_param", "message": message, "status": 400},
        )
    unknown = str(uuid.uuid4())
    r = await client.get(
        "/v1/messages", params={"user": "alice", "conversation_id": unknown}, headers=app.headers
    )
    assert r.status_code == 404  # a well-formed id that is not theirs: Dify's 404

    feedback = f"/v1/messages/{message_id}/feedbacks"
    r = await client.post(feedback, json={"rating": None, "user": "alice"}, headers=app.headers)
    assert (r.status_code, r.json()) == (
        400,
        {"code": "invalid_param", "message": "rating cannot be None when feedback not exists", "status": 400},
    )
    assert (
        await client.post(feedback, json={"rating": "like", "user": "alice"}, headers=app.headers)
    ).json() == {"result": "success"}
    r = await client.post(feedback, json={"rating": None, "user": "alice"}, headers=app.headers)
    assert r.json() == {"result": "success"}  # removes the existing one


async def test_the_saved_answer_is_every_rounds_streamed_text_as_dify_saves_it(
    client: httpx.AsyncClient, new_app: NewApp
) -> None:
    replies = [{"text": "Let me compute.", "tool_calls": [["calculator", {"expression": "2+3"}]]}, "It is 5."]
    app = await new_app(replies * 2)
    r = await chat(client, app, response_mode="streaming")
    events = parse_sse(r.text, pings=False)
    streamed = "".join(e.get("answer", "") for e in events if e["event"] == "agent_message")
    params = {"conversation_id": events[0]["conversation_id"], "user": "alice"}
    [message] = (await client.get("/v1/messages", params=params, headers=app.headers)).json()["data"]
    assert streamed == "Let me compute.It is 5."
    assert message["answer"] == "Let me compute.\nIt is 5."  # Dify's join: a newline after each round
    blocking = await chat(client, app)
    assert blocking.json()["answer"] == "Let me compute.\nIt is 5."


async def test_a_numeric_user_is_read_as_dify_reads_it(client: httpx.AsyncClient, new_app: NewApp) -> None:
    app = await new_app(["Hello.", "Again."])
    r = await chat(client, app, user=12345)
    assert r.status_code == 200, r.text
    conversation_id, message_id = r.json()["conversation_id"], r.json()["message_id"]
    # the same end user as the string "12345": their conversation, their feedback, their stop
    r = await client.get("/v1/conversations", params={"user": "12345"}, headers=app.headers)
    assert [c["id"] for c in r.json()["data"]] == [conversation_id]
    feedback = {"rating": "like", "user": 12345}
    r = await client.post(f"/v1/messages/{message_id}/feedbacks", json=feedback, headers=app.headers)
    assert r.json() == {"result": "success"}
    r = await client.post("/v1/chat-messages/any-task/stop", json={"user": 12345}, headers=app.headers)
    assert r.json() == {"result": "success"}
    r = await client.post(
        f"/v1/conversations/{conversation_id}/name", json={"name": "n", "user": 12345}, headers=app.headers
    )
    assert r.status_code == 200 and r.json()["name"] == "n"
    # an object is no one's user id
    r = await chat(client, app, user={"id": 1})
    assert (r.status_code, r.json()["code"]) == (400, "invalid_param")


def test_conversations_are_named_by_a_hosted_model_unless_the_app_says_otherwise() -> None:
    assert names_conversations(AppConfig(model="openai:gpt-4o-mini"))  # Dify's default
    assert names_conversations(AppConfig(model="openai-compatible:llama3"))
    assert not names_conversations(AppConfig(model="local"))  # the embedded model: spared the call
    assert not names_conversations(AppConfig(model="scripted:/x.json"))
    assert not names_conversations(AppConfig(model="openai:gpt-4o", generate_conversation_names=False))
    assert names_conversations(AppConfig(model="local", generate_conversation_names=True))
