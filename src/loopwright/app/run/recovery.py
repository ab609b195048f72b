"""No half rows after a crash: messages left running by a process that died are marked interrupted.

Each process that runs messages (a server worker, a CLI run) holds a :class:`WorkerLease`: a row in
``workers`` whose heartbeat it renews every ``interval`` seconds while it lives. A message being
answered is ``running`` and names its worker; its result clears both. A process that is killed
(``kill -9``, a power cut) leaves its messages ``running`` under a heartbeat that stops; the next sweep
of any live process — at its start and at every beat — marks them ``error`` with a clear text
(``repositories.INTERRUPTED_ERROR``), keeping the thoughts already stored, and saves in them what
their streams' journal stored (``repositories.keep_streamed``: the answer a client was shown, the
thoughts it was shown that were not stored yet), so that the history says what the stream said. A
worker counts as dead once its heartbeat is ``stale_after`` old (three beats by default), so a busy
but live worker is never swept — or at once when it ran on this host and its process is gone (a
server restarted after a ``kill -9`` cleans up at its start, without waiting for the heartbeat to age).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Collection
from datetime import datetime, timedelta

from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.app.dify.events import EventHead
from loopwright.app.run.journal import EventJournal
from loopwright.store import repositories as repo
from loopwright.store import streams
from loopwright.store.db import Database
from loopwright.store.models import RunStream, utcnow

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL = 15.0  # seconds
OPEN_ATTEMPTS = 4  # tries to register this process before its first run gives up
OPEN_RETRY_DELAY = 0.1  # seconds before the second try, doubling after
# The durable executor's takeover (app.run.durable): (session, alive since, dead workers on this host) →
# the runs it handed on that this worker counts as its own meanwhile (task id, message id)
Takeover = Callable[[AsyncSession, datetime, Collection[str]], Awaitable[Collection[tuple[str, str]]]]


class WorkerLease:
    """This process's row in ``workers``: made by :meth:`open` (which also sweeps), renewed in the
    background, removed by :meth:`aclose`. ``clock`` is injectable for tests."""

    def __init__(
        self,
        db: Database,
        *,
        interval: float = HEARTBEAT_INTERVAL,
        stale_after: float | None = None,
        clock: Callable[[], datetime] = utcnow,
        journal: EventJournal | None = None,
        running: Callable[[], Collection[tuple[str, str]]] = tuple,
    ) -> None:
        self.id = str(uuid.uuid4())
        self._db = db
        self._interval = interval
        self._stale_after = timedelta(seconds=stale_after if stale_after is not None else 3 * interval)
        self._clock = clock
        self._journal = journal  # its streams: a dead process's are ended, old ones purged
        self._running = running  # (task id, message id) of the runs this process has now
        self._task: asyncio.Task[None] | None = None
        self._missed = False  # the last background beat failed (the database was away)
        self._opening: asyncio.Lock = asyncio.Lock()
        self.takeover: Takeover | None = None  # runs dead workers left are taken up, not marked
        # renewed at each beat, after this process's row: the stream leases of app.run.rate_limits
        self.renewals: list[Callable[[], Awaitable[None]]] = []

    @property
    def opened(self) -> bool:
        return self._task is not None

    async def open(self) -> None:
        """Register this process, sweep what dead ones left, and start the heartbeat (once)."""
        async with self._opening:
            if self._task is not None:
                return
            await self._first_beat()
            self._task = asyncio.get_running_loop().create_task(self._beat_forever())

    async def _first_beat(self) -> None:
        # The row must exist before this process runs anything (a running message of a worker without
        # a row is an orphan). Under heavy write load SQLite can keep its lock past the busy timeout;
        # a few tries ride that out instead of failing the run that opened the lease.
        for attempt in range(OPEN_ATTEMPTS):
            try:
                await self.beat()
                return
            except OperationalError:
                if attempt == OPEN_ATTEMPTS - 1:
                    raise
                log.warning("worker registration failed (database busy); trying again")
                await asyncio.sleep(OPEN_RETRY_DELAY * 2**attempt)

    async def beat(self, *, stale_is_dead: bool = True) -> int:
        """Renew this process's heartbeat and mark the running messages of dead ones interrupted;
        returns how many were marked. With ``stale_is_dead`` false, a worker whose heartbeat is stale
        is not taken for dead (only one whose process on this host is gone)."""
        now = self._clock()
        host, pid = socket.gethostname(), os.getpid()
        alive_since = now - self._stale_after if stale_is_dead else datetime.min
        async with self._db.transaction() as session:
            await repo.heartbeat(session, self.id, now, host=host, pid=pid)
            gone = [
                w.id for w in await repo.workers_on(session, host) if w.id != self.id and not _alive(w.pid)
            ]
            adopted = await self.takeover(session, alive_since, gone) if self.takeover else ()
            marked = await repo.interrupt_orphans(session, alive_since, gone)
            # read after the queued writes landed (the transaction began with them): a run that ended
            # since and is not yet saved gets its result written after this; one that is starting
            # may not be registered yet, so only runs older than a few beats count as lost
            running = [*self._running(), *adopted]
            settled = now - self._stale_after
            marked += await repo.interrupt_lost(session, self.id, [m for _, m in running], settled)
            ended: list[str] = []
            if self._journal is not None:
                tasks = [t for t, _ in running]
                ended = await streams.interrupt_streams(
                    session, interrupted_event, now, worker_id=self.id, running=tasks, started_before=settled
                )
                await streams.purge_streams(session, now - self._journal.retention)
        if ended and self._journal is not None:
            self._journal.wake(ended)
        for renew in self.renewals:
            await renew()
        if marked:
            log.warning("marked %d message(s) interrupted: their server process had stopped", marked)
        return marked

    async def aclose(self) -> None:
        """Stop the heartbeat and remove this process's row (its runs are saved by then)."""
        if self._task is None:
            return
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        async with self._db.transaction() as session:
            await repo.remove_worker(session, self.id)

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            await self._beat_in_background()

    async def _beat_in_background(self) -> None:
        """One beat of the heartbeat; a failure (the database down for a while) is tried again at the
        next beat. The first beat after a failed one takes no stale worker for dead: the other live
        workers could not beat either while the database was away, so after an outage longer than
        ``stale_after`` their leases look stale until they beat again (within one interval) — taken
        for dead, their running messages would be marked interrupted, their durable runs taken up by a
        second worker, while they still run them."""
        try:
            await self.beat(stale_is_dead=not self._missed)
        except Exception:
            self._missed = True
            log.exception("worker heartbeat failed; retrying in %.0f s", self._interval)
        else:
            self._missed = False


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def interrupted_event(stream: RunStream) -> dict[str, object]:
    """The ``error`` event that ends the stream of a run whose process died."""
    head = EventHead(stream.task_id, stream.message_id, stream.conversation_id, stream.message_created_at)
    return {
        **head.fields("error", task=False),
        "code": "internal_server_error",
        "message": repo.INTERRUPTED_ERROR,
        "status": 500,
    }
