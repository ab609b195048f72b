"""An installed plugin's tool provider as ordinary loopwright tools.

Each tool's parameters come from its YAML with Dify's types: ``form: llm`` parameters go to the model
(numbers with their bounds, selects as enums); ``form: form`` ones are set in configuration
(``parameters: {tool: {name: value}}``) and never shown to it; files are not for the model. The
engine fills defaults and casts values before the call, as Dify's host does (qrcode fails on
``border: "2"``). Credentials are read when a tool is called (so setting them needs no restart) and
removed from any error text the plugin sends back.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from loopwright.errors import UserInputError
from loopwright.tools.base import (
    ParameterType,
    Tool,
    ToolContext,
    ToolCredentialError,
    ToolOutput,
    ToolParameter,
)
from loopwright.tools.dify_plugins import protocol
from loopwright.tools.dify_plugins.credentials import redact
from loopwright.tools.dify_plugins.host import PluginCallError, PluginHost
from loopwright.tools.dify_plugins.installer import InstalledPlugin
from loopwright.tools.dify_plugins.manifest import ParameterSpec, ProviderSpec, ToolSpec
from loopwright.tools.dify_plugins.messages import MessageDecoder

log = logging.getLogger(__name__)

_TYPES: dict[str, ParameterType] = {
    "string": "string",
    "text-input": "string",
    "paragraph": "string",
    "number": "number",
    "boolean": "boolean",
    "select": "select",
    "secret-input": "secret-input",
    "file": "file",
    "files": "files",
    "array": "array",
    "object": "object",
}
_PUBLIC_CREDENTIALS = frozenset({"text-input", "select", "boolean"})  # URLs, regions: not secrets

Credentials = Callable[[], Awaitable[Mapping[str, Any]]]
"""Reads the provider's credentials at call time."""


def tool_parameter(spec: ParameterSpec, preset: Any = None) -> ToolParameter:
    """A plugin parameter as a loopwright one; ``preset`` (from configuration) replaces the default."""
    kind = _TYPES.get(spec.type, "any")
    default = spec.default if preset is None else preset
    schema: dict[str, Any] | None = None
    if kind == "number" and (spec.minimum is not None or spec.maximum is not None):
        schema = {"type": "number"}
        if spec.description:
            schema["description"] = spec.description
        if spec.minimum is not None:
            schema["minimum"] = spec.minimum
        if spec.maximum is not None:
            schema["maximum"] = spec.maximum
    return ToolParameter(
        name=spec.name,
        type=kind,
        form="llm" if spec.form == "llm" else "form",
        required=spec.required,
        description=spec.description,
        options=spec.options if kind == "select" else (),
        default=default,
        schema=schema,
    )


