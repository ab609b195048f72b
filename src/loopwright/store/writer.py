"""One in-process writer: database writes queued, batched into few transactions, applied in order.

Under many simultaneous runs, a transaction per write makes every request wait on the database —
SQLite takes one writer at a time and its busy handler sleeps between retries, so set-up writes of a
burst of requests queue for seconds. Here callers ``submit`` a write (a coroutine function over an
``AsyncSession``) and go on; one task drains the queue, runs everything pending in one transaction
and resolves each caller's future. A write that fails is retried alone, so it fails by itself and
never takes the rest of its batch down.

Order is kept: writes run in the order they were submitted, so a message row always lands before its
thought rows. ``settled(key)`` waits for the last write submitted under a key (a conversation id), and
``flush()`` for everything so far — readers use them to see their own writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

log = logging.getLogger("loopwright.store")

WriteOp = Callable[[AsyncSession], Awaitable[None]]
MAX_BATCH = 512


@dataclass(slots=True)
class _Pending:
    op: WriteOp
    done: asyncio.Future[None]
    key: str | None


class WriteBehind:
    """Queued writes over ``sessions``; start on first use, ``await close()`` to drain and stop."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], *, max_batch: int = MAX_BATCH) -> None:
        self._sessions = sessions
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
        self._last_by_key: dict[str, asyncio.Future[None]] = {}
        self._task: asyncio.Task[None] | None = None
        self._in_flight = 0
        self.batches = 0  # transactions committed, for benchmarks and tests

    @property
    def pending(self) -> int:
        """Writes submitted and not yet committed (or failed)."""
        return self._in_flight

    def submit(self, op: WriteOp, *, key: str | None = None) -> asyncio.Future[None]:
        """Queue ``op``; the returned future resolves when it is committed (or holds its error).
        Nobody has to await it: a failed write is logged either way."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain(), name="loopwright-db-writer")
        done: asyncio.Future[None] = loop.create_future()
        done.add_done_callback(_consume_error)
        self._queue.put_nowait(_Pending(op, done, key))
        self._in_flight += 1
        if key is not None:
            self._last_by_key[key] = done
            done.add_done_callback(functools.partial(self._forget, key))
        return done

    async def settled(self, key: str) -> None:
        """Wait until the writes submitted under ``key`` so far have landed (failed ones too)."""
        last = self._last_by_key.get(key)
        if last is not None:
            await asyncio.wait({last})

    async def flush(self) -> None:
        """Wait until every write submitted so far has landed (failed ones too)."""
        if self._in_flight == 0:
            return
        marker = self.submit(_nothing)
        await asyncio.wait({marker})

    async def close(self) -> None:
        """Apply what is queued, then stop the writer task."""
        await self.flush()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def _forget(self, key: str, fut: asyncio.Future[None]) -> None:
        if self._last_by_key.get(key) is fut:
            del self._last_by_key[key]

    async def _drain(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._apply(batch)
            finally:
                self._in_flight -= len(batch)

    async def _apply(self, batch: list[_Pending]) -> None:
        try:
            async with self._sessions() as session, session.begin():
                for item in batch:
                    await item.op(session)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if len(batch) == 1:
                _settle(batch[0], exc)
                return
            # One bad write rolled the batch back: apply each alone so only that one fails.
            for item in batch:
                await self._apply([item])
            return
        self.batches += 1
        for item in batch:
            _settle(item, None)


def _settle(item: _Pending, error: BaseException | None) -> None:
    if item.done.done():
        return
    if error is None:
        item.done.set_result(None)
    else:
        item.done.set_exception(error)


def _consume_error(fut: asyncio.Future[None]) -> None:
    # Retrieve the error so asyncio does not warn about an unretrieved exception, and log it once.
    if not fut.cancelled() and (exc := fut.exception()) is not None:
        log.error("database write failed: %s", exc, exc_info=exc)


async def _nothing(_session: AsyncSession) -> None:
    return None
