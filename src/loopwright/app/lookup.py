"""What every request looks up, kept in memory: API keys, app configurations, end users.

A chat request used to read the key, the app's latest configuration and the end user from the
database (and write the key's last use) before its model could start — several transactions per
request, all serialised behind SQLite's single writer when hundreds arrive at once. These values
hardly ever change: a configuration version is immutable, an end user never changes once created,
and keys are only added. So they are cached here, with short lifetimes where a change made by
another process (the CLI adding a configuration version) must become visible.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from cachetools import LRUCache, TTLCache

from loopwright.app.config import AppConfig
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import App, EndUser, utcnow
from loopwright.store.models import AppConfig as AppConfigRow
from loopwright.store.revocations import RevocationCounter
from loopwright.store.writer import Insert

V = TypeVar("V")

# A known key is trusted this long without asking the database again — unless a revocation is heard
# first (store.revocations: every revoke, disable or delete is announced to every process at once)
KEY_TTL = 30.0
LATEST_CONFIG_TTL = 2.0  # a new configuration version saved elsewhere is seen within this
LAST_USED_EVERY = 60.0  # a key's last_used_at is written at most this often
ACCESS_TTL = 2.0  # how long an app's access switches are trusted (a disable is announced at once)


@dataclass(frozen=True, slots=True)
class KeyedApp:
    """The app an API key opens."""

    id: str
    name: str
    description: str
    mode: str


@dataclass(frozen=True, slots=True)
class AppAccess:
    """An app's access switches (Dify's ``status`` and ``enable_api``); ``exists`` is false once the
    app is deleted."""

    exists: bool
    status: str = "normal"
    enable_api: bool = True


@dataclass(frozen=True, slots=True)
class ConfigVersion:
    id: str
    config: AppConfig


class AppLookup:
    """Cached lookups over one database; one per process. ``clock`` (seconds, monotonic) times the
    caches' lifetimes and the key-use writes."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.db = db
        self._clock = clock
        self._keys: TTLCache[str, KeyedApp] = TTLCache(10_000, KEY_TTL, timer=clock)
        self._key_used: LRUCache[str, float] = LRUCache(10_000)
        self._configs: LRUCache[str, ConfigVersion] = LRUCache(1_000)  # versions never change
        self._latest: TTLCache[str, ConfigVersion] = TTLCache(10_000, LATEST_CONFIG_TTL, timer=clock)
        self._users: LRUCache[tuple[str, str], str] = LRUCache(100_000)  # an end user never changes
        self._access: TTLCache[str, AppAccess] = TTLCache(10_000, ACCESS_TTL, timer=clock)
        self._inflight: dict[tuple[str, ...], asyncio.Task[Any]] = {}
        self._revocations = RevocationCounter(db.url)  # SQLite's; PostgreSQL calls ``revoked``
        self._revocations_seen = self._revocations.read()
        self._generation = 0  # one more at every revocation: a read begun before one is not cached

    def revoked(self) -> None:
        """A key was revoked or an app disabled or deleted, here or in another process: drop every
        cached key and access switch, so the next request reads them again."""
        self._generation += 1
        self._keys.clear()
        self._access.clear()

    def _check_revocations(self) -> None:
        count = self._revocations.read()
        if count != self._revocations_seen:
            self._revocations_seen = count
            self.revoked()

    async def app_for_key(self, token: str) -> KeyedApp | None:
        """The app of an API key, or ``None`` for an unknown key (unknown keys are not cached, so a
        key created a moment ago works at once; a revoked one is refused at once)."""
        self._check_revocations()
        app = self._keys.get(token)
        if app is None:
            generation = self._generation
            app = await self._once(("key", token, str(generation)), self._find_key, token)
            if app is None:
                return None
            if generation == self._generation:
                self._keys[token] = app
        now = self._clock()
        if now - self._key_used.get(token, -LAST_USED_EVERY) >= LAST_USED_EVERY:
            self._key_used[token] = now
            self.db.writer.submit(repo.touch_api_key(token, utcnow()))
        return app

    async def _find_key(self, token: str) -> KeyedApp | None:
        async with self.db.sessionmaker() as session:
            row = await repo.find_app_by_key(session, token, touch=False)
            return None if row is None else KeyedApp(row.id, row.name, row.description, row.mode)

    async def access(self, app_id: str) -> AppAccess:
        """The app's access switches, as stored at most ``ACCESS_TTL`` ago (a switch flipped by the
        CLI in another process is announced, and takes effect at once: :meth:`revoked`)."""
        self._check_revocations()
        hit = self._access.get(app_id)
        if hit is None:
            generation = self._generation
            hit = await self._once(("access", app_id, str(generation)), self._find_access, app_id)
            if generation == self._generation:
                self._access[app_id] = hit
        return hit

    async def _find_access(self, app_id: str) -> AppAccess:
        async with self.db.sessionmaker() as session:
            row = await session.get(App, app_id)
            return AppAccess(False) if row is None else AppAccess(True, row.status, row.enable_api)

    async def config(self, config_id: str) -> ConfigVersion | None:
        """A configuration version by id (versions never change, so they stay cached)."""
        hit = self._configs.get(config_id)
        if hit is not None:
            return hit
        version = await self._once(("config", config_id), self._find_config, config_id)
        if version is not None:
            self._configs[config_id] = version
        return version

    async def _find_config(self, config_id: str) -> ConfigVersion | None:
        async with self.db.sessionmaker() as session:
            row = await session.get(AppConfigRow, config_id)
            return None if row is None else ConfigVersion(row.id, AppConfig.model_validate(row.config))

    async def latest_config(self, app_id: str) -> ConfigVersion | None:
        """The app's newest configuration version (seen within ``LATEST_CONFIG_TTL`` of its saving)."""
        hit = self._latest.get(app_id)
        if hit is not None:
            return hit
        version = await self._once(("latest", app_id), self._find_latest, app_id)
        if version is not None:
            self._configs[version.id] = version
            self._latest[app_id] = version
        return version

    async def _find_latest(self, app_id: str) -> ConfigVersion | None:
        async with self.db.sessionmaker() as session:
            row = await repo.latest_config(session, app_id)
            if row is None:
                return None
            return self._configs.get(row.id) or ConfigVersion(row.id, AppConfig.model_validate(row.config))

    def forget(self, app_id: str | None = None) -> None:
        """Drop the cached keys and access switches (all: a revoked key is refused at once) and the
        app's cached newest version (its new version is used at once) — after an admin change in this
        process."""
        self.revoked()
        if app_id is not None:
            self._latest.pop(app_id, None)

    def end_user_now(self, app_id: str, user: str) -> str | asyncio.Task[str]:
        """The end user's id if it is known here, else the (shared) task that finds or creates it —
        for a caller that can go on without it for a while."""
        hit = self._users.get((app_id, user))
        if hit is not None:
            return hit
        return asyncio.ensure_future(self.end_user_id(app_id, user))

    async def end_user_id(self, app_id: str, user: str) -> str:
        """The id of the end user a client's ``user`` string names in this app, created when new (the
        row is written behind; concurrent first requests of one user share one creation)."""
        hit = self._users.get((app_id, user))
        if hit is not None:
            return hit
        user_id: str = await self._once(("user", app_id, user), self._find_or_create_user, app_id, user)
        return user_id

    async def _once(self, key: tuple[str, ...], find: Callable[..., Awaitable[V]], *args: Any) -> V:
        """``await find(*args)``, shared by concurrent callers with the same ``key``: a burst of
        requests that all miss the cache makes one query, not one each. The query runs in its own
        task, so a caller that goes away does not cancel it for the others."""
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.ensure_future(find(*args))
            self._inflight[key] = task
            task.add_done_callback(functools.partial(self._landed, key))
        result: V = await asyncio.shield(task)
        return result

    def _landed(self, key: tuple[str, ...], task: asyncio.Task[Any]) -> None:
        del self._inflight[key]
        if not task.cancelled():
            task.exception()  # retrieved here: every waiter re-raises it; no "never retrieved" warning

    async def _find_or_create_user(self, app_id: str, user: str) -> str:
        async with self.db.sessionmaker() as session:
            row = await repo.find_end_user(session, app_id, user)
        if row is not None:
            user_id = row.id
        else:
            # the id every worker gives this user: two that see its first messages at once write
            # one row (the second insert does nothing), and their rows point to it
            user_id = repo.new_end_user_id(app_id, user)
            values = {"id": user_id, "app_id": app_id, "session_id": user, "created_at": utcnow()}
            self.db.writer.submit(Insert(EndUser, values, unless_present=True))
        # Cached before this task ends: a new user's row is written behind, so a lookup between the
        # task's end and a later cache write would find no row and create the user a second time.
        self._users[(app_id, user)] = user_id
        return user_id
