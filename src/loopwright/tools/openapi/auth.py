"""Credentials for OpenAPI tools, as Dify's API tools take them (reference §6.5): none, an API key in a
header (with a ``basic`` / ``bearer`` / ``custom`` prefix) or in a query parameter.

The key is added by a transport wrapper to requests for the API's own origin only, never to the
request object httpx logs or carries across a redirect to another host, and :meth:`APIAuth.redact`
scrubs it from anything shown to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

AuthType = Literal["none", "api_key_header", "api_key_query"]
HeaderPrefix = Literal["basic", "bearer", "custom"]
REDACTED = "***"
_MIN_REDACT = 4  # a shorter key would turn unrelated text into "***"


@dataclass(frozen=True, slots=True)
class APIAuth:
    type: AuthType = "none"
    api_key: str = field(default="", repr=False)
    header: str = "Authorization"
    prefix: HeaderPrefix = "custom"
    query_param: str = "key"

    def __post_init__(self) -> None:
        if self.type != "none" and not self.api_key:
            raise ValueError(f"auth type {self.type!r} needs an API key")
        if self.type == "api_key_header" and not self.header.strip():
            raise ValueError("the API key header name is empty")
        if self.type == "api_key_query" and not self.query_param.strip():
            raise ValueError("the API key query parameter name is empty")

    @classmethod
    def none(cls) -> APIAuth:
        return cls()

    @classmethod
    def api_key_header(
        cls, api_key: str, *, header: str = "Authorization", prefix: HeaderPrefix = "custom"
    ) -> APIAuth:
        return cls("api_key_header", api_key, header=header, prefix=prefix)

    @classmethod
    def api_key_query(cls, api_key: str, *, param: str = "key") -> APIAuth:
        return cls("api_key_query", api_key, query_param=param)

    def __repr__(self) -> str:
        key = f"'{REDACTED}'" if self.api_key else "''"
        return (
            f"APIAuth(type={self.type!r}, api_key={key}, header={self.header!r}, prefix={self.prefix!r}, "
            f"query_param={self.query_param!r})"
        )

    __str__ = __repr__

    @property
    def header_value(self) -> str:
        """The header's value: Dify prepends ``Basic `` / ``Bearer `` to the key as given."""
        if self.prefix == "basic":
            return f"Basic {self.api_key}"
        if self.prefix == "bearer":
            return f"Bearer {self.api_key}"
        return self.api_key

    def apply(self, request: httpx.Request) -> httpx.Request:
        """A copy of ``request`` carrying the credentials (the original is left as it was)."""
        if self.type == "none":
            return request
        url, headers = request.url, request.headers.copy()
        if self.type == "api_key_header":
            headers[self.header] = self.header_value
        else:
            url = url.copy_merge_params({self.query_param: self.api_key})
        return httpx.Request(
            request.method, url, headers=headers, stream=request.stream, extensions=request.extensions
        )

    def redact(self, text: str) -> str:
        if self.type == "none" or len(self.api_key) < _MIN_REDACT:
            return text
        for secret in {self.api_key, httpx.URL("", params={"k": self.api_key}).query.decode()[2:]}:
            if secret:
                text = text.replace(secret, REDACTED)
        return text

    def redact_data(self, data: Any) -> Any:
        """``data`` (decoded JSON) with the key scrubbed from every string in it."""
        if self.type == "none":
            return data
        if isinstance(data, str):
            return self.redact(data)
        if isinstance(data, Mapping):
            return {self.redact(str(k)): self.redact_data(v) for k, v in data.items()}
        if isinstance(data, list):
            return [self.redact_data(v) for v in data]
        return data


class AuthTransport(httpx.AsyncBaseTransport):
    """Adds the credentials to requests for ``origin`` (scheme, host, port) and to no other."""

    def __init__(self, inner: httpx.AsyncBaseTransport, auth: APIAuth, origin: str) -> None:
        self._inner = inner
        self._auth = auth
        self._origin = _origin(httpx.URL(origin))

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if _origin(request.url) == self._origin:
            request = self._auth.apply(request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default
