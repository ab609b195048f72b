"""Dify's API-based extension contract: one HTTP endpoint a team runs to moderate text or to supply data.

Dify calls it ``POST {endpoint}`` with ``Authorization: Bearer {api_key}`` and the body
``{"point": …, "params": {…}}``; the points loopwright uses are ``app.moderation.input``,
``app.moderation.output`` (:mod:`loopwright.app.guards.moderation`) and ``app.external_data_tool.query``
(:mod:`loopwright.app.guards.external_data`). A reply other than 200 with a JSON object is an error, as Dify's
``APIBasedExtensionRequestor`` treats it.

Every request goes through the SSRF guard (``tools.net``): an endpoint on a private or loopback
address must be allow-listed (``tool_allow_hosts``). The key is given in the app configuration as
``api_key`` or, better, as the name of an environment variable (``api_key_env``), read when called.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

import httpx
import pydantic

from loopwright.errors import ToolError
from loopwright.tools.base import ToolInvokeError
from loopwright.tools.net import NetworkPolicy, guarded_client

Point = Literal["app.moderation.input", "app.moderation.output", "app.external_data_tool.query"]
DEFAULT_TIMEOUT = 10.0  # seconds for the whole call (Dify's: 5 to connect, 60 to read)
MAX_REPLY_BYTES = 1_000_000


class ExtensionError(ToolError, RuntimeError):
    """The extension could not be reached or answered with something unusable."""


class Endpoint(pydantic.BaseModel):
    """Where an API-based extension is and how to call it."""

    model_config = pydantic.ConfigDict(extra="forbid")

    endpoint: str = pydantic.Field(min_length=1)
    api_key: str | None = pydantic.Field(default=None, repr=False)
    api_key_env: str | None = None
    timeout: float = pydantic.Field(DEFAULT_TIMEOUT, gt=0, le=300)

    @pydantic.field_validator("endpoint")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"endpoint must be an http(s) URL, not {value!r}")
        return value

    def key(self) -> str:
        if self.api_key_env:
            value = os.environ.get(self.api_key_env, "")
            if not value:
                raise ExtensionError(f"the environment variable {self.api_key_env} (api_key_env) is not set")
            return value
        return self.api_key or ""


async def call_extension(
    endpoint: Endpoint, point: Point, params: dict[str, Any], policy: NetworkPolicy
) -> dict[str, Any]:
    """POST Dify's extension body to ``endpoint`` and return the reply's JSON object; raises
    :class:`ExtensionError` (timeout, refused address, status other than 200, not a JSON object)."""
    headers = {"Content-Type": "application/json"}
    key = endpoint.key()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    timeout = httpx.Timeout(endpoint.timeout)
    try:
        # the whole call within the timeout (httpx's applies to each read, which a slow server resets)
        async with asyncio.timeout(endpoint.timeout):
            async with guarded_client(policy, timeout=timeout, follow_redirects=False) as client:
                response = await client.post(
                    endpoint.endpoint, json={"point": point, "params": params}, headers=headers
                )
    except (httpx.TimeoutException, TimeoutError):
        raise ExtensionError("request timeout") from None
    except ToolInvokeError as exc:  # the SSRF guard refused the address
        raise ExtensionError(str(exc)) from None
    except httpx.HTTPError as exc:
        raise ExtensionError(f"request connection error: {exc}") from None
    if response.status_code != 200:
        raise ExtensionError(
            f"request error, status_code: {response.status_code}, content: {response.text[:100]}"
        )
    if len(response.content) > MAX_REPLY_BYTES:
        raise ExtensionError("the reply is too large")
    try:
        body = response.json()
    except ValueError:
        raise ExtensionError("the reply is not JSON") from None
    if not isinstance(body, dict):
        raise ExtensionError("the reply is not a JSON object")
    return body
