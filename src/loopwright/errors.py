"""The one root of loopwright's exceptions, and its branches.

Every error loopwright raises on purpose derives from :class:`LoopwrightError`, through the branch that
says whose fault it is. The server maps the branches (and a few precise classes) to Dify's error bodies
in one table (``server.errors``); anything else that escapes a request is a bug, answered as a 500
``internal_server_error`` without details — never as the client's fault.

Some classes also derive from a built-in (``ValueError``, ``LookupError``) where callers have long caught
those; the server never classifies by the built-in.
"""

from __future__ import annotations

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


class UserInputError(LoopwrightError, ValueError):
    """What the caller sent or configured is not acceptable (a 400 at the server)."""


class NotFoundError(UserInputError, LookupError):
    """What the caller named does not exist, or is not theirs (a 404 at the server)."""


class ModelError(LoopwrightError):
    """A model call failed (the provider, the network, the reply)."""


class ToolError(LoopwrightError):
    """A tool could not be built, validated or invoked."""


class AgentError(LoopwrightError):
    """The agent loop ended a run on purpose (an iteration cap, a repeated call, …)."""


class StorageError(LoopwrightError):
    """Reading or writing the database or a file store failed."""
