"""``OpenAPISource``: an OpenAPI toolset as it is written in an app's configuration."""

from __future__ import annotations

import os
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy
from loopwright.tools.openapi.auth import APIAuth, AuthType, HeaderPrefix
from loopwright.tools.openapi.toolset import OpenAPIToolset


class OpenAPISource(BaseModel):
    """An API description and how to call it. ``spec`` is a file path or an http(s) URL. The key is
    given as ``api_key`` or, better, as the name of an environment variable in ``api_key_env`` (read
    when the toolset is built, so the app's stored configuration holds no secret). ``allow_hosts`` adds
    to the global network allow-list, for an API on a private address."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["openapi"] = "openapi"
    spec: str = Field(min_length=1)
    auth_type: AuthType = "none"
    api_key: str | None = Field(default=None, repr=False)
    api_key_env: str | None = None
    api_key_header: str = "Authorization"
    api_key_header_prefix: HeaderPrefix = "custom"
    api_key_query_param: str = "key"
    server_url: str | None = None
    allow_hosts: list[str] = Field(default_factory=list)
    include: list[str] | None = None
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=60.0, gt=0)

    @field_validator("auth_type", mode="before")
    @classmethod
    def _dify_alias(cls, value: object) -> object:
        return "api_key_header" if value == "api_key" else value  # Dify's older name

    @field_validator("allow_hosts")
    @classmethod
    def _valid_hosts(cls, value: list[str]) -> list[str]:
        NetworkPolicy.from_strings(value)  # a ValueError names the bad entry
        return value

    @field_validator("server_url")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"server_url must be an absolute http(s) URL, got {value!r}")
        return value

    @model_validator(mode="after")
    def _key_given(self) -> OpenAPISource:
        if self.auth_type != "none" and not (self.api_key or self.api_key_env):
            raise ValueError(f"auth_type {self.auth_type!r} needs api_key or api_key_env")
        return self

    def auth(self) -> APIAuth:
        """The credentials; raises ``ValueError`` when ``api_key_env`` names an unset variable."""
        if self.auth_type == "none":
            return APIAuth()
        key = self.api_key
        if not key and self.api_key_env:
            key = os.environ.get(self.api_key_env, "")
            if not key:
                raise ValueError(f"the environment variable {self.api_key_env} (the API key) is not set")
        return APIAuth(
            self.auth_type,
            key or "",
            header=self.api_key_header,
            prefix=self.api_key_header_prefix,
            query_param=self.api_key_query_param,
        )

    def build(self, policy: NetworkPolicy = DEFAULT_POLICY) -> OpenAPIToolset:
        """The toolset, allowed to reach what ``policy`` and this source's ``allow_hosts`` allow."""
        if self.allow_hosts:
            policy = policy.union(NetworkPolicy.from_strings(self.allow_hosts))
        return OpenAPIToolset.from_file(
            self.spec,
            auth=self.auth(),
            policy=policy,
            server_url=self.server_url,
            timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
            include=self.include,
        )
