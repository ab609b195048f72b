"""What the server's routes share: the database, the runs, the built models and the tools."""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Request

from loopwright.agent import Agent
from loopwright.app.generate import build_agent
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.config import ConfigError, Settings, build_model, load_settings
from loopwright.model.base import Model, ModelError
from loopwright.server.errors import ApiError, invalid_param
from loopwright.server.runs import RunRegistry
from loopwright.store.db import Database
from loopwright.tools.base import Tool
from loopwright.tools.files.manager import ToolFiles


class ServerState:
    def __init__(
        self,
        db: Database,
        settings: Settings | None,
        *,
        ping_interval: float,
        tools: Sequence[Tool],
    ) -> None:
        self.db = db
        self.ping_interval = ping_interval
        self.tools = list(tools)
        self.runs = RunRegistry(ping_interval)
        self.lookup = AppLookup(db)
        self._settings = settings
        self._models: dict[str, Model] = {}
        self.tool_files: ToolFiles | None = None  # built on first use (routes_tool_files.tool_files_of)
        self._agents: dict[tuple[str, str], Agent] = {}

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

    def agent(self, version: ConfigVersion) -> Agent:
        """The agent of a configuration version, built once: an Agent is configuration only (runs keep
        their state apart), so one serves every request, with its prompt caches warm."""
        model = self.model(version.config.model)
        key = (version.id, version.config.model)  # one model per spec (see ``model``)
        agent = self._agents.get(key)
        if agent is None:
            try:
                agent = build_agent(version.config, model, self.tools)
            except ValueError as exc:
                raise invalid_param(str(exc)) from None
            if len(self._agents) >= MAX_CACHED_AGENTS:
                self._agents.pop(next(iter(self._agents)))
            self._agents[key] = agent
        return agent


def get_state(request: Request) -> ServerState:
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
