"""Errors a model provider raises: what went wrong, in words meant for the user.

Every provider turns its SDK's or server's failures into one of these, so a caller can tell a bad key
from an unreachable server without knowing which provider it talks to. They are all
:class:`~loopwright.model.base.ModelError`\\ s; ``status_code`` is the HTTP status when there was one.
Messages never contain an API key.
"""

from __future__ import annotations

from loopwright.model.base import ModelError


class ProviderError(ModelError):
    """A model call failed at the provider; ``status_code`` is the HTTP status, if any."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ModelAuthError(ProviderError):
    """The server rejected the API key (401), or the key may not use this model (403)."""


class ModelRateLimitError(ProviderError):
    """Too many requests or tokens for the account (429), or its quota is used up."""


class ContextTooLongError(ProviderError):
    """The prompt (plus the requested completion) does not fit the model's context window."""


class ModelNotFoundError(ProviderError):
    """The server does not know the model (404) — or the base URL does not point at the API root."""


class ModelUnavailableError(ProviderError):
    """The server could not be reached (connection refused, DNS, timeout) or failed (5xx)."""


class ModelRequestError(ProviderError):
    """The server rejected the request for another reason (other 4xx); the message is the server's."""


__all__ = [
    "ContextTooLongError",
    "ModelAuthError",
    "ModelNotFoundError",
    "ModelRateLimitError",
    "ModelRequestError",
    "ModelUnavailableError",
    "ProviderError",
]
