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

Where they are counted:

- **PostgreSQL** (:class:`SharedLimiter`): in the database, so a limit holds across every worker of
  it — one upserted counter row per scope and minute (one statement a request), and one lease row per
  stream and scope, renewed by the worker's heartbeat and expired (no longer counted) once its worker
  has stopped beating: a killed worker's streams are given back within ``LEASE_SECONDS``.
- **SQLite** (:class:`Limiter`): in this process's memory. A SQLite database is served by one process
  (its writers take turns on one lock for the whole file: a counter written on every request would
  queue each request behind every run's writes), so the process's own count is the count.

Nothing is read or written for a limit that is off; with every limit off (the default) a request
costs one attribute test (``Limiter.on``), on either database.

The key a request came with is known to the server only; :data:`CALLER_KEY` carries its digest from
the key check to the run it starts (the same task), only while limits are on.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from loopwright.app.run.recovery import HEARTBEAT_INTERVAL
from loopwright.config import Settings
from loopwright.errors import UserInputError
from loopwright.store import rate_counters
from loopwright.store.db import Database

__all__ = [
    "CALLER_KEY",
    "LEASE_SECONDS",
    "LimitSettings",
    "Limiter",
    "SharedLimiter",
    "TooManyRequestsError",
    "key_digest",
    "limiter_for",
]

log = logging.getLogger(__name__)

WINDOW_SECONDS = 60
# A stream lease lives this long past its worker's last heartbeat (three beats, as a worker's own row)
LEASE_SECONDS = 3 * HEARTBEAT_INTERVAL

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


def _rate_refused(who: str, limit: int, now: float, window: int) -> TooManyRequestsError:
    retry = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
    return TooManyRequestsError(
        f"Too many requests: {who} is limited to {limit} requests a minute. "
        f"Please try again in {retry} seconds.",
        retry,
    )


def _stream_refused(who: str, limit: int) -> TooManyRequestsError:
    return TooManyRequestsError(
        f"Too many requests: {who} may have {limit} streams at once. Please try again when one has ended.",
        1,
    )


def _stream_scopes(settings: LimitSettings, app_id: str, user: str) -> list[tuple[str, int, str]]:
    """The ``(scope, limit, who)`` a streaming run of ``user`` counts against (limits that are on)."""
    scopes = [(f"user:{app_id}:{user}", settings.user_streams, "this end user")]
    digest = CALLER_KEY.get()
    if digest is not None:
        scopes.append(("key:" + digest, settings.key_streams, "this app key"))
    return [scope for scope in scopes if scope[1]]


class Limiter:
    """This process's counters (SQLite). ``on`` is false when every limit is off: callers test it
    first, so the limits cost one attribute read per request then. ``clock`` (seconds) is for tests."""

    def __init__(self, settings: LimitSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.on = settings.any
        self._clock = clock
        self._window = -1
        self._counts: dict[str, int] = {}  # scope -> requests in the current window
        self._streams: dict[str, int] = {}  # scope -> streams running now

    # --- rates --------------------------------------------------------------------------------------

    async def request(self, digest: str) -> None:
        """One keyed request; raises :class:`TooManyRequestsError` past the key's rate."""
        limit = self.settings.key_requests_per_minute
        if limit:
            await self._hit("key:" + digest, limit, "this app key")

    async def _hit(self, scope: str, limit: int, who: str) -> None:
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        if window != self._window:  # a new minute: every scope starts again (and old ones go)
            self._window = window
            self._counts.clear()
        count = self._counts.get(scope, 0)
        if count >= limit:
            raise _rate_refused(who, limit, now, window)
        self._counts[scope] = count + 1

    # --- runs ---------------------------------------------------------------------------------------

    async def start_run(self, app_id: str, user: str, streaming: bool) -> Callable[[], None] | None:
        """A run of ``user`` of ``app_id`` is about to start (with the key of :data:`CALLER_KEY`):
        counts the user's rate and, for a streaming run, the key's and the user's streams. Returns
        what to call when the run has ended (None when nothing was counted), or raises
        :class:`TooManyRequestsError` with nothing counted."""
        settings = self.settings
        if settings.user_requests_per_minute:
            await self._hit(f"user:{app_id}:{user}", settings.user_requests_per_minute, "this end user")
        if not streaming:
            return None
        scopes = _stream_scopes(settings, app_id, user)
        if not scopes:
            return None
        return await self._take(scopes)

    async def _take(self, scopes: list[tuple[str, int, str]]) -> Callable[[], None]:
        for scope, limit, who in scopes:
            if self._streams.get(scope, 0) >= limit:
                raise _stream_refused(who, limit)
        taken = [scope for scope, _, _ in scopes]
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

    async def streams(self, scope: str) -> int:
        """Streams running now under ``scope`` (``user:<app>:<user>`` or ``key:<digest>``)."""
        return self._streams.get(scope, 0)

    async def renew(self) -> None:
        """A heartbeat of this process (nothing to renew in memory)."""


def _naive_utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


class SharedLimiter(Limiter):
    """The counters of every worker of a PostgreSQL database (``store.rate_counters``). ``clock`` is
    wall-clock seconds since the epoch (every worker's minutes must agree); tests inject it."""

    def __init__(self, db: Database, settings: LimitSettings, clock: Callable[[], float] = time.time) -> None:
        super().__init__(settings, clock)
        self._db = db
        self.worker = str(uuid.uuid4())  # whose leases the heartbeat renews
        self._releasing: set[asyncio.Task[None]] = set()

    async def _hit(self, scope: str, limit: int, who: str) -> None:
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        # one statement, no transaction around it
        async with self._db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            counted = await rate_counters.count_request(conn, scope, window, limit)
        if not counted:
            raise _rate_refused(who, limit, now, window)

    async def _take(self, scopes: list[tuple[str, int, str]]) -> Callable[[], None]:
        now = self._clock()
        lease = str(uuid.uuid4())
        limits = [(scope, limit) for scope, limit, _ in scopes]
        async with self._db.engine.begin() as conn:
            full = await rate_counters.take_streams(
                conn, lease, limits, self.worker, _naive_utc(now), _naive_utc(now + LEASE_SECONDS)
            )
        if full is not None:
            _, limit, who = scopes[full]
            raise _stream_refused(who, limit)
        return lambda: self._release_later(lease)

    def _release_later(self, lease: str) -> None:
        task = asyncio.get_running_loop().create_task(self._release_lease(lease))
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _release_lease(self, lease: str) -> None:
        try:
            async with self._db.engine.begin() as conn:
                await rate_counters.release_streams(conn, lease)
        except Exception:  # the lease expires on its own once no heartbeat renews it
            log.exception("could not give back a stream lease; it expires within %.0f s", LEASE_SECONDS)

    async def released(self) -> None:
        """Wait until the leases of ended runs are given back (tests)."""
        while self._releasing:
            await asyncio.gather(*self._releasing)

    async def streams(self, scope: str) -> int:
        async with self._db.engine.connect() as conn:
            return await rate_counters.streams_of(conn, scope, _naive_utc(self._clock()))

    async def renew(self) -> None:
        """This worker's heartbeat: its leases live ``LEASE_SECONDS`` more; expired leases and past
        minutes' counters are deleted."""
        now = self._clock()
        oldest = int(now // WINDOW_SECONDS) - 1
        async with self._db.engine.begin() as conn:
            await rate_counters.renew_streams(
                conn, self.worker, _naive_utc(now), _naive_utc(now + LEASE_SECONDS), oldest
            )


def limiter_for(db: Database, settings: LimitSettings) -> Limiter:
    """Counted in the database on PostgreSQL when a limit is on, else in this process."""
    if settings.any and db.engine.dialect.name == "postgresql":
        return SharedLimiter(db, settings)
    return Limiter(settings)
