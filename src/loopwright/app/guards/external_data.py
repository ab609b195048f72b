"""External data tools: input variables filled from an HTTP API before a message runs (Dify's
``external_data_tools``, the API-based extension point ``app.external_data_tool.query``).

Each tool names the ``variable`` it fills and its extension endpoint; before the agent starts, every
enabled tool is called at once with ``{app_id, tool_variable, inputs, query}`` and its reply's ``result``
(a string) becomes the variable's value, which the instruction's ``{{variable}}`` then shows. A call
that fails, times out or answers without a string ``result`` ends the message with Dify's error
(``[External data tool] API query failed, variable: …, error: …``, an ``invalid_param``); the SSRF
guard and the timeout of :mod:`loopwright.app.guards.extension_api` apply.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Literal

import pydantic

from loopwright.app.guards.extension_api import DEFAULT_TIMEOUT, Endpoint, ExtensionError, call_extension
from loopwright.errors import UserInputError
from loopwright.tools.net import NetworkPolicy


class ExternalDataTool(pydantic.BaseModel):
    """One external data tool of an app."""

    model_config = pydantic.ConfigDict(extra="forbid")

    variable: str = pydantic.Field(min_length=1)
    type: Literal["api"] = "api"
    enabled: bool = True
    endpoint: str = pydantic.Field(min_length=1)
    api_key: str | None = pydantic.Field(default=None, repr=False)
    api_key_env: str | None = None
    timeout: float = pydantic.Field(DEFAULT_TIMEOUT, gt=0, le=300)

    def extension(self) -> Endpoint:
        return Endpoint(
            endpoint=self.endpoint, api_key=self.api_key, api_key_env=self.api_key_env, timeout=self.timeout
        )


class ExternalDataError(UserInputError):
    """An external data tool failed (Dify raises a ValueError: ``invalid_param``)."""


async def query_tool(
    tool: ExternalDataTool, app_id: str, inputs: dict[str, Any], query: str, policy: NetworkPolicy
) -> str:
    """The value one tool gives its variable."""
    params = {"app_id": app_id, "tool_variable": tool.variable, "inputs": inputs, "query": query}
    try:
        reply = await call_extension(tool.extension(), "app.external_data_tool.query", params, policy)
    except ExtensionError as exc:
        raise ExternalDataError(_failure(tool, str(exc))) from None
    if "result" not in reply:
        raise ExternalDataError(_failure(tool, "result not found in response"))
    if not isinstance(reply["result"], str):
        raise ExternalDataError(_failure(tool, "result is not string"))
    return reply["result"]


def _failure(tool: ExternalDataTool, error: str) -> str:
    return f"[External data tool] API query failed, variable: {tool.variable}, error: {error}"  # Dify's


async def fill_inputs(
    tools: Sequence[ExternalDataTool], app_id: str, inputs: dict[str, Any], query: str, policy: NetworkPolicy
) -> dict[str, Any]:
    """``inputs`` with every enabled tool's variable filled (the tools are called concurrently, each
    with the inputs as they were)."""
    enabled = [t for t in tools if t.enabled]
    if not enabled:
        return inputs
    values = await asyncio.gather(*(query_tool(t, app_id, dict(inputs), query, policy) for t in enabled))
    return {**inputs, **{t.variable: v for t, v in zip(enabled, values, strict=True)}}
