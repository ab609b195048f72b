"""``Authorization: Bearer …``: an app's Service API key (``app-…``) → the app it opens; a dataset API
key (``dataset-…``) → access to the Knowledge API. Anything else is a 401 with Dify's message."""

from __future__ import annotations

import dataclasses
from typing import Annotated

from fastapi import Depends, Request

from loopwright.app.admin import datasets
from loopwright.app.availability import check_access, current_config
from loopwright.app.lookup import KeyedApp
from loopwright.app.run.rate_limits import CALLER_KEY, key_digest
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.errors import ApiError
from loopwright.server.state import get_state

AuthedApp = KeyedApp


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message)


def bearer_token(request: Request) -> str:
    """The request's bearer token, or 401."""
    header = request.headers.get("authorization")
    if header is None:
        raise unauthorized("Authorization header must be provided and start with 'Bearer'")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise unauthorized("Authorization scheme must be 'Bearer'")
    return token.strip()


async def current_app(request: Request, state: Annotated[AppRuntime, Depends(get_state)]) -> AuthedApp:
    """FastAPI dependency: the app of the request's API key, or 401; 403 (Dify's texts) when the app
    is disabled or its Service API is off."""
    token = bearer_token(request)
    app = await state.lookup.app_for_key(token)
    if app is None:
        raise unauthorized("Access token is invalid")
    await check_access(state.lookup, app.id)
    if state.limiter.on:
        await count_request(state, token)
    return app


async def app_with_mode(
    app: Annotated[AuthedApp, Depends(current_app)], state: Annotated[AppRuntime, Depends(get_state)]
) -> AuthedApp:
    """FastAPI dependency: :func:`current_app` with the app's kind (``mode``) as its current
    configuration says — what the routes that differ by kind (chat, completion) read."""
    config = await current_config(state.lookup, app.id)
    return app if app.mode == config.mode else dataclasses.replace(app, mode=config.mode)


async def count_request(state: AppRuntime, token: str) -> None:
    """One request of the key ``token`` against its rate (429 past it); the key's digest goes with
    the request to the run it may start (its streams are counted there: app.run.rate_limits)."""
    digest = key_digest(token)
    CALLER_KEY.set(digest)
    await state.limiter.request(digest)


async def dataset_key(request: Request, state: Annotated[AppRuntime, Depends(get_state)]) -> str:
    """FastAPI dependency: a valid dataset API key, or 401."""
    token = bearer_token(request)
    if not await datasets.key_is_valid(state.knowledge(), token):
        raise unauthorized("Access token is invalid")
    return token
