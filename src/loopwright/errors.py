"""The one root of loopwright's exceptions, and its branches.

Every error loopwright raises on purpose derives from :class:`LoopwrightError`, through the branch that
says whose fault it is. Each class says how the HTTP API answers it — Dify's error body ``{"code",
"message", "status"}``: its ``status`` and ``code`` (a subclass overrides its branch's), and whether
the client sees its own message (``shows_message``; a class with a ``fixed_message`` always shows
that). ``app.dify.errors.error_fields`` reads them, for responses and for a stream's ``error`` event
alike; anything else that escapes a request is a bug, answered as a 500 ``internal_server_error``
without details — never as the client's fault.

Some classes also derive from a built-in (``ValueError``, ``LookupError``) where callers have long caught
those; the server never classifies by the built-in.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AgentError",
    "LoopwrightError",
    "ModelError",
    "NotFoundError",
    "StorageError",
    "ToolError",
    "UserInputError",
]


class LoopwrightError(Exception):
    """The root of every error loopwright raises on purpose."""

    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_server_error"
    shows_message: ClassVar[bool] = False  # False: Dify's generic message (the error is logged)
    fixed_message: ClassVar[str | None] = None  # Dify's own words for this error, whatever it says


class UserInputError(LoopwrightError, ValueError):
    """What the caller sent or configured is not acceptable (a 400 at the server)."""

    status = 400
    code = "invalid_param"
    shows_message = True


class NotFoundError(UserInputError, LookupError):
    """What the caller named does not exist, or is not theirs (a 404 at the server)."""

    status = 404
    code = "not_found"


class ModelError(LoopwrightError):
    """A model call failed (the provider, the network, the reply)."""

    status = 400
    code = "completion_request_error"
    shows_message = True


class ToolError(LoopwrightError):
    """A tool could not be built, validated or invoked."""


class AgentError(LoopwrightError):
    """The agent loop ended a run on purpose (an iteration cap, a repeated call, …). Dify hides these
    behind its generic message; ours say what happened."""

    shows_message = True


class StorageError(LoopwrightError):
    """Reading or writing the database or a file store failed."""
