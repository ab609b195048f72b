"""``Authorization: Bearer app-…`` → the app the key belongs to (Dify's Service API keys)."""

from __future__ import annotations

from fastapi import Request

from loopwright.app.lookup import AppLookup, KeyedApp
from loopwright.server.errors import ApiError

AuthedApp = KeyedApp


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message)


async def current_app(request: Request) -> AuthedApp:
    """FastAPI dependency: the app of the request's API key, or 401."""
    header = request.headers.get("authorization")
    if header is None:
        raise unauthorized("Authorization header must be provided and start with 'Bearer'")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("Authorization scheme must be 'Bearer'")
    lookup: AppLookup = request.app.state.loopwright.lookup
    app = await lookup.app_for_key(token.strip())
    if app is None:
        raise unauthorized("Access token is invalid")
    return app
