"""Apps with toolsets through the HTTP API: another app as a tool (usage, depth limit), tool files
delivered as signed ``message_file`` URLs, and bad toolset configuration."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from loopwright import tool
from loopwright.app.config import AppConfig, ConfigImportError, load_app_yaml
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAgentThought
from loopwright.tools import BlobMessage, TextMessage
from loopwright.tools.builtin import builtin_tools
from tests.server.conftest import NewApp, parse_sse


async def chat(client: httpx.AsyncClient, key: str, query: str, user: str = "alice") -> list[dict[str, Any]]:
    body = {"inputs": {}, "user": user, "response_mode": "streaming", "query": query}
    r = await client.post("/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def add_toolsets(db: Database, app_id: str, toolsets: list[dict[str, Any]]) -> None:
    async with db.transaction() as s:
        latest = await repo.latest_config(s, app_id)
        assert latest is not None
        await repo.add_config_version(s, app_id, {**latest.config, "toolsets": toolsets})


async def test_an_app_answers_with_another_app_and_counts_its_usage(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    inner = await new_app(["Paris is the capital of France."], name="geography")
    outer = await new_app(
        [
            {"tool_calls": [["geo", {"inputs": {}, "query": "What is the capital of France?"}]]},
            "It is Paris.",
        ],
        name="assistant",
    )
    await add_toolsets(db, outer.id, [{"type": "app", "app_id": inner.id, "name": "geo"}])
    events = await chat(client, outer.key, "Capital of France?")
    done = [e for e in events if e["event"] == "agent_thought" and e["observation"]]
    assert done and done[0]["tool"] == "geo"
    assert "Paris is the capital of France." in done[0]["observation"]
    assert "llm_usage" not in done[0]["observation"]  # internal, not for the model
    end = events[-1]
    assert end["event"] == "message_end"
    async with db.transaction() as s:
        inner_msg = await s.scalar(select(Message).where(Message.app_id == inner.id))
        outer_msg = await s.get(Message, end["message_id"])
        rounds = list(
            await s.scalars(
                select(MessageAgentThought).where(MessageAgentThought.message_id == end["message_id"])
            )
        )
    assert inner_msg is not None and outer_msg is not None
    assert (
        inner_msg.answer == "Paris is the capital of France."
        and inner_msg.query == "What is the capital of France?"
    )
    inner_tokens = inner_msg.message_tokens + inner_msg.answer_tokens
    own_tokens = sum(r.tokens or 0 for r in rounds)
    assert inner_tokens > 0
    assert outer_msg.message_tokens + outer_msg.answer_tokens == own_tokens + inner_tokens
    assert end["metadata"]["usage"]["total_tokens"] == own_tokens + inner_tokens


async def test_apps_calling_apps_stop_at_the_depth_limit(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    call = {"tool_calls": [["echo", {"inputs": {}, "query": "again"}]]}
    # One script for every depth (one model per spec): six calls down, then six answers up.
    app = await new_app([call] * 6 + [f"answer {i}" for i in range(6)], name="echo")
    await add_toolsets(db, app.id, [{"type": "app", "app_id": app.id, "name": "echo"}])
    events = await chat(client, app.key, "Go deep.")
    assert events[-1]["event"] == "message_end"
    async with db.transaction() as s:
        messages = list(await s.scalars(select(Message).where(Message.app_id == app.id)))
        observations = [t.observation or "" for t in await s.scalars(select(MessageAgentThought))]
    assert len(messages) == 6  # depths 0 to 5; the call from depth 5 was refused
    refused = [o for o in observations if "the limit is 5" in o]
    assert len(refused) == 1 and "went 5 deep" in refused[0]


@pytest.fixture
async def files_client(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path))  # the tool files and their key go there

    @tool
    async def report(title: str) -> AsyncIterator[TextMessage | BlobMessage]:
        """Write a report as a PDF."""
        yield TextMessage("Here it is.")
        yield BlobMessage(b"%PDF-1.4 " + title.encode(), "application/pdf", "report.pdf")

    server = create_app(db, Settings(), ping_interval=0.05, tools=[*builtin_tools(), report])
    transport = httpx.ASGITransport(app=server)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def test_a_file_a_tool_makes_reaches_the_client_as_a_signed_url(
    files_client: httpx.AsyncClient, new_app: NewApp
) -> None:
    app = await new_app(
        [{"tool_calls": [["report", {"title": "Q3"}]]}, "Your report is ready."],
        tools=[{"name": "report"}],
    )
    events = await chat(files_client, app.key, "Write the Q3 report.")
    files = [e for e in events if e["event"] == "message_file"]
    assert len(files) == 1  # a binary file is attached, not only images
    message_file = files[0]
    assert message_file["type"] == "document" and message_file["belongs_to"] == "assistant"
    url = message_file["url"]
    assert url.startswith("/files/tools/") and ".pdf?" in url and "sign=" in url
    thought = next(e for e in events if e["event"] == "agent_thought" and e["observation"])
    assert thought["message_files"] == [message_file["id"]]
    observation = json.loads(thought["observation"])["report"]
    assert observation.startswith('Here it is.\nThe file "report.pdf" (application/pdf, 11 bytes)')
    assert url.split("?")[0] in observation
    r = await files_client.get(url)
    assert r.status_code == 200 and r.content == b"%PDF-1.4 Q3"
    assert r.headers["content-type"].startswith("application/pdf")
    tampered = url.replace("timestamp=", "timestamp=1")
    assert (await files_client.get(tampered)).status_code == 403
    # The message lists the file, with a URL signed again when it is read.
    listed = await files_client.get(
        "/v1/messages",
        params={"conversation_id": events[0]["conversation_id"], "user": "alice"},
        headers=app.headers,
    )
    (kept,) = listed.json()["data"][0]["message_files"]
    assert (kept["id"], kept["belongs_to"], kept["transfer_method"], kept["type"]) == (
        message_file["id"],
        "assistant",
        "tool_file",
        "document",
    )
    assert kept["url"].split("?")[0] == url.split("?")[0] and "sign=" in kept["url"]
    assert (await files_client.get(kept["url"])).content == b"%PDF-1.4 Q3"
    tool_file_id = url.split("?")[0].rsplit("/", 1)[-1].removesuffix(".pdf")
    assert (kept["filename"], kept["mime_type"], kept["size"]) == ("report.pdf", "application/pdf", 11)
    assert kept["upload_file_id"] == tool_file_id  # as Dify: the tool file's id


def test_a_toolset_of_an_unknown_type_or_a_bad_source_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError, match="unknown toolset type 'ftp'"):
        AppConfig(toolsets=[{"type": "ftp"}])
    with pytest.raises(ValueError, match="needs a command"):
        AppConfig(toolsets=[{"type": "mcp", "transport": "stdio"}])
    with pytest.raises(ConfigImportError, match="toolsets"):
        load_app_yaml("name: x\ntoolsets:\n  - type: app\n")
    config = AppConfig(toolsets=[{"type": "mcp", "command": "srv", "env": {"TOKEN": "s3cret"}}])
    assert config.toolsets[0]["env"] == {"TOKEN": "s3cret"}  # kept as written, not masked


async def test_a_toolset_that_cannot_be_built_is_left_out_and_the_app_still_answers(
    client: httpx.AsyncClient, new_app: NewApp, db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    app = await new_app(["Hello without it."])
    await add_toolsets(db, app.id, [{"type": "app", "app_id": "00000000-0000-0000-0000-000000000000"}])
    events = await chat(client, app.key, "Hi")
    assert events[-1]["event"] == "message_end"
    assert "toolset app is left out" in caplog.text and "does not exist" in caplog.text


async def test_a_retriever_tool_ends_the_message_with_its_citations(
    client: httpx.AsyncClient, server_app: FastAPI, new_app: NewApp, db: Database
) -> None:
    kb = server_app.state.loopwright.knowledge()
    handbook = await kb.create_dataset("handbook", description="The staff handbook.")
    await kb.add_text(handbook, "leave.md", "Staff get 25 days of paid leave each year.")
    await kb.add_text(handbook, "hours.md", "The office opens at 8 and closes at 18.")
    tool_name = f"dataset_{handbook.id.replace('-', '_')}"
    app = await new_app(
        [
            {
                "tool_calls": [
                    [tool_name, {"inputs": {}, "query": "paid leave days"}],
                    [tool_name, {"inputs": {}, "query": "leave per year"}],
                ]
            },
            "25 days.",
        ],
        features=["tool-call", "multi-tool-call", "stream-tool-call"],
    )
    await add_toolsets(db, app.id, [{"type": "knowledge", "datasets": ["handbook"]}])
    events = await chat(client, app.key, "How much leave do I get?")
    done = [e for e in events if e["event"] == "agent_thought" and e["observation"]][-1]
    observation = json.loads(done["observation"])
    assert "25 days of paid leave" in observation[tool_name]
    assert "retriever_resources" not in done["observation"]  # internal: for message_end only
    resources = events[-1]["metadata"]["retriever_resources"]
    # Both calls found the leave document; it is cited once, numbered from 1 (Dify's rule).
    assert [r["position"] for r in resources] == list(range(1, len(resources) + 1))
    leave = [r for r in resources if r["document_name"] == "leave.md"]
    assert len(leave) == 1 and leave[0]["dataset_name"] == "handbook"
    assert "25 days" in leave[0]["content"] and leave[0]["score"] > 0
    async with db.transaction() as s:
        stored = await s.get(Message, events[-1]["message_id"])
    assert (
        stored is not None and json.loads(stored.message_metadata or "{}")["retriever_resources"] == resources
    )
    # the history gives them back in Dify's history shape, the streamed fields it keeps unchanged
    r = await client.get(
        "/v1/messages",
        params={"conversation_id": events[-1]["conversation_id"], "user": "alice"},
        headers={"Authorization": f"Bearer {app.key}"},
    )
    saved = r.json()["data"][0]["retriever_resources"]
    assert resources and [{k: s[k] for k in s if k in r} for s, r in zip(saved, resources, strict=True)] == [
        {k: r[k] for k in r if k in s} for s, r in zip(saved, resources, strict=True)
    ]
    assert len({s["id"] for s in saved}) == len(saved)
    # message_end's resources carry every field of Dify's RetrievalSourceMetadata (null when unset)
    assert {"page", "title", "files", "summary", "doc_metadata"} <= set(resources[0])


async def test_an_app_called_as_a_tool_streams_its_rounds_into_the_callers_stream(
    client: httpx.AsyncClient, new_app: NewApp, db: Database
) -> None:
    inner = await new_app(
        [{"tool_calls": [["calculator", {"expression": "6*7"}]]}, "It is 42."], name="maths"
    )
    outer = await new_app([{"tool_calls": [["maths", {"query": "6 times 7?"}]]}, "42."], name="assistant")
    await add_toolsets(db, outer.id, [{"type": "app", "app_id": inner.id, "name": "maths"}])
    events = await chat(client, outer.key, "6*7?")
    shown = [
        json.loads(e["observation"])["maths"]
        for e in events
        if e["event"] == "agent_thought" and e["tool"] == "maths" and e["observation"]
    ]
    # the inner app's rounds, live, as the call's observation — then its answer replaces them
    assert "calling calculator" in shown and any(s.startswith("calculator: ") and "42" in s for s in shown)
    assert shown[-1] == "It is 42."
    assert shown.index("calling calculator") < len(shown) - 1
    # the progress lines are marked as such (ours, beside Dify's fields); the result is not
    marks = [e.get("tool_progress") for e in events if e["event"] == "agent_thought" and e["tool"] == "maths"]
    live = [e for e in events if e["event"] == "agent_thought" and e.get("tool_progress") == ["maths"]]
    assert any(json.loads(e["observation"])["maths"] == "calling calculator" for e in live)
    assert marks[-1] is None
    assert events[-1]["event"] == "message_end"