class DifyPluginToolset:
    """The tools of one provider of an installed plugin (all of them, or those named in ``tools``).
    ``tools`` is the built list, known from the plugin's files without starting it."""

    def __init__(
        self,
        host: PluginHost,
        plugin: InstalledPlugin,
        provider: ProviderSpec,
        credentials: Credentials,
        *,
        tools: Sequence[str] | None = None,
        parameters: Mapping[str, Mapping[str, Any]] | None = None,
        prefix: str = "",
        timeout: float | None = None,
    ) -> None:
        self.host = host
        self.plugin = plugin
        self.provider = provider
        self._credentials = credentials
        self.timeout = timeout
        specs = _chosen(plugin, provider, tools, parameters or {})
        self.tools: list[Tool] = [
            self._tool(spec, (parameters or {}).get(spec.name, {}), prefix) for spec in specs
        ]

    async def get_tools(self) -> Sequence[Tool]:
        return self.tools

    def labels(self) -> dict[str, str]:
        return {t.name: t.label for t in self.tools}

    async def credentials(self) -> dict[str, Any]:
        """The credentials a call is made with; :class:`ToolCredentialError` naming the missing ones."""
        values = dict(await self._credentials())
        missing = [
            c.name for c in self.provider.credentials if c.required and values.get(c.name) in (None, "")
        ]
        if missing:
            raise ToolCredentialError(
                f"plugin {self.plugin.plugin_id} needs credentials for {self.provider.name}: "
                f"{', '.join(missing)} (set them with: loopwright plugins credentials "
                f"{self.plugin.plugin_id} --set NAME=VALUE)"
            )
        for c in self.provider.credentials:
            if c.name not in values and c.default is not None:
                values[c.name] = c.default
        return values

    async def validate_credentials(self, values: Mapping[str, Any] | None = None) -> None:
        """Ask the plugin whether these credentials (default: the configured ones) work; raises
        :class:`ToolCredentialError` with the plugin's reason. A provider without credentials has
        nothing to validate (and some plugins' validation fails for them)."""
        if not self.provider.credentials:
            return
        creds = dict(values) if values is not None else await self.credentials()
        request = protocol.validate_credentials(self.provider.name, creds)
        try:
            results = [m async for m in self.host.call(self.plugin, request, timeout=self.timeout)]
        except PluginCallError as exc:
            raise ToolCredentialError(redact(str(exc), _secrets(self.provider, creds))) from None
        if not any(isinstance(m, Mapping) and m.get("result") is True for m in results):
            raise ToolCredentialError(f"plugin {self.plugin.plugin_id} did not accept the credentials")

    def _tool(self, spec: ToolSpec, presets: Mapping[str, Any], prefix: str) -> Tool:
        params = tuple(tool_parameter(p, presets.get(p.name)) for p in spec.parameters)
        form_values = {
            p.name: presets[p.name] for p in spec.parameters if p.form != "llm" and p.name in presets
        }
        name = f"{prefix}{spec.name}"
        return Tool(
            name=name,
            description=spec.description or spec.label,
            parameters=params,
            invoke=self._invoker(spec),
            form_values=form_values,
            timeout=self.timeout,
            label=spec.label,
        )

    def _invoker(self, spec: ToolSpec) -> Callable[[dict[str, Any], ToolContext], AsyncIterator[ToolOutput]]:
        async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
            creds = await self.credentials()
            params = {k: v for k, v in args.items() if v is not None}
            request = protocol.invoke_tool(
                self.provider.name, spec.name, creds, params, ctx.user_id or "loopwright"
            )
            decoder = MessageDecoder()
            try:
                async for message in self.host.call(self.plugin, request, ctx, self.timeout):
                    output = decoder.feed(message)
                    if output is not None:
                        yield output
            except PluginCallError as exc:
                raise PluginCallError(redact(str(exc), _secrets(self.provider, creds))) from None

        return invoke


def _chosen(
    plugin: InstalledPlugin,
    provider: ProviderSpec,
    names: Sequence[str] | None,
    parameters: Mapping[str, Mapping[str, Any]],
) -> list[ToolSpec]:
    """The tool specs named (all when ``names`` is None), checked against the presets."""
    known = {t.name: t for t in provider.tools}
    wanted = list(known) if names is None else list(names)
    unknown = [n for n in [*wanted, *parameters] if n not in known]
    if unknown:
        raise UserInputError(
            f"plugin {plugin.plugin_id} ({provider.name}) has no tool {unknown[0]!r}; "
            f"its tools: {', '.join(known)}"
        )
    specs = [known[n] for n in wanted]
    for spec in specs:
        presets = parameters.get(spec.name, {})
        names_here = {p.name for p in spec.parameters}
        extra = [k for k in presets if k not in names_here]
        if extra:  # as Dify: values for parameters a plugin's version no longer has are ignored
            log.warning(
                "tool %s of plugin %s has no parameter %s; its preset is ignored",
                spec.name,
                plugin.plugin_id,
                ", ".join(repr(k) for k in extra),
            )
        for p in spec.parameters:
            if p.form != "llm" and p.required and p.default is None and presets.get(p.name) is None:
                raise UserInputError(
                    f"tool {spec.name} of plugin {plugin.plugin_id} needs a value for its setting {p.name!r} "
                    f"(parameters: {{{spec.name}: {{{p.name}: …}}}})"
                )
    return specs


def _secrets(provider: ProviderSpec, creds: Mapping[str, Any]) -> dict[str, Any]:
    public = {c.name for c in provider.credentials if c.type in _PUBLIC_CREDENTIALS}
    return {k: v for k, v in creds.items() if k not in public}
