"""Real official Dify plugins (``tests/fixtures/dify-plugins``, their sources and licence there; or
``LOOPWRIGHT_DIFY_PLUGIN_FIXTURES``), installed into their own environments.

Building the environments takes a while the first time (downloads from PyPI), so they are kept
between runs in ``.cache/plugin-envs`` at the top of the repository (``LOOPWRIGHT_PLUGIN_ENVS``
to put them elsewhere), keyed by the hash of each plugin's requirements: CI pays once.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI, Request

from loopwright.tools.dify_plugins import DifyPlugins, PluginHost, PluginStore
from loopwright.tools.dify_plugins.credentials import CredentialStore
from tests.live_server import serving

REPO = Path(__file__).resolve().parents[3]
FIXTURES = Path(os.environ.get("LOOPWRIGHT_DIFY_PLUGIN_FIXTURES", REPO / "tests/fixtures/dify-plugins"))
ENVS_CACHE = Path(os.environ.get("LOOPWRIGHT_PLUGIN_ENVS", REPO / ".cache/plugin-envs"))
PLUGINS = ("json_process", "regex", "maths", "chart", "echarts", "qrcode", "searxng")
SECRET = b"plugin-test-secret"


def fixture_plugin(name: str) -> Path:
    path = FIXTURES / name
    if not (path / "manifest.yaml").is_file():
        pytest.skip(f"the Dify plugin fixtures are not at {FIXTURES}")
    return path


@pytest.fixture
def installed_root(tmp_path: Path) -> Path:
    """A plugins directory of the test's own with the seven fixture plugins installed (their
    environments come from the cache: installing is then a copy of their files)."""
    root = tmp_path / "plugins"
    store = PluginStore(root, ENVS_CACHE)
    for name in PLUGINS:
        store.install(fixture_plugin(name))
    return root


@pytest.fixture
def store(installed_root: Path) -> PluginStore:
    return PluginStore(installed_root, ENVS_CACHE)


@pytest.fixture
async def host(store: PluginStore) -> AsyncIterator[PluginHost]:
    h = PluginHost(store, call_timeout=60)
    yield h
    await h.aclose()


@pytest.fixture
async def plugins(store: PluginStore, tmp_path: Path) -> AsyncIterator[DifyPlugins]:
    p = DifyPlugins(store, CredentialStore(SECRET), PluginHost(store, call_timeout=60))
    yield p
    await p.aclose()


class SearxngServer:
    """What SearXNG's JSON API answers (``GET /?q=…&format=json&categories=…``), on 127.0.0.1.
    ``gate``: when set to an unset event, answers wait for it (a search in progress)."""

    def __init__(self) -> None:
        self.url = ""
        self.queries: list[dict[str, str]] = []
        self.gate: asyncio.Event | None = None
        self.arrived = asyncio.Event()
        self.status = 200

    def app(self) -> FastAPI:
        api = FastAPI()

        @api.get("/")
        async def search(request: Request) -> Any:
            params = dict(request.query_params)
            self.queries.append(params)
            self.arrived.set()
            if self.gate is not None:
                await self.gate.wait()
            if self.status != 200:
                from fastapi.responses import PlainTextResponse

                return PlainTextResponse("engine failure", status_code=self.status)
            q = params.get("q", "")
            return {
                "query": q,
                "number_of_results": 2,
                "results": [
                    {"url": f"https://example.org/{i}", "title": f"{q} result {i}", "content": f"About {q}."}
                    for i in (1, 2)
                ],
            }

        return api


@asynccontextmanager
async def searxng_server() -> AsyncIterator[SearxngServer]:
    server = SearxngServer()
    async with serving(server.app()) as url:
        server.url = url
        try:
            yield server
        finally:
            if server.gate is not None:
                server.gate.set()  # let a held request end, so the server can stop


@pytest.fixture
async def searxng() -> AsyncIterator[SearxngServer]:
    async with searxng_server() as server:
        yield server


@pytest.fixture
def no_plugin_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("LOOPWRIGHT_PLUGIN_PYTHON", raising=False)
    yield
