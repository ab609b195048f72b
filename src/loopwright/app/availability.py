"""Whether an app can serve a request: its access switches (:func:`check_access`, Dify's 403s) and
its current configuration (:func:`current_config`, or :class:`AppUnavailableError`).

An app without a configuration version (or whose version is gone) cannot run a message, list its
parameters or take an upload; every such request is refused with the one message Dify gives.
"""

from __future__ import annotations

from loopwright.app.config import AppConfig
from loopwright.app.errors import (
    API_DISABLED,
    APP_ABNORMAL,
    APP_GONE,
    AppForbiddenError,
    AppUnavailableError,
)
from loopwright.app.lookup import AppLookup

__all__ = ["check_access", "current_config"]


async def check_access(lookup: AppLookup, app_id: str) -> None:
    """:class:`AppForbiddenError` with Dify's message (and in Dify's order) when the app is gone,
    disabled or has its Service API turned off; nothing when it may serve."""
    access = await lookup.access(app_id)
    if not access.exists:
        raise AppForbiddenError(APP_GONE)
    if access.status != "normal":
        raise AppForbiddenError(APP_ABNORMAL)
    if not access.enable_api:
        raise AppForbiddenError(API_DISABLED)


async def current_config(lookup: AppLookup, app_id: str) -> AppConfig:
    """The app's newest configuration (as a new conversation would use it; see
    :meth:`AppLookup.latest_config`), or :class:`AppUnavailableError`."""
    version = await lookup.latest_config(app_id)
    if version is None:
        raise AppUnavailableError()
    return version.config
