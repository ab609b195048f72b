"""One agent round calling an OpenAPI tool, an MCP tool, another app and a file-making tool at once,
through the HTTP API: a real API server and a real MCP server (``mcp-server-time``) on this machine."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from loopwright import tool
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.tools import BlobMessage
from loopwright.tools.builtin import builtin_tools
from tests.live_server import serving
from tests.server.conftest import parse_sse
from tests.tools.openapi.api_app import make_app

FEATURES = ["tool-call", "multi-tool-call", "stream-tool-call"]


async def create(
    db: Database, tmp_path: Path, name: str, replies: list[Any], **config: Any
) -> tuple[str, str]:
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps({"replies": replies, "features": FEATURES}), encoding="utf-8")
    async with db.transaction() as s:
        app, _ = await repo.create_app(
            s, name, {"model": f"scripted:{script}", **config}, description=f"{name} app"
        )
        key = await repo.create_api_key(s, app.id)
        return app.id, key.token


async def test_four_kinds_of_tools_in_one_round(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path))  # the tool files go there

    @tool
    async def report(title: str) -> AsyncIterator[BlobMessage]:
        """Write a report as a PDF."""
        await asyncio.sleep(0.05)
        yield BlobMessage(b"%PDF-1.4 " + title.encode(), "application/pdf", "report.pdf")

    async with serving(make_app()) as api:
        geo_id, _ = await create(db, tmp_path, "geography", ["Paris is the capital of France."])
        toolsets = [
            {"type": "openapi", "spec": f"{api}/openapi.json", "server_url": api},
            {
                "type": "mcp",
                "command": sys.executable,
                "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"],
            },
            {"type": "app", "app_id": geo_id, "name": "geo"},
        ]
        calls = [
            ["get_pet", {"pet_id": 7}],
            ["get_current_time", {"timezone": "UTC"}],
            ["geo", {"inputs": {}, "query": "What is the capital of France?"}],
            ["report", {"title": "Q3"}],
        ]
        _, key = await create(
            db,
            tmp_path,
            "assistant",
            [{"tool_calls": calls}, "Done: pet 7, the time, Paris, and your report."],
            tools=[{"name": "report"}],
            toolsets=toolsets,
        )
        settings = Settings(tool_allow_hosts=("127.0.0.1",))
        server = create_app(db, settings, tools=[*builtin_tools(), report])
        async with server.router.lifespan_context(server):
            transport = httpx.ASGITransport(app=server)
            async with httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as client:
                body = {"query": "Do it all.", "user": "alice", "response_mode": "streaming", "inputs": {}}
                r = await client.post(
                    "/v1/chat-messages", json=body, headers={"Authorization": f"Bearer {key}"}
                )
                assert r.status_code == 200, r.text
                events = [e for e in parse_sse(r.text) if e["event"] != "ping"]
                names = [e["event"] for e in events]
                assert names[-1] == "message_end", events[-1]
                thoughts = [e for e in events if e["event"] == "agent_thought"]
                all_four = "get_pet;get_current_time;geo;report"
                # Concurrent: every call had started before the first result came in.
                first_result = next(i for i, t in enumerate(thoughts) if t["observation"])
                assert (
                    thoughts[first_result - 1]["tool"] == all_four
                    and not thoughts[first_result - 1]["observation"]
                )
                done = [t for t in thoughts if t["tool"] == all_four][-1]  # the round with every result
                observations = json.loads(done["observation"])
                assert '"id": 7' in observations["get_pet"]
                assert '"timezone": "UTC"' in observations["get_current_time"]
                assert observations["geo"] == "Paris is the capital of France."
                assert '"report.pdf" (application/pdf' in observations["report"]
                files = [e for e in events if e["event"] == "message_file"]
                assert len(files) == 1 and files[0]["type"] == "document"
                assert done["message_files"] == [files[0]["id"]]
                assert (await client.get(files[0]["url"])).content == b"%PDF-1.4 Q3"
                # the events come in Dify's order: file before the thought that lists it
                assert names.index("message_file") < names.index("message_end")
                assert events[-1]["metadata"]["usage"]["total_tokens"] > 0
