"""Per-app concurrency (Dify's ``max_active_requests``): how many messages of one app may run at once
in this process. An app without a limit costs nothing here; one over its limit is refused before its
message is written, with Dify's text.
"""

from __future__ import annotations

from loopwright.errors import UserInputError


class AppInvokeQuotaExceededError(UserInputError):
    """Too many messages of this app are running (Dify's ``AppInvokeQuotaExceededError``)."""


class ActiveRequests:
    """The number of running messages of each app that has a limit."""

    def __init__(self) -> None:
        self._active: dict[str, int] = {}

    def enter(self, app_id: str, limit: int | None) -> bool:
        """Count one more running message of the app; False (nothing counted) for an app without a
        limit. Raises :class:`AppInvokeQuotaExceededError` when the app is at its limit."""
        if not limit:
            return False
        active = self._active.get(app_id, 0)
        if active >= limit:
            raise AppInvokeQuotaExceededError(
                "Too many requests. Please try again later. The current maximum concurrent requests "
                f"allowed for {app_id} is {limit}."
            )
        self._active[app_id] = active + 1
        return True

    def leave(self, app_id: str) -> None:
        """One running message of the app ended (after an :meth:`enter` that counted it)."""
        left = self._active.get(app_id, 0) - 1
        if left > 0:
            self._active[app_id] = left
        else:
            self._active.pop(app_id, None)

    def active(self, app_id: str) -> int:
        return self._active.get(app_id, 0)
