"""One in-process writer: database writes queued, batched into few transactions and statements.

Under many simultaneous runs, a transaction per write makes every request wait on the database —
SQLite takes one writer at a time and its busy handler sleeps between retries, so set-up writes of a
burst of requests queue for seconds. Here callers ``submit`` a write and go on; one task drains the
queue, applies everything pending in one transaction and resolves each caller's future. A write that
fails is retried alone, so it fails by itself and never takes the rest of its batch down.

A write is an :class:`Insert` or an :class:`Update` of one row (by primary key), or, for anything
else, a coroutine function over an ``AsyncSession``. Rows of one kind are written together, one
executemany per table — a batch of 500 thought rows is one statement, not 500. Within a batch:
inserts first, parents before children (tables in foreign-key order), then the functions in the order
they were submitted, then the updates, each table's in submission order. So a message row always
lands before its thoughts, and an update after the insert of its row.

``settled(key)`` waits for the last write submitted under a key (a conversation id), and ``flush()``
for everything so far — readers use them to see their own writes. ``hold(key)`` parks the writes of
a key until ``release(key, first…)``: a new conversation's rows wait for its end user's id (found by
a query that the model does not wait for), and the writes that depend on them wait behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, insert, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from loopwright.errors import StorageError
from loopwright.store.models import Base

log = logging.getLogger("loopwright.store")


@dataclass(frozen=True, slots=True)
class Insert:
    """A new row of ``model`` with these column values; with ``unless_present``, nothing when a row
    with the same unique key is there already (one another process wrote)."""

    model: type[Base]
    values: Mapping[str, Any]
    unless_present: bool = False


@dataclass(frozen=True, slots=True)
class Update:
    """New values for one row of ``model``; ``values`` include the primary key (``id``). Updates of a
    table that must keep their order have the same keys."""

    model: type[Base]
    values: Mapping[str, Any]


WriteFn = Callable[[AsyncSession], Awaitable[None]]
WriteOp = Insert | Update | WriteFn
MAX_BATCH = 512
# Parents before children, so that foreign keys hold inside a batch.
_TABLE_ORDER = {table.name: i for i, table in enumerate(Base.metadata.sorted_tables)}


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
        self._held: dict[str, list[_Pending]] = {}
        self._task: asyncio.Task[None] | None = None
        self._in_flight = 0
        self._shut = False  # closed for good (its database was closed): writes are refused
        self.batches = 0  # transactions committed, for benchmarks and tests

    @property
    def pending(self) -> int:
        """Writes submitted and not yet committed (or failed)."""
        return self._in_flight

    def submit(self, op: WriteOp, *, key: str | None = None) -> asyncio.Future[None]:
        """Queue ``op``; the returned future resolves when it is committed (or holds its error).
        Nobody has to await it: a failed write is logged either way."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        done.add_done_callback(_consume_error)
        if self._shut:
            # A task still running when its database was closed (and its event loop is ending): a
            # new writer would start a connection that outlives the loop.
            done.set_exception(DatabaseClosedError("the database is closed: the write was not applied"))
            return done
        if self._task is None or self._task.done():
            self._task = loop.create_task(self._drain(), name="loopwright-db-writer")
        item = _Pending(op, done, key)
        parked = self._held.get(key) if key is not None else None
        if parked is not None:
            parked.append(item)
        else:
            self._queue.put_nowait(item)
        self._in_flight += 1
        if key is not None:
            self._last_by_key[key] = done
            done.add_done_callback(functools.partial(self._forget, key))
        return done

    def hold(self, key: str) -> None:
        """Park the writes submitted under ``key`` from now until :meth:`release`."""
        self._held.setdefault(key, [])

    def release(self, key: str, *first: WriteOp) -> None:
        """Queue ``first`` under ``key``, then the writes parked under it, in their order."""
        parked = self._held.pop(key, [])
        for op in first:
            self.submit(op, key=key)
        for item in parked:
            self._queue.put_nowait(item)
        if parked:
            self._last_by_key[key] = parked[-1].done

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

    async def close(self, *, final: bool = False) -> None:
        """Apply what is queued, then stop the writer task (it starts again on the next write, unless
        ``final``: the database is being closed, and later writes are refused)."""
        await self.flush()
        self._shut = self._shut or final
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
                await _write(session, [item.op for item in batch])
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


async def _write(session: AsyncSession, ops: list[WriteOp]) -> None:
    inserts: dict[tuple[type[Base], bool], list[Mapping[str, Any]]] = {}
    updates: dict[type[Base], list[Mapping[str, Any]]] = {}
    functions: list[WriteFn] = []
    for op in ops:
        if isinstance(op, Insert):
            inserts.setdefault((op.model, op.unless_present), []).append(op.values)
        elif isinstance(op, Update):
            updates.setdefault(op.model, []).append(op.values)
        else:
            functions.append(op)
    for model, unless_present in sorted(inserts, key=_parents_first):
        rows = inserts[model, unless_present]
        await session.execute(
            insert_unless_present(session, model) if unless_present else insert(model), rows
        )
    for fn in functions:
        await fn(session)
        await session.flush()
    for model, rows in updates.items():
        for same_keys in _runs_of_same_keys(rows):
            await session.execute(update(model), same_keys)


def _parents_first(kind: tuple[type[Base], bool]) -> int:
    return _TABLE_ORDER.get(kind[0].__tablename__, len(_TABLE_ORDER))


def insert_unless_present(session: AsyncSession, target: type[Base] | Table) -> Any:
    """``INSERT … ON CONFLICT DO NOTHING`` into ``target`` (a model, or its table: the ORM's bulk
    insert costs more per row), in this database's dialect."""
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(target).on_conflict_do_nothing()
    return sqlite.insert(target).on_conflict_do_nothing()


def _runs_of_same_keys(rows: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """Consecutive rows with the same keys, together (one executemany each), in order."""
    runs: list[list[Mapping[str, Any]]] = []
    for row in rows:
        if runs and runs[-1][0].keys() == row.keys():
            runs[-1].append(row)
        else:
            runs.append([row])
    return runs


class DatabaseClosedError(StorageError):
    """A write submitted after its database was closed."""


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
