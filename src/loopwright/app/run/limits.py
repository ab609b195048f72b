"""Per-app concurrency (Dify's ``max_active_requests``): how many messages of one app may run at once
in this process. An app without a limit costs nothing here; one over its limit is refused before its
message is written, with Dify's text.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from loopwright.app.run.runs import Run
from loopwright.errors import UserInputError


class AppInvokeQuotaExceededError(UserInputError):
    """Too many messages of this app are running (Dify's ``AppInvokeQuotaExceededError``)."""

    code = "too_many_requests"
    status = 429


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

    @contextlib.contextmanager
    def counted(self, app_id: str, limit: int | None) -> Iterator[Count]:
        """Count a message of ``app_id`` while its run is being started: left again if starting it
        fails, or once the run it started has ended (``count.until(run)``)."""
        count = Count(self, app_id if self.enter(app_id, limit) else None)
        try:
            yield count
        except BaseException:
            count.leave()
            raise

    def leave(self, app_id: str) -> None:
        """One running message of the app ended (after an :meth:`enter` that counted it)."""
        left = self._active.get(app_id, 0) - 1
        if left > 0:
            self._active[app_id] = left
        else:
            self._active.pop(app_id, None)

    def active(self, app_id: str) -> int:
        return self._active.get(app_id, 0)


class Count:
    """One counted message (``ActiveRequests.counted``); ``app_id`` None: the app has no limit."""

    __slots__ = ("_active", "app_id")

    def __init__(self, active: ActiveRequests, app_id: str | None) -> None:
        self._active = active
        self.app_id = app_id

    def until(self, run: Run) -> None:
        """Keep the count until ``run`` has ended."""
        run.on_end(self.leave)

    def leave(self) -> None:
        if self.app_id is not None:
            app_id, self.app_id = self.app_id, None
            self._active.leave(app_id)
