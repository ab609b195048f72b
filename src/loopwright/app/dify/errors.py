"""Dify's error fields of an exception: ``(code, status, message)``, for an HTTP error body and for a
stream's ``error`` event alike.

Each of loopwright's exceptions says how it is answered (``loopwright.errors``: its ``status``,
``code``, whether its message is shown, or Dify's fixed words for it); anything else — a bug — is a 500
``internal_server_error`` with Dify's generic message and no details, never the client's fault.
"""

from __future__ import annotations

from loopwright.errors import LoopwrightError

INTERNAL_MESSAGE = "Internal Server Error, please contact support."

__all__ = ["INTERNAL_MESSAGE", "error_fields"]


def error_fields(exc: BaseException) -> tuple[str, int, str]:
    """``(code, status, message)`` of an exception (see the module's docstring)."""
    if not isinstance(exc, LoopwrightError):
        return "internal_server_error", 500, INTERNAL_MESSAGE
    kind = type(exc)
    if kind.fixed_message is not None:
        return kind.code, kind.status, kind.fixed_message
    return kind.code, kind.status, str(exc) if kind.shows_message else INTERNAL_MESSAGE
