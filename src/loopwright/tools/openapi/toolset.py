"""``OpenAPIToolset``: the operations of an API description as tools, loaded once, on first use."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypedDict, Unpack

import httpx

from loopwright.tools.base import Tool, ToolContext, ToolOutput
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy
from loopwright.tools.openapi.auth import APIAuth
from loopwright.tools.openapi.operations import Operation, extract_operations
from loopwright.tools.openapi.request import DEFAULT_TIMEOUT, CallSettings, call_operation
from loopwright.tools.openapi.spec import (
    LoadedSpec,
    is_plugin_manifest,
    load_spec,
    parse_document,
    parse_spec,
    parse_spec_async,
)

Loader = Callable[[], Awaitable[LoadedSpec]]


class ToolsetOptions(TypedDict, total=False):
    """The keyword arguments ``from_file`` and ``from_text`` pass on to :class:`OpenAPIToolset`."""

    auth: APIAuth | None
    policy: NetworkPolicy
    server_url: str | None
    timeout: httpx.Timeout | None
    include: Iterable[str] | None


class OpenAPIToolset:
    """A toolset with one tool per operation of an OpenAPI 3.x / Swagger 2.0 description (or the spec an
    OpenAI plugin manifest points at). Build it with :meth:`from_file` or :meth:`from_text`."""

    def __init__(
        self,
        loader: Loader,
        *,
        auth: APIAuth | None = None,
        policy: NetworkPolicy = DEFAULT_POLICY,
        server_url: str | None = None,
        timeout: httpx.Timeout | None = None,
        include: Iterable[str] | None = None,
        source: str = "<spec>",
    ) -> None:
        self.source = source
        self._loader = loader
        self._settings = CallSettings(auth or APIAuth(), policy, timeout or DEFAULT_TIMEOUT)
        self._server_url = server_url
        self._include = None if include is None else list(include)
        self._spec: LoadedSpec | None = None
        self._operations: list[Operation] | None = None
        self._tools: list[Tool] | None = None
        self._lock = asyncio.Lock()

    @classmethod
    def from_file(cls, path_or_url: str | Path, **options: Unpack[ToolsetOptions]) -> OpenAPIToolset:
        """A spec file or http(s) URL (fetched through the network guard), read on first use."""
        source = str(path_or_url)
        policy = options.get("policy", DEFAULT_POLICY)

        async def load() -> LoadedSpec:
            return await load_spec(source, policy)

        return cls(load, source=source, **options)

    @classmethod
    def from_text(
        cls, text: str, *, source: str = "<text>", **options: Unpack[ToolsetOptions]
    ) -> OpenAPIToolset:
        """A spec given as JSON or YAML text; it is validated here (``SpecError`` when invalid), except a
        plugin manifest, whose spec is fetched on first use."""
        policy = options.get("policy", DEFAULT_POLICY)
        if is_plugin_manifest(parse_document(text, source)):

            async def load() -> LoadedSpec:
                return await parse_spec_async(text, source=source, policy=policy)

        else:
            spec = parse_spec(text, source=source)

            async def load() -> LoadedSpec:
                return spec

        return cls(load, source=source, **options)

    @property
    def spec(self) -> LoadedSpec | None:
        return self._spec

    async def load(self) -> list[Operation]:
        """The operations (loading and validating the spec the first time)."""
        async with self._lock:
            if self._operations is None:
                spec = await self._loader()
                operations = extract_operations(
                    spec.document, server_url=self._server_url, source_url=spec.source_url
                )
                if self._include is not None:
                    known = {op.name for op in operations}
                    missing = [n for n in self._include if n not in known]
                    if missing:
                        names = ", ".join(sorted(known))
                        raise ValueError(f"{self.source}: no operation named {missing[0]!r}; it has: {names}")
                    operations = [op for op in operations if op.name in self._include]
                self._spec, self._operations = spec, operations
            return self._operations

    async def get_tools(self) -> Sequence[Tool]:
        if self._tools is None:
            self._tools = [operation_tool(op, self._settings) for op in await self.load()]
        return self._tools

    def __repr__(self) -> str:
        return f"OpenAPIToolset({self.source!r}, auth={self._settings.auth.type!r})"


def operation_tool(op: Operation, settings: CallSettings) -> Tool:
    """The tool that calls ``op``."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        for output in await call_operation(op, args, settings):
            yield output

    return Tool(
        name=op.name,
        description=op.description,
        parameters=op.parameters,
        invoke=invoke,
        label=f"{op.method} {op.path}",
        requires_approval=op.requires_approval,
        # RFC 9110 §9.2.2: POST and PATCH are the methods whose repetition may do something twice
        idempotent=op.method.upper() not in ("POST", "PATCH"),
        # Our own timeouts (connect 10 s, read 60 s) decide; the engine's cap sits just above them.
        timeout=_overall_timeout(settings.timeout),
    )


def _overall_timeout(timeout: httpx.Timeout) -> float | None:
    parts = [t for t in (timeout.connect, timeout.read) if t is not None]
    return sum(parts) + 5.0 if parts else None
