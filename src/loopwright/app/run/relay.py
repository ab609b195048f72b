"""What the processes serving one database tell each other: new run events, and stops.

A run lives in the process that started it, but any process may be asked to stop it or to follow
its stream. On PostgreSQL each process keeps one ``LISTEN`` connection (``store.notify``): a stop
that reaches a process without the run is a ``NOTIFY`` that the process running it hears at once —
nothing polls —, a revoked key or disabled app (``store.revocations``) is dropped from every
process's cache, new run events reach the followers of those streams in the notification itself, and
a follower's request for a stream makes the process running it write that stream with the short
interval (``app.run.journal``). Several ``loopwright serve`` processes, on several hosts, can thus
share one PostgreSQL.

SQLite has no notifications, and its processes are on one host (``loopwright serve --workers N``):
there a stop is marked on the stream's row and the process running it looks for marks on its runs
every :data:`STOP_POLL_INTERVAL` while it has runs (only with several workers), followers poll, and
with several workers every stream is written with the short interval (nobody could ask for it).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection

from loopwright.app.run.journal import EventJournal
from loopwright.store import revocations, streams
from loopwright.store.db import Database
from loopwright.store.notify import Listener

log = logging.getLogger("loopwright.app")

STOP_POLL_INTERVAL = 0.5  # seconds between looks for stops of this worker's runs (SQLite, N workers)

StopHandler = Callable[[str, str, str], bool]  # (task_id, app_id, user) → whether it was here


class Relay:
    """This process's side of the relay (see the module's docstring); ``workers``: how many processes
    serve the database on SQLite (stops are only looked for when there are several)."""

    def __init__(self, db: Database, journal: EventJournal, *, workers: int = 1) -> None:
        self.db = db
        self.journal = journal
        self.notified = db.engine.dialect.name == "postgresql"
        # SQLite with several workers: the process running a run looks for stops marked on it
        self.stop_poll_interval: float | None = None
        if not self.notified and workers > 1:
            self.stop_poll_interval = STOP_POLL_INTERVAL
            journal.follow_all = True  # a follower in another process cannot say it follows
        self.on_stop: StopHandler = lambda _t, _a, _u: False  # the executor's local stop
        self.on_revoked: Callable[[], None] = lambda: None  # the lookup's cache forgets keys and access
        self._listener: Listener | None = None

    def start(self) -> None:
        """Listen for the other processes (PostgreSQL; once, from a running event loop)."""
        if self.notified and self._listener is None:
            self._listener = Listener(
                self.db.url,
                {
                    streams.EVENTS_CHANNEL: self.journal.heard_notification,
                    streams.FOLLOWS_CHANNEL: self.journal.mark_followed,
                    streams.STOPS_CHANNEL: self._stop,
                    revocations.CHANNEL: lambda _payload: self.on_revoked(),
                },
                on_reconnect=self._reconnected,
            )
            self._listener.start()

    async def aclose(self) -> None:
        if self._listener is not None:
            await self._listener.aclose()
            self._listener = None

    def request_stop(self, task_id: str, app_id: str, user: str) -> None:
        """Ask the process running ``task_id`` to stop it (it checks app and user, as a local stop)."""
        if self.notified or self.stop_poll_interval is not None:
            self.db.writer.submit(streams.request_stop(task_id, app_id, user))

    async def take_stops(self, task_ids: Collection[str]) -> None:
        """Stop the runs among ``task_ids`` that another process marked (SQLite)."""
        if not task_ids:
            return
        async with self.db.sessionmaker() as session, session.begin():
            marked = await streams.take_stops(session, task_ids)
        for task_id, app_id, user in marked:
            self.on_stop(task_id, app_id, user)

    def _reconnected(self) -> None:
        """Notifications sent while the connection was down are lost: followers re-read, and every
        cached key and access switch is read again (one may have been revoked meanwhile)."""
        self.journal.wake_all()
        self.on_revoked()

    def _stop(self, payload: str) -> None:
        stop = json.loads(payload)
        self.on_stop(str(stop["task_id"]), str(stop["app_id"]), str(stop["user"]))
