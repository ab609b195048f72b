"""``Authorization: Bearer app-…`` → the app the key belongs to (Dify's Service API keys)."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from loopwright.server.errors import ApiError
from loopwright.store import repositories as repo
from loopwright.store.db import Database


@dataclass(frozen=True, slots=True)
class AuthedApp:
    id: str
    name: str
    description: str
    mode: str


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
    db: Database = request.app.state.db
    async with db.transaction() as session:
        app = await repo.find_app_by_key(session, token.strip())
        if app is None:
            raise unauthorized("Access token is invalid")
        return AuthedApp(app.id, app.name, app.description, app.mode)
