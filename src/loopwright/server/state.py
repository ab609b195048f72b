"""What the server's routes share: the database, the runs, the built models, tools and agents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import Request

from loopwright.agent import Agent
from loopwright.app.config import InputField
from loopwright.app.generate import answer, build_agent
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.toolsets import ToolsetPool
from loopwright.config import ConfigError, Settings, build_model, load_settings
from loopwright.model.base import Model, ModelError
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.runs import RunRegistry
from loopwright.server.stops import StopBoard
from loopwright.store.db import Database
from loopwright.store.models import App
from loopwright.tools.app_tool import AppAnswer
from loopwright.tools.base import Tool, ToolContext, ToolOutput
from loopwright.tools.files.manager import StoredFile, ToolFiles, load_tool_files
from loopwright.tools.net import network_policy

if TYPE_CHECKING:
    from loopwright.knowledge.kb import KnowledgeBase


class ServerState:
    def __init__(
        self,
        db: Database,
        settings: Settings | None,
        *,
        ping_interval: float,
        tools: Sequence[Tool],
        workers: int = 1,
    ) -> None:
        self.db = db
        self.ping_interval = ping_interval
        self.tools = list(tools)
        # Several worker processes share stops through the database (see server.stops).
        self.runs = RunRegistry(ping_interval, StopBoard(db) if workers > 1 else None)
        self.lookup = AppLookup(db)
        self._settings = settings
        self._models: dict[str, Model] = {}
        self.tool_files: ToolFiles | None = None  # built on first use (``files()``)
        self._knowledge: KnowledgeBase | None = None
        self._agents: dict[tuple[str, str], Agent] = {}
        self.toolsets = ToolsetPool(
            policy=lambda: network_policy(self.settings.tool_allow_hosts),
            knowledge=self.knowledge,
            app_info=self._app_info,
            app_runner=self._run_app,
        )

    async def files(self) -> ToolFiles:
        """The server's tool files (local storage and signing key from the settings), built once."""
        if self.tool_files is None:
            self.tool_files = await load_tool_files(self.settings)
        return self.tool_files

    def use_knowledge(self, kb: KnowledgeBase) -> None:
        """Serve this knowledge base instead of the one beside the database (tests, embedding)."""
        self._knowledge = kb

    def knowledge(self) -> KnowledgeBase:
        """The knowledge bases beside the app database, opened once (opening is cheap: the store
        connects on its first query)."""
        if self._knowledge is None:
            from loopwright.knowledge.kb import KnowledgeBase

            self._knowledge = KnowledgeBase.open(self.db.url, settings=self.settings)
        return self._knowledge

    async def aclose(self) -> None:
        """Close what the agents hold open (MCP sessions, the knowledge store)."""
        await self.toolsets.aclose()
        if self._knowledge is not None:
            await self._knowledge.close()
            self._knowledge = None

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def model(self, spec: str) -> Model:
        """The model an app's spec names, built once per spec and shared by every request (a scripted
        model's replies are consumed across requests, as one script for the whole conversation)."""
        model = self._models.get(spec)
        if model is None:
            try:
                model = build_model(spec, self.settings)
            except ConfigError as exc:
                raise ApiError(400, "provider_not_initialize", str(exc)) from None
            except ModelError as exc:
                raise ApiError(400, "completion_request_error", str(exc)) from None
            self._models[spec] = model
        return model

    async def agent(self, version: ConfigVersion) -> Agent:
        """The agent of a configuration version, built once: an Agent is configuration only (runs keep
        their state apart), so one serves every request, with its prompt caches warm."""
        model = self.model(version.config.model)
        key = (version.id, version.config.model)  # one model per spec (see ``model``)
        agent = self._agents.get(key)
        if agent is None:
            toolsets = await self.toolsets.tools_for(version.config)
            try:
                agent = build_agent(version.config, model, self.tools, toolsets, _LazyFiles(self))
            except ValueError as exc:
                raise invalid_param(str(exc)) from None
            if len(self._agents) >= MAX_CACHED_AGENTS:
                self._agents.pop(next(iter(self._agents)))
            self._agents[key] = agent
        return agent

    async def _app_info(self, app_id: str) -> tuple[str, str, Sequence[InputField]] | None:
        version = await self.lookup.latest_config(app_id)
        if version is None:
            return None
        async with self.db.sessionmaker() as session:
            app = await session.get(App, app_id)
        if app is None:
            return None
        return app.name, app.description, version.config.user_input_form

    async def _run_app(
        self, app_id: str, query: str, inputs: Mapping[str, Any], ctx: ToolContext
    ) -> AppAnswer:
        return await answer(self.db, self.lookup, self.agent, app_id, query, inputs, ctx)


class _LazyFiles:
    """The server's tool files, opened when a tool first makes a file (opening creates the data
    directory and the signing key, which most apps never need)."""

    def __init__(self, state: ServerState) -> None:
        self._state = state

    async def store_outputs(self, outputs: Sequence[ToolOutput], ctx: ToolContext) -> list[StoredFile]:
        files = await self._state.files()
        return await files.store_outputs(outputs, ctx)


async def get_state(request: Request) -> ServerState:
    # async: FastAPI runs a plain-function dependency in a worker thread, a hop per request.
    state: ServerState = request.app.state.loopwright
    return state


def require_user(user: str | None) -> str:
    """The ``user`` field every Service API call carries (body or query)."""
    if user is None or not user.strip():
        raise invalid_param("user is required")
    if len(user) > MAX_NAME_CHARS:  # the column's size, as Dify's
        raise invalid_param(f"user must be at most {MAX_NAME_CHARS} characters")
    return user


MAX_NAME_CHARS = 255
MAX_CACHED_AGENTS = 256
