"""The admin API (/console/api) in process on a real SQLite file: the token, apps and their versions,
imports with warnings, keys, a model's test connection, knowledge bases and logs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.config import Settings
from loopwright.knowledge import KnowledgeBase
from loopwright.server.app import create_app
from loopwright.store.db import Database
from tests.sse import parse_sse

TOKEN = "console-secret-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
DSL = Path(__file__).parents[1] / "app" / "fixtures"


@pytest.fixture
def console_app(db: Database) -> FastAPI:
    return create_app(db, Settings(admin_token=TOKEN), ping_interval=0.05)


@pytest.fixture
async def admin(console_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=console_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=ADMIN) as c:
        yield c
    await console_app.state.loopwright.settled()


@pytest.fixture
async def knowledge(console_app: FastAPI, db: Database) -> AsyncIterator[KnowledgeBase]:
    kb = KnowledgeBase.open(db.url)
    console_app.state.loopwright.use_knowledge(kb)
    yield kb
    await kb.close()


def script(tmp_path: Path, replies: list[Any], name: str = "script.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"replies": replies, "features": ["tool-call", "stream-tool-call"]}))
    return f"scripted:{path}"


async def new_app(admin: httpx.AsyncClient, **config: Any) -> str:
    r = await admin.post("/console/api/apps", json={"name": "Helper", "config": config})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


# --- the token ------------------------------------------------------------------------------------------


async def test_console_is_off_without_an_admin_token(db: Database) -> None:
    app = create_app(db, Settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        for path in ("/console/api/apps", "/console/api/datasets"):
            assert (await c.get(path, headers=ADMIN)).status_code == 404


async def test_every_route_wants_the_token(admin: httpx.AsyncClient) -> None:
    checks = [
        ("GET", "/console/api/apps"),
        ("POST", "/console/api/apps"),
        ("GET", "/console/api/datasets"),
        ("POST", "/console/api/models/test"),
        ("GET", "/console/api/apps/x/conversations"),
        ("DELETE", "/console/api/keys/x"),
    ]
    for method, path in checks:
        none = await admin.request(method, path, headers={"Authorization": ""})
        assert none.status_code == 401, path
        wrong = await admin.request(method, path, headers={"Authorization": f"Bearer {TOKEN}x"})
        assert wrong.status_code == 401 and wrong.json()["message"] == "Admin token is invalid"
    # An app key is not an admin token either.
    app_id = await new_app(admin)
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    r = await admin.get("/console/api/apps", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 401


async def test_the_console_page_is_served_only_with_a_token(db: Database, console_app: FastAPI) -> None:
    import re

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=console_app), base_url="http://t") as c:
        page = await c.get("/console")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert (await c.get("/console/")).text == page.text
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert TOKEN not in page.text and "<script>" not in page.text
        (script,) = re.findall(r'src="(/static/assets/console-[^"]+\.js)"', page.text)
        assert (await c.get(script)).status_code == 200
    off = create_app(db, Settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=off), base_url="http://t") as c:
        assert (await c.get("/console")).status_code == 404


# --- apps and versions ----------------------------------------------------------------------------------


async def test_create_list_update_and_versions(admin: httpx.AsyncClient) -> None:
    app_id = await new_app(admin, model="local", instruction="Be brief.", tools=[{"name": "calculator"}])
    apps = (await admin.get("/console/api/apps")).json()["data"]
    assert [(a["id"], a["name"], a["tools"]) for a in apps] == [(app_id, "Helper", 1)]

    r = await admin.put(
        f"/console/api/apps/{app_id}",
        json={"name": "Helper 2", "config": {"model": "local", "instruction": "Be kind to {{name}}."}},
    )
    assert r.json() == {"id": app_id, "version": 2}
    renamed = await admin.patch(f"/console/api/apps/{app_id}", json={"description": "answers"})
    assert renamed.json()["version"] == 2  # no config: no new version
    versions = (await admin.get(f"/console/api/apps/{app_id}/versions")).json()["data"]
    assert [v["version"] for v in versions] == [2, 1]
    v1 = (await admin.get(f"/console/api/apps/{app_id}/versions/1")).json()
    assert v1["config"]["instruction"] == "Be brief." and v1["config"]["tools"] == [
        {"name": "calculator", "form_values": {}}
    ]
    v2 = (await admin.get(f"/console/api/apps/{app_id}/versions/2")).json()
    assert v2["config"]["instruction"] == "Be kind to {{name}}." and v2["config"]["tools"] == []
    assert (await admin.get(f"/console/api/apps/{app_id}/versions/9")).status_code == 404
    assert (await admin.get("/console/api/apps")).json()["data"][0]["name"] == "Helper 2"


async def test_bad_apps_are_refused_plainly(admin: httpx.AsyncClient) -> None:
    r = await admin.post("/console/api/apps", json={"name": "x", "config": {"strategy": "guess"}})
    assert r.status_code == 400 and r.json()["message"].startswith("invalid app config: strategy")
    r = await admin.post("/console/api/apps", json={"name": " ", "config": {}})
    assert r.status_code == 400 and "name" in r.json()["message"]
    r = await admin.post("/console/api/apps", json={"name": "x", "config": {"toolsets": [{"type": "ftp"}]}})
    assert r.status_code == 400 and "unknown toolset type" in r.json()["message"]
    r = await admin.put("/console/api/apps/nope", json={"config": {}})
    assert r.status_code == 404
    assert (await admin.get("/console/api/apps")).json()["data"] == []  # nothing was stored


async def test_import_a_dify_export_with_its_warnings(admin: httpx.AsyncClient) -> None:
    text = next(DSL.glob("*.yml")).read_text(encoding="utf-8")
    dry = (await admin.post("/console/api/apps/import", json={"text": text, "dry_run": True})).json()
    assert dry["id"] is None and dry["warnings"] and dry["config"]["model"]
    assert (await admin.get("/console/api/apps")).json()["data"] == []
    made = (await admin.post("/console/api/apps/import", json={"text": text, "name": "Imported"})).json()
    assert made["id"] and made["name"] == "Imported" and made["warnings"] == dry["warnings"]
    versions = (await admin.get(f"/console/api/apps/{made['id']}/versions/1")).json()
    assert versions["config"] == dry["config"]


async def test_import_a_dify_agent_export_with_its_warnings(admin: httpx.AsyncClient) -> None:
    export = Path(__file__).parents[1] / "fixtures" / "dify-dsl" / "dify-0.7.0-agent.yml"
    made = (await admin.post("/console/api/apps/import", json={"text": export.read_text("utf-8")})).json()
    assert made["id"] and made["name"] == "Release Scribe" and made["config"]["mode"] == "agent"
    assert any(w.startswith("CLI tool 'gh-release'") for w in made["warnings"])
    assert any(w.startswith("skill 'changelog-style'") for w in made["warnings"])


async def test_import_loopwright_yaml_and_refuse_garbage(admin: httpx.AsyncClient) -> None:
    text = "name: From YAML\nmodel: local\ninstruction: Hi {{who}}\n"
    r = await admin.post("/console/api/apps/import", json={"text": text})
    assert r.json()["name"] == "From YAML" and r.json()["warnings"] == []
    bad = await admin.post("/console/api/apps/import", json={"text": "[1, 2"})
    assert bad.status_code == 400 and bad.json()["message"].startswith("not valid YAML")


# --- keys -----------------------------------------------------------------------------------------------


async def test_key_made_in_the_console_chats_and_revoked_is_refused(
    admin: httpx.AsyncClient, tmp_path: Path
) -> None:
    app_id = await new_app(admin, model=script(tmp_path, ["Hello from the console app."]))
    made = await admin.post(f"/console/api/apps/{app_id}/keys")
    assert made.status_code == 201
    key = made.json()
    assert key["token"].startswith("app-") and key["masked"] == f"{key['token'][:6]}…{key['token'][-4:]}"
    listed = (await admin.get(f"/console/api/apps/{app_id}/keys")).json()["data"]
    assert [k["id"] for k in listed] == [key["id"]] and key["token"] not in json.dumps(listed)

    service = {"Authorization": f"Bearer {key['token']}"}
    r = await admin.post(
        "/v1/chat-messages",
        json={"query": "hi", "user": "u1", "inputs": {}, "response_mode": "streaming"},
        headers=service,
    )
    events = parse_sse(r.text)
    assert "".join(e.get("answer", "") for e in events if e.get("event") == "agent_message") == (
        "Hello from the console app."
    )
    assert (await admin.delete(f"/console/api/keys/{key['id']}")).status_code == 204
    again = await admin.post(
        "/v1/chat-messages", json={"query": "hi", "user": "u1", "inputs": {}}, headers=service
    )
    assert again.status_code == 401  # at once, not after the key cache's lifetime
    assert (await admin.delete(f"/console/api/keys/{key['id']}")).status_code == 404
    assert (await admin.post("/console/api/apps/nope/keys")).status_code == 404


async def test_new_version_serves_the_next_message_at_once(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    app_id = await new_app(admin, model=script(tmp_path, ["from version one"], "one.json"))
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    body = {"query": "hi", "user": "u", "inputs": {}, "response_mode": "blocking"}
    first = await admin.post("/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"})
    assert first.json()["answer"] == "from version one"
    await admin.put(
        f"/console/api/apps/{app_id}", json={"config": {"model": script(tmp_path, ["from two"], "two.json")}}
    )
    second = await admin.post("/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"})
    assert second.json()["answer"] == "from two"


# --- tools and models -----------------------------------------------------------------------------------


async def test_builtin_tools_are_listed(admin: httpx.AsyncClient) -> None:
    tools = {t["name"]: t for t in (await admin.get("/console/api/tools")).json()["data"]}
    assert "calculator" in tools and tools["calculator"]["description"]


async def test_model_test_connection(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    ok = (await admin.post("/console/api/models/test", json={"model": script(tmp_path, ["OK"])})).json()
    assert ok["ok"] is True and ok["reply"] == "OK" and ok["error"] is None and ok["latency"] >= 0
    bad = (await admin.post("/console/api/models/test", json={"model": "nonsense:x"})).json()
    assert bad["ok"] is False and "unknown model spec" in bad["error"]
    failing = script(tmp_path, [{"error": "quota exceeded"}], "err.json")
    err = (await admin.post("/console/api/models/test", json={"model": failing})).json()
    assert err["ok"] is False and "quota exceeded" in err["error"]


async def test_model_test_connection_times_out(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    path = tmp_path / "slow.json"
    path.write_text(json.dumps({"replies": ["late"], "delay": 5.0, "chunk_size": 1}))
    r = await admin.post("/console/api/models/test", json={"model": f"scripted:{path}", "timeout": 0.2})
    assert r.json()["ok"] is False and r.json()["error"] == "no answer within 0.2 s"


async def test_model_test_of_an_unreachable_server(db: Database) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(admin_token=TOKEN, openai_base_url=f"http://127.0.0.1:{port}/v1")
    app = create_app(db, settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.post(
            "/console/api/models/test", json={"model": "openai-compatible:m", "timeout": 10}, headers=ADMIN
        )
    assert r.json()["ok"] is False and r.json()["error"]


# --- knowledge ------------------------------------------------------------------------------------------


async def test_knowledge_base_upload_index_and_query(
    admin: httpx.AsyncClient, knowledge: KnowledgeBase
) -> None:
    r = await admin.post("/console/api/datasets", json={"name": "Handbook"})
    assert r.status_code == 201
    ds = r.json()
    text = b"# Leave\n\nEmployees get 25 vacation days per year.\n\n# Pets\n\nDogs are welcome on Fridays."
    up = await admin.post(
        f"/console/api/datasets/{ds['id']}/documents", files={"file": ("handbook.md", text, "text/markdown")}
    )
    assert up.status_code == 201, up.text
    doc = up.json()["document"]
    assert doc["indexing_status"] == "waiting" and doc["name"] == "handbook.md"
    # Indexing ran after the answer (the in-process client waits for background tasks).
    docs = (await admin.get(f"/console/api/datasets/{ds['id']}/documents")).json()
    assert docs["total"] == 1 and docs["data"][0]["indexing_status"] == "completed"
    assert docs["data"][0]["segment_count"] >= 1
    one = (await admin.get(f"/console/api/datasets/{ds['id']}/documents/{doc['id']}")).json()
    assert one["indexing_status"] == "completed"
    hits = (
        await admin.post(f"/console/api/datasets/{ds['id']}/query", json={"query": "vacation days"})
    ).json()
    assert hits["records"] and "25 vacation days" in hits["records"][0]["segment"]["content"]
    assert hits["records"][0]["segment"]["hit_count"] == 0  # trying a query counts no hits
    listed = (await admin.get("/console/api/datasets")).json()
    assert [d["name"] for d in listed["data"]] == ["Handbook"] and listed["data"][0]["document_count"] == 1


async def test_a_dataset_key_made_in_the_console_opens_the_knowledge_api(
    admin: httpx.AsyncClient, knowledge: KnowledgeBase
) -> None:
    made = await admin.post("/console/api/dataset-keys")
    assert made.status_code == 201 and made.json()["token"].startswith("dataset-")
    listed = await admin.get("/v1/datasets", headers={"Authorization": f"Bearer {made.json()['token']}"})
    assert listed.status_code == 200 and listed.json()["total"] == 0


async def test_knowledge_refusals(admin: httpx.AsyncClient, knowledge: KnowledgeBase) -> None:
    ds = (await admin.post("/console/api/datasets", json={"name": "KB"})).json()
    dup = await admin.post("/console/api/datasets", json={"name": "KB"})
    assert dup.status_code == 409
    exe = await admin.post(
        f"/console/api/datasets/{ds['id']}/documents",
        files={"file": ("x.exe", b"MZ", "application/x-msdownload")},
    )
    assert exe.status_code == 415
    none = await admin.post(f"/console/api/datasets/{ds['id']}/query", json={"query": " "})
    assert none.status_code == 400
    method = await admin.post(
        f"/console/api/datasets/{ds['id']}/query", json={"query": "a", "method": "magic"}
    )
    assert method.status_code == 400
    assert (await admin.get("/console/api/datasets/nope/documents")).status_code == 404
    assert (await admin.delete(f"/console/api/datasets/{ds['id']}")).status_code == 204
    assert (await admin.get(f"/console/api/datasets/{ds['id']}")).status_code == 404


# --- logs -----------------------------------------------------------------------------------------------


async def test_logs_show_conversations_messages_agent_logs_feedback_and_usage(
    admin: httpx.AsyncClient, tmp_path: Path
) -> None:
    replies: list[Any] = [
        {"tool_calls": [["calculator", {"expression": "6*7"}]]},
        "It is 42.",
        "Second answer.",
    ]
    app_id = await new_app(admin, model=script(tmp_path, replies), tools=[{"name": "calculator"}])
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    service = {"Authorization": f"Bearer {key}"}
    first = await admin.post(
        "/v1/chat-messages",
        json={"query": "6*7?", "user": "alice", "inputs": {}, "response_mode": "blocking"},
        headers=service,
    )
    conversation_id, message_id = first.json()["conversation_id"], first.json()["message_id"]
    await admin.post(
        "/v1/chat-messages",
        json={"query": "again", "user": "bob", "inputs": {}, "response_mode": "blocking"},
        headers=service,
    )
    await admin.post(
        f"/v1/messages/{message_id}/feedbacks",
        json={"rating": "like", "user": "alice", "content": "right"},
        headers=service,
    )

    page = (await admin.get(f"/console/api/apps/{app_id}/conversations")).json()
    assert page["total"] == 2 and {c["user"] for c in page["data"]} == {"alice", "bob"}
    assert all(c["end_user_id"] for c in page["data"])  # for the memory routes
    assert all(c["messages"] == 1 for c in page["data"])

    detail = (await admin.get(f"/console/api/apps/{app_id}/conversations/{conversation_id}")).json()
    (message,) = detail["messages"]
    assert detail["conversation"]["user"] == "alice" and message["answer"] == "It is 42."
    assert message["feedback"] == [
        {
            "rating": "like",
            "content": "right",
            "end_user_id": message["feedback"][0]["end_user_id"],
            "updated_at": message["feedback"][0]["updated_at"],
        }
    ]
    calls = [c for it in message["agent_log"]["iterations"] for c in it["tool_calls"]]
    assert [(c["tool_name"], c["tool_output"]) for c in calls] == [("calculator", "42")]
    assert message["agent_log"]["meta"]["executor"] == "alice"

    feedbacks = (await admin.get(f"/console/api/apps/{app_id}/feedbacks")).json()["data"]
    assert [(f["message_id"], f["rating"]) for f in feedbacks] == [(message_id, "like")]
    usage = (await admin.get(f"/console/api/apps/{app_id}/usage?days=7")).json()
    assert usage["messages"] == 2 and len(usage["days"]) == 1
    assert usage["days"][0]["conversations"] == 2 and usage["days"][0]["end_users"] == 2

    other = await new_app(admin)
    assert (await admin.get(f"/console/api/apps/{other}/conversations/{conversation_id}")).status_code == 404
    assert (await admin.get("/console/api/apps/nope/conversations")).status_code == 404
    assert (await admin.get("/console/api/apps/nope/usage")).status_code == 404


async def test_a_logged_conversation_gives_each_messages_versions(
    admin: httpx.AsyncClient, tmp_path: Path
) -> None:
    app_id = await new_app(admin, model=script(tmp_path, ["One.", "Two.", "Two again.", "Edited."]))
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    service = {"Authorization": f"Bearer {key}"}

    async def send(query: str, **where: Any) -> dict[str, Any]:
        body = {"query": query, "user": "alice", "inputs": {}, "response_mode": "blocking", **where}
        r = await admin.post("/v1/chat-messages", json=body, headers=service)
        assert r.status_code == 200, r.text
        answer: dict[str, Any] = r.json()
        return answer

    reply = await send("Hi")
    first, conversation = reply["message_id"], {"conversation_id": reply["conversation_id"]}
    second = (await send("More", **conversation))["message_id"]
    again = (await send("More", **conversation, parent_message_id=first))["message_id"]  # Regenerate
    edited = (await send("Hello", **conversation, parent_message_id=None))[
        "message_id"
    ]  # the first question, edited

    url = f"/console/api/apps/{app_id}/conversations/{conversation['conversation_id']}"
    messages = (await admin.get(url)).json()["messages"]
    assert [(m["id"], m["versions"]) for m in messages] == [
        (first, {"parent_id": None, "ids": [first, edited]}),
        (second, {"parent_id": first, "ids": [second, again]}),
        (again, {"parent_id": first, "ids": [second, again]}),
        (edited, {"parent_id": None, "ids": [first, edited]}),
    ]


# --- OpenAPI toolsets -----------------------------------------------------------------------------------

SPECS = Path(__file__).parents[1] / "tools" / "openapi" / "fixtures"


async def test_openapi_spec_is_checked_then_added_as_a_version(admin: httpx.AsyncClient) -> None:
    app_id = await new_app(admin)
    spec = str(SPECS / "swagger2.yaml")
    url = f"/console/api/apps/{app_id}/toolsets/openapi"
    check = (await admin.post(url, json={"source": {"spec": spec}, "check": True})).json()
    assert [o["name"] for o in check["operations"]] == ["getPet", "pets_post", "uploadPhoto"]
    assert check["version"] is None
    assert [
        v["version"] for v in (await admin.get(f"/console/api/apps/{app_id}/versions")).json()["data"]
    ] == [1]
    added = (await admin.post(url, json={"source": {"spec": spec, "include": ["getPet"]}})).json()
    assert [o["name"] for o in added["operations"]] == ["getPet"] and added["version"] == 2
    config = (await admin.get(f"/console/api/apps/{app_id}/versions/2")).json()["config"]
    (entry,) = config["toolsets"]
    assert (entry["type"], entry["spec"], entry["include"]) == ("openapi", spec, ["getPet"])


async def test_openapi_import_refusals(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    app_id = await new_app(admin)
    url = f"/console/api/apps/{app_id}/toolsets/openapi"
    missing = await admin.post(url, json={"source": {"spec": str(tmp_path / "none.yaml")}})
    assert missing.status_code == 400 and missing.json()["message"]
    no_key = await admin.post(url, json={"source": {"spec": "x.yaml", "auth_type": "api_key_header"}})
    assert no_key.status_code == 400 and "needs api_key" in no_key.json()["message"]
    private = await admin.post(url, json={"source": {"spec": "http://10.1.2.3/openapi.json"}})
    assert private.status_code == 400  # the network guard refuses a private address
    other = await admin.post(
        "/console/api/apps/nope/toolsets/openapi", json={"source": {"spec": str(SPECS / "swagger2.yaml")}}
    )
    assert other.status_code == 404


# --- on a real server -----------------------------------------------------------------------------------


async def test_on_uvicorn_upload_is_indexed_after_the_answer(
    console_app: FastAPI, knowledge: KnowledgeBase
) -> None:
    import asyncio

    from tests.live_server import serving

    async with serving(console_app) as url, httpx.AsyncClient(base_url=url, headers=ADMIN) as c:
        assert (await c.get("/console/api/apps", headers={"Authorization": "Bearer nope"})).status_code == 401
        ds = (await c.post("/console/api/datasets", json={"name": "Live"})).json()
        text = "\n\n".join(f"Paragraph {i}: the office opens at {i} o'clock." for i in range(50)).encode()
        up = await c.post(f"/console/api/datasets/{ds['id']}/documents", files={"file": ("hours.txt", text)})
        assert up.status_code == 201 and up.json()["document"]["indexing_status"] == "waiting"
        doc_id = up.json()["document"]["id"]
        status = ""
        for _ in range(200):  # the client polls, as the console page does
            status = (await c.get(f"/console/api/datasets/{ds['id']}/documents/{doc_id}")).json()[
                "indexing_status"
            ]
            if status in ("completed", "error"):
                break
            await asyncio.sleep(0.05)
        assert status == "completed"
        hits = (
            await c.post(f"/console/api/datasets/{ds['id']}/query", json={"query": "office opens"})
        ).json()
        assert hits["records"]


# --- the prompts a model received -----------------------------------------------------------------------


async def test_the_prompts_of_a_message_round_by_round(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    replies: list[Any] = [{"tool_calls": [["calculator", {"expression": "6*7"}]]}, "It is 42."]
    app_id = await new_app(
        admin,
        model=script(tmp_path, replies),
        instruction="Help {{name}} with sums.",
        user_input_form=[{"variable": "name", "label": "Name"}],
        tools=[{"name": "calculator"}],
    )
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    r = await admin.post(
        "/v1/chat-messages",
        json={"query": "6*7?", "user": "u", "inputs": {"name": "Ada"}, "response_mode": "blocking"},
        headers={"Authorization": f"Bearer {key}"},
    )
    message_id = r.json()["message_id"]
    calls = (await admin.get(f"/console/api/messages/{message_id}/prompts")).json()["calls"]
    assert len(calls) == 2
    first, second = calls
    assert first["messages"][0] == {"content": "Help Ada with sums.", "role": "system"}
    assert first["messages"][-1]["role"] == "user" and first["messages"][-1]["content"] == "6*7?"
    assert [t["name"] for t in first["tools"]] == ["calculator"]
    tool_results = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_results] == ["42"]
    missing = await admin.get("/console/api/messages/nope/prompts")
    assert missing.status_code == 404


async def test_the_prompts_of_a_react_message(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    blob = json.dumps({"action": "calculator", "action_input": {"expression": "2+2"}})
    final = json.dumps({"action": "Final Answer", "action_input": "4"})
    replies = [
        f"Thought: sum\nAction:\n```json\n{blob}\n```\n",
        f"Thought: done\nAction:\n```json\n{final}\n```\n",
    ]
    app_id = await new_app(
        admin, model=script(tmp_path, replies), strategy="react", tools=[{"name": "calculator"}]
    )
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    r = await admin.post(
        "/v1/chat-messages",
        json={"query": "2+2?", "user": "u", "inputs": {}, "response_mode": "blocking"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.json()["answer"] == "4"
    calls = (await admin.get(f"/console/api/messages/{r.json()['message_id']}/prompts")).json()["calls"]
    assert len(calls) == 2
    # A model that takes ReAct rounds as data still gets them so (the wrapper keeps stream_react).
    assert calls[0]["react_tools"] == ["calculator"]
    prompt = json.dumps(calls[0]["messages"])
    assert "calculator" in prompt and "2+2?" in prompt
    assert any("4" in m["content"] for m in calls[1]["messages"] if isinstance(m["content"], str))


async def test_show_export_and_delete_an_app(admin: httpx.AsyncClient, tmp_path: Path) -> None:
    app_id = await new_app(admin, model=script(tmp_path, ["hi"]), instruction="Be brief.")
    await admin.put(
        f"/console/api/apps/{app_id}", json={"description": "brief", "config": {"model": "local"}}
    )
    key = (await admin.post(f"/console/api/apps/{app_id}/keys")).json()["token"]
    shown = (await admin.get(f"/console/api/apps/{app_id}")).json()
    assert (shown["name"], shown["description"], shown["version"], shown["versions"], shown["keys"]) == (
        "Helper",
        "brief",
        2,
        2,
        1,
    )
    assert shown["config"]["model"] == "local"

    own = (await admin.get(f"/console/api/apps/{app_id}/export")).json()
    assert own["format"] == "loopwright" and own["warnings"] == []
    again = (await admin.post("/console/api/apps/import", json={"text": own["text"], "dry_run": True})).json()
    assert again["name"] == "Helper" and again["config"] == shown["config"]  # lossless
    dify = (await admin.get(f"/console/api/apps/{app_id}/export?format=dify")).json()
    assert "mode: agent-chat" in dify["text"] and dify["warnings"]  # the embedded model has no Dify twin
    assert (await admin.get(f"/console/api/apps/{app_id}/export?format=pdf")).status_code == 400

    assert (await admin.delete(f"/console/api/apps/{app_id}")).status_code == 204
    assert (await admin.get(f"/console/api/apps/{app_id}")).status_code == 404
    assert (await admin.delete(f"/console/api/apps/{app_id}")).status_code == 404
    refused = await admin.post(
        "/v1/chat-messages",
        json={"query": "hi", "user": "u", "inputs": {}},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert refused.status_code == 401  # its key went with it, at once
