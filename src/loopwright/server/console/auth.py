"""The admin token: ``Authorization: Bearer <token>`` on every admin API request, compared in
constant time (``hmac.compare_digest`` of SHA-256 digests, so not even the token's length shows), so a
wrong guess learns nothing from the answer's timing."""

from __future__ import annotations

import hashlib
import hmac

from fastapi import FastAPI, Request

from loopwright.server.auth import bearer_token, unauthorized

_STATE_KEY = "console_token"


def set_token(app: FastAPI, token: str) -> None:
    setattr(app.state, _STATE_KEY, _digest(token))


async def require_admin(request: Request) -> None:
    """FastAPI dependency: the request carries the admin token, or 401."""
    expected: bytes = getattr(request.app.state, _STATE_KEY)
    if not hmac.compare_digest(_digest(bearer_token(request)), expected):
        raise unauthorized("Admin token is invalid")


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()
