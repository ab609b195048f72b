"""``A2ASource``: a remote A2A agent as it is written in an app's configuration."""

from __future__ import annotations

import os
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from loopwright.tools.a2a.agent import A2AAgent
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy


class A2ASource(BaseModel):
    """An agent's card URL (or its base URL: ``/.well-known/agent-card.json`` is added) and its bearer
    token: ``bearer_token``, or better the name of an environment variable in ``bearer_token_env``.
    ``name`` and ``description`` override the card's for the tool; ``allow_hosts`` adds to the global
    network allow-list, for an agent on a private address."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["a2a"] = "a2a"
    url: str = Field(min_length=1)
    bearer_token: SecretStr | None = None
    bearer_token_env: str | None = None
    name: str | None = None
    description: str = ""
    allow_hosts: list[str] = Field(default_factory=list)
    connect_timeout: float = Field(default=10.0, gt=0)
    read_timeout: float = Field(default=300.0, gt=0)

    @field_validator("url")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"url must be an absolute http(s) URL, got {value!r}")
        return value

    @field_validator("allow_hosts")
    @classmethod
    def _valid_hosts(cls, value: list[str]) -> list[str]:
        NetworkPolicy.from_strings(value)  # a ValueError names the bad entry
        return value

    def token(self) -> str | None:
        """The bearer token; raises ``ValueError`` when ``bearer_token_env`` names an unset variable."""
        if self.bearer_token is not None:
            return self.bearer_token.get_secret_value()
        if self.bearer_token_env:
            value = os.environ.get(self.bearer_token_env, "")
            if not value:
                raise ValueError(f"the environment variable {self.bearer_token_env} (the token) is not set")
            return value
        return None

    def build(self, policy: NetworkPolicy = DEFAULT_POLICY) -> A2AAgent:
        """The agent's tool, allowed to reach what ``policy`` and this source's ``allow_hosts`` allow."""
        if self.allow_hosts:
            policy = policy.union(NetworkPolicy.from_strings(self.allow_hosts))
        return A2AAgent(
            self.url,
            token=self.token(),
            policy=policy,
            name=self.name,
            description=self.description,
            timeout=httpx.Timeout(self.read_timeout, connect=self.connect_timeout),
        )
