"""What the server's routes share: the app runtime (``app.state.loopwright``), and the ``user`` checks."""

from __future__ import annotations

from fastapi import Request

from loopwright.app.run.runtime import AppRuntime
from loopwright.server.errors import invalid_param

MAX_NAME_CHARS = 255
DEFAULT_USER = "DEFAULT-USER"  # Dify's end user for calls that name none where ``user`` is optional


async def get_state(request: Request) -> AppRuntime:
    # async: FastAPI runs a plain-function dependency in a worker thread, a hop per request.
    runtime: AppRuntime = request.app.state.loopwright
    return runtime


def require_user(user: str | None) -> str:
    """The ``user`` field every Service API call carries (body or query)."""
    if user is None or not user.strip():
        raise invalid_param("user is required")
    if len(user) > MAX_NAME_CHARS:  # the column's size, as Dify's
        raise invalid_param(f"user must be at most {MAX_NAME_CHARS} characters")
    return user


def user_or_default(user: str | None) -> str:
    """The ``user`` of a route where Dify makes it optional (lists, rename, delete, upload): a
    missing or blank one is Dify's default end user, ``DEFAULT-USER``."""
    if user is None or not user.strip():
        return DEFAULT_USER
    return require_user(user)
