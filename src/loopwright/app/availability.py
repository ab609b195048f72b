"""Whether an app can serve a request: its current configuration, or :class:`AppUnavailableError`.

An app without a configuration version (or whose version is gone) cannot run a message, list its
parameters or take an upload; every such request is refused with the one message Dify gives.
"""

from __future__ import annotations

from loopwright.app.config import AppConfig
from loopwright.app.errors import AppUnavailableError
from loopwright.app.lookup import AppLookup

__all__ = ["current_config"]


async def current_config(lookup: AppLookup, app_id: str) -> AppConfig:
    """The app's newest configuration (as a new conversation would use it; see
    :meth:`AppLookup.latest_config`), or :class:`AppUnavailableError`."""
    version = await lookup.latest_config(app_id)
    if version is None:
        raise AppUnavailableError()
    return version.config
