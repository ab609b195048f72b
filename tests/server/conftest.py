"""Server test helpers: a real SQLite database, apps on scripted models, an in-process client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.storage import LocalFileStorage
from tests.sse import ACCEPT_SSE, parse_sse

__all__ = ["FC", "NewApp", "ServiceApp", "action", "parse_sse"]

FC = ["tool-call", "stream-tool-call"]


@dataclass
class ServiceApp:
    id: str
    key: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    @property
    def sse_headers(self) -> dict[str, str]:
        """The headers of a client that reads SSE and re-attaches: its streams carry ``id:`` lines."""
        return {**self.headers, **ACCEPT_SSE}


NewApp = Callable[..., Coroutine[Any, Any, ServiceApp]]


def action(name: str, action_input: object, thought: str = "I should act.") -> str:
    """A ReAct reply in Dify's format."""
    blob = json.dumps({"action": name, "action_input": action_input})
    return f"Thought: {thought}\nAction:\n```json\n{blob}\n```\n"


@pytest.fixture
def new_app(db: Database, tmp_path: Path) -> NewApp:
    """``await new_app(replies, features=..., **config)``: an app on its own scripted model file."""
    counter = 0

    async def make(
        replies: list[Any],
        *,
        features: list[str] | None = None,
        delay: float = 0.0,
        name: str = "calc",
        **config: Any,
    ) -> ServiceApp:
        nonlocal counter
        counter += 1
        script = tmp_path / f"script{counter}.json"
        data: dict[str, Any] = {"replies": replies, "features": features if features is not None else FC}
        if delay:
            data["delay"] = delay
        script.write_text(json.dumps(data), encoding="utf-8")
        mode = config.get("mode", "agent-chat")
        tools = [{"name": "calculator"}] if mode == "agent-chat" else []  # a chat app has none
        full = {"model": f"scripted:{script}", "tools": tools, **config}
        async with db.transaction() as s:
            app, _ = await repo.create_app(s, name, full, description=f"{name} app", mode=mode)
            key = await repo.create_api_key(s, app.id)
            return ServiceApp(app.id, key.token)

    return make


@pytest.fixture
def server_app(db: Database, tmp_path: Path) -> FastAPI:
    app = create_app(db, Settings(), ping_interval=0.05)
    # uploads and signed URLs in the test's directory, never in the working directory
    app.state.loopwright.upload_dir = tmp_path / "uploads"
    app.state.loopwright.tool_files = ToolFiles(LocalFileStorage(tmp_path / "tool-files"), b"test-key")
    return app


@pytest.fixture
async def client(server_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=server_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c
    await server_app.state.loopwright.settled()
