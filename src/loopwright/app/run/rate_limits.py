"""Request-rate and concurrent-stream limits per app key and per end user (docs/security.md#limits).

Four numbers (``Settings.rate_limit_*`` / ``stream_limit_*``), each 0 (off, the default) or a limit:

- requests per minute of one app key, counted where the key is checked (``server.auth.current_app``
  and the A2A endpoint's own check): every keyed request of every wire;
- messages per minute of one end user of an app (the ``user`` of a chat message, the OpenAI
  ``user``, the A2A/MCP key's user), counted where a run starts (``AppRuntime.start``);
- streaming runs at once of one app key, and of one end user of an app, counted from the run's
  start to its end (which also comes when the client has gone away: the run ends on its own).

Minutes are fixed windows (the counter resets on the minute): cheap, and at worst twice the rate
across a window's edge. A refusal is :class:`TooManyRequestsError` (429 ``too_many_requests``, with
the seconds until the window turns as ``Retry-After``).

The counters are this process's. With several workers each counts its own share, so a limit holds
per worker; run one worker or divide the limit by the workers (docs/security.md says so).

The key a request came with is known to the server only; :data:`CALLER_KEY` carries its digest from
the key check to the run it starts (the same task), only while limits are on.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from loopwright.config import Settings
from loopwright.errors import UserInputError

__all__ = ["CALLER_KEY", "LimitSettings", "Limiter", "TooManyRequestsError", "key_digest"]

WINDOW_SECONDS = 60

# The digest of the app key of the request being served (set by the key check while limits are on).
CALLER_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar("loopwright_caller_key", default=None)


class TooManyRequestsError(UserInputError):
    """Over a rate or stream limit: 429 ``too_many_requests``, retry after ``retry_after`` seconds."""

    code = "too_many_requests"
    status = 429

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class LimitSettings:
    """The four limits; 0 is no limit."""

    key_requests_per_minute: int = 0
    user_requests_per_minute: int = 0
    key_streams: int = 0
    user_streams: int = 0

    @classmethod
    def of(cls, settings: Settings) -> LimitSettings:
        return cls(
            key_requests_per_minute=settings.rate_limit_per_key,
            user_requests_per_minute=settings.rate_limit_per_user,
            key_streams=settings.stream_limit_per_key,
            user_streams=settings.stream_limit_per_user,
        )

    @property
    def any(self) -> bool:
        return bool(
            self.key_requests_per_minute
            or self.user_requests_per_minute
            or self.key_streams
            or self.user_streams
        )


def key_digest(token: str) -> str:
    """What a key is counted under (never the key itself: counters may be listed, logged, stored)."""
    return hashlib.blake2b(token.encode(), digest_size=12).hexdigest()


class Limiter:
    """This process's counters. ``on`` is false when every limit is off: callers test it first, so
    the limits cost one attribute read per request then. ``clock`` (seconds, monotonic) is for tests."""

    def __init__(self, settings: LimitSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.on = settings.any
        self._clock = clock
        self._window = -1
        self._counts: dict[str, int] = {}  # scope -> requests in the current window
        self._streams: dict[str, int] = {}  # scope -> streams running now

    # --- rates --------------------------------------------------------------------------------------

    def request(self, digest: str) -> None:
        """One keyed request; raises :class:`TooManyRequestsError` past the key's rate."""
        limit = self.settings.key_requests_per_minute
        if limit:
            self._hit("key:" + digest, limit, "this app key")

    def _hit(self, scope: str, limit: int, who: str) -> None:
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        if window != self._window:  # a new minute: every scope starts again (and old ones go)
            self._window = window
            self._counts.clear()
        count = self._counts.get(scope, 0)
        if count >= limit:
            retry = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
            raise TooManyRequestsError(
                f"Too many requests: {who} is limited to {limit} requests a minute. "
                f"Please try again in {retry} seconds.",
                retry,
            )
        self._counts[scope] = count + 1

    # --- runs ---------------------------------------------------------------------------------------

    def start_run(self, app_id: str, user: str, streaming: bool) -> Callable[[], None] | None:
        """A run of ``user`` of ``app_id`` is about to start (with the key of :data:`CALLER_KEY`):
        counts the user's rate and, for a streaming run, the key's and the user's streams. Returns
        what to call when the run has ended (None when nothing was counted), or raises
        :class:`TooManyRequestsError` with nothing counted."""
        settings = self.settings
        user_scope = f"user:{app_id}:{user}"
        if settings.user_requests_per_minute:
            self._hit(user_scope, settings.user_requests_per_minute, "this end user")
        if not streaming:
            return None
        digest = CALLER_KEY.get()
        scopes = [(user_scope, settings.user_streams, "this end user")]
        if digest is not None:
            scopes.append(("key:" + digest, settings.key_streams, "this app key"))
        taken = [scope for scope, limit, _ in scopes if limit]
        for scope, limit, who in scopes:
            if limit and self._streams.get(scope, 0) >= limit:
                raise TooManyRequestsError(
                    f"Too many requests: {who} may have {limit} streams at once. "
                    "Please try again when one has ended.",
                    1,
                )
        if not taken:
            return None
        for scope in taken:
            self._streams[scope] = self._streams.get(scope, 0) + 1
        return lambda: self._release(taken)

    def _release(self, scopes: list[str]) -> None:
        for scope in scopes:
            left = self._streams.get(scope, 0) - 1
            if left > 0:
                self._streams[scope] = left
            else:
                self._streams.pop(scope, None)

    def streams(self, scope: str) -> int:
        """Streams running now under ``scope`` (``user:<app>:<user>`` or ``key:<digest>``)."""
        return self._streams.get(scope, 0)
