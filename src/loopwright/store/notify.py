"""PostgreSQL ``LISTEN``: one connection per process that hears the notifications of other processes
(new run events, stops: :mod:`loopwright.store.streams`) and hands each payload to a callback.

The connection is asyncpg's own (SQLAlchemy's pool has no use for a connection that only waits). When
it breaks — the database restarted, the network went away — it is opened again every ``retry``
seconds; ``on_reconnect`` then runs, since notifications sent meanwhile are lost (a reader re-reads
what it follows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import make_url

log = logging.getLogger("loopwright.store")

RETRY_INTERVAL = 1.0  # seconds between attempts to reconnect
CHECK_INTERVAL = 10.0  # seconds between checks that an idle connection still answers


def asyncpg_dsn(url: str) -> str:
    """asyncpg's DSN for a SQLAlchemy ``postgresql+asyncpg://`` URL."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class Listener:
    """``LISTEN`` on the channels of ``handlers`` (channel → callback taking the payload) until
    :meth:`aclose`."""

    def __init__(
        self,
        url: str,
        handlers: Mapping[str, Callable[[str], None]],
        *,
        on_reconnect: Callable[[], None] = lambda: None,
        retry: float = RETRY_INTERVAL,
    ) -> None:
        self._dsn = asyncpg_dsn(url)
        self._handlers = dict(handlers)
        self._on_reconnect = on_reconnect
        self._retry = retry
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()  # set while listening

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loopwright-listen")

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        first = True
        while True:
            try:
                await self._listen(first)
                first = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("listening for notifications failed (%s); retrying in %.0f s", exc, self._retry)
            self.connected.clear()
            await asyncio.sleep(self._retry)

    async def _listen(self, first: bool) -> None:
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(self._dsn, timeout=10)
        lost = asyncio.Event()
        try:
            conn.add_termination_listener(lambda _c: lost.set())
            for channel, handler in self._handlers.items():
                await conn.add_listener(channel, _callback(handler))
            self.connected.set()
            if not first:
                self._on_reconnect()
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), CHECK_INTERVAL)
                if not lost.is_set():
                    await asyncio.wait_for(conn.fetchval("SELECT 1"), CHECK_INTERVAL)
            raise ConnectionError("the listening connection was closed")
        finally:
            with contextlib.suppress(Exception):
                conn.terminate()


def _callback(handler: Callable[[str], None]) -> Callable[[Any, int, str, str], None]:
    def on_notification(_connection: Any, _pid: int, _channel: str, payload: str) -> None:
        try:
            handler(payload)
        except Exception:  # a bad payload must not stop the listener
            log.exception("handling a notification failed")

    return on_notification
