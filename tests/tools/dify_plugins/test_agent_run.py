"""Plugin tools in an agent run through the HTTP API (scripted model): images the chart and qrcode
plugins make reach the client as Dify ``message_file`` events with signed URLs, the plugins' labels
are in ``tool_labels``, and a plugin that fails leaves the run answering."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.tools.dify_plugins import DifyPlugins
from tests.sse import parse_sse
from tests.tools.dify_plugins.conftest import SearxngServer

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def client(
    db: Database, plugins: DifyPlugins, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.chdir(tmp_path)  # the tool files and their key go to ./loopwright-files
    server = create_app(db, Settings(), ping_interval=0.05)
    server.state.loopwright.use_plugins(plugins)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=server), base_url="http://test") as c:
        yield c
    await server.state.loopwright.settled()


async def new_app(db: Database, tmp_path: Path, replies: list[Any], toolsets: list[dict[str, Any]]) -> str:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"replies": replies, "features": ["tool-call", "multi-tool-call", "stream-tool-call"]})
    )
    config = {"model": f"scripted:{script}", "tools": [], "toolsets": toolsets}
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "charts", config, description="charts")
        key = await repo.create_api_key(s, app.id)
    return key.token


async def chat(client: httpx.AsyncClient, key: str, query: str) -> list[dict[str, Any]]:
    body = {"inputs": {}, "user": "alice", "response_mode": "streaming", "query": query}
    r = await client.post("/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 200, r.text
    return [e for e in parse_sse(r.text) if e["event"] != "ping"]


async def test_plugin_images_reach_the_client_as_message_files(
    client: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    key = await new_app(
        db,
        tmp_path,
        [
            {
                "tool_calls": [
                    ["qrcode_generator", {"content": "https://loopwright.dev"}],
                    ["bar_chart", {"data": "3;5;2", "x_axis": "a;b;c"}],
                ]
            },
            "Here are your QR code and chart.",
        ],
        [
            {
                "type": "dify_plugin",
                "plugin": "langgenius/qrcode",
                "parameters": {"qrcode_generator": {"border": 4}},
            },
            {"type": "dify_plugin", "plugin": "langgenius/chart", "tools": ["bar_chart"]},
        ],
    )
    events = await chat(client, key, "Make a QR code and a bar chart.")
    assert events[-1]["event"] == "message_end", events[-1]
    files = [e for e in events if e["event"] == "message_file"]
    assert len(files) == 2 and all(f["type"] == "image" and f["belongs_to"] == "assistant" for f in files)
    for f in files:
        assert f["url"].startswith("/files/tools/") and ".png?" in f["url"] and "sign=" in f["url"]
        image = await client.get(f["url"])
        assert image.status_code == 200 and image.content.startswith(PNG_MAGIC)
        assert image.headers["content-type"] == "image/png"
    # Parallel calls: the round's thought is sent again as each call ends; the last one has both.
    thought = [e for e in events if e["event"] == "agent_thought" and e["observation"]][-1]
    assert thought["tool_labels"]["qrcode_generator"]["en_US"] == "Generate QR Code"
    assert thought["tool_labels"]["bar_chart"]["en_US"] == "Bar Chart"
    observations = json.loads(thought["observation"])
    assert "the bar chart is saved as an image." in observations["bar_chart"]
    assert "has been created and sent to the user" in observations["qrcode_generator"]
    answer = "".join(e.get("answer", "") for e in events if e["event"] == "agent_message")
    assert answer == "Here are your QR code and chart."


async def test_a_failing_plugin_call_is_an_observation_and_the_run_goes_on(
    client: httpx.AsyncClient, db: Database, tmp_path: Path, searxng: SearxngServer
) -> None:
    searxng.status = 502
    key = await new_app(
        db,
        tmp_path,
        [{"tool_calls": [["searxng_search", {"query": "news"}]]}, "The search engine is down."],
        [
            {
                "type": "dify_plugin",
                "plugin": "langgenius/searxng",
                "credentials": {"searxng_base_url": searxng.url},
            }
        ],
    )
    events = await chat(client, key, "Any news?")
    assert events[-1]["event"] == "message_end"
    thought = next(e for e in events if e["event"] == "agent_thought" and e["observation"])
    observation = json.loads(thought["observation"])["searxng_search"]
    assert observation == "tool invoke error: Exception: Error 502: engine failure"
    answer = "".join(e.get("answer", "") for e in events if e["event"] == "agent_message")
    assert answer == "The search engine is down."


async def test_meta_gives_the_plugin_tools_icons_and_they_are_served(
    client: httpx.AsyncClient, db: Database, tmp_path: Path
) -> None:
    key = await new_app(
        db,
        tmp_path,
        ["Hello."],
        [
            {"type": "dify_plugin", "plugin": "langgenius/qrcode"},
            {"type": "dify_plugin", "plugin": "langgenius/chart", "tools": ["pie_chart"], "prefix": "mpl_"},
        ],
    )
    meta = await client.get("/v1/meta", headers={"Authorization": f"Bearer {key}"})
    assert meta.status_code == 200
    assert meta.json() == {
        "tool_icons": {
            "qrcode_generator": "/files/plugins/langgenius/qrcode/icon",
            "mpl_pie_chart": "/files/plugins/langgenius/chart/icon",
        }
    }
    svg = await client.get("/files/plugins/langgenius/qrcode/icon")
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml"
    assert b"<svg" in svg.content and "sandbox" in svg.headers["content-security-policy"]
    png = await client.get("/files/plugins/langgenius/chart/icon")
    assert png.status_code == 200 and png.content.startswith(PNG_MAGIC)
    for missing in ("/files/plugins/langgenius/google/icon", "/files/plugins/..%2F..%2Fetc/passwd/icon"):
        assert (await client.get(missing)).status_code == 404
