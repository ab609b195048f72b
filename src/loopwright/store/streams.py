"""Run streams in the database: their rows, their event chunks, and the notifications that tell
other processes about new chunks, followers and stops (``app.run.journal``, ``app.run.relay``).

On PostgreSQL every write of chunks also sends ``NOTIFY`` on :data:`EVENTS_CHANNEL` in the same
transaction, so a listener hears of them only once they are committed. The notification carries the
chunks themselves (:func:`notification`), so that a follower in another process needs no read for a
live event: the writing process's id, then per chunk ``task_id first_seq last_seq final items`` (the
items as stored, a JSON list), separated by ``\x1e`` (which JSON never holds unescaped); a chunk too
large for PostgreSQL's 8,000 bytes goes without its items (the follower reads it). A listener splits a
payload and parses only the chunks of streams it follows. A follower in another process asks for its
stream with a ``NOTIFY`` on :data:`FOLLOWS_CHANNEL` (the task id); a stop asked of a run in another
process is a ``NOTIFY`` on :data:`STOPS_CHANNEL`. SQLite has no notifications: the chunks are polled,
and a stop is written on the stream's row (``stop_user``) for the process running it to find.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store.models import PendingApproval, RunEvent, RunStream, Worker
from loopwright.store.writer import WriteFn, insert_unless_present

__all__ = [
    "EVENTS_CHANNEL",
    "FOLLOWS_CHANNEL",
    "STOPS_CHANNEL",
    "Chunk",
    "Item",
    "Seen",
    "chunks_after",
    "chunks_of_messages",
    "get_stream",
    "interrupt_streams",
    "notification",
    "notifies",
    "parse_notification",
    "purge_streams",
    "reopen_stream",
    "request_follow",
    "request_stop",
    "seen_by_client",
    "take_stops",
    "write_chunks",
]

EVENTS_CHANNEL = "loopwright_run_events"
FOLLOWS_CHANNEL = "loopwright_follows"
STOPS_CHANNEL = "loopwright_stops"
MAX_NOTIFY_PAYLOAD = 7900  # PostgreSQL's limit is 8000 bytes
SEPARATOR = "\x1e"  # between the parts of a notification; JSON escapes it inside strings

Item = str | dict[str, Any]  # an agent_message delta's text, or another event's payload


@dataclass(frozen=True, slots=True)
class Chunk:
    """Consecutive events of one stream, numbered ``first_seq`` to ``last_seq`` (an empty final chunk
    has ``last_seq = first_seq - 1``); ``items`` None: heard of without its events (too large for a
    notification), read them."""

    task_id: str
    first_seq: int
    last_seq: int
    items: list[Item] | None
    final: bool


_RUN_EVENTS = RunEvent.metadata.tables[RunEvent.__tablename__]
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def notifies(session: AsyncSession) -> bool:
    """Whether this database sends notifications (PostgreSQL)."""
    bind = session.bind
    return bind is not None and bind.dialect.name == "postgresql"


async def _notify(session: AsyncSession, channel: str, payloads: Sequence[str]) -> None:
    for payload in payloads:
        await session.execute(select(func.pg_notify(channel, payload)))


def _size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode())


def notification(origin: str, chunks: Sequence[Chunk], texts: Sequence[str]) -> list[str]:
    """The payloads telling other processes of ``chunks`` (their items as stored: ``texts``), each
    under PostgreSQL's size limit (see the module's docstring)."""
    out: list[str] = []
    current = [origin]
    size = _size(origin)
    for chunk, text in zip(chunks, texts, strict=True):
        head = f"{chunk.task_id} {chunk.first_seq} {chunk.last_seq} {int(chunk.final)}"
        record = f"{head} {text}"
        length = _size(record)
        if length + len(origin) + 1 > MAX_NOTIFY_PAYLOAD:
            record, length = head, _size(head)  # too large: the follower reads it
        if len(current) > 1 and size + length + 1 > MAX_NOTIFY_PAYLOAD:
            out.append(SEPARATOR.join(current))
            current, size = [origin], _size(origin)
        current.append(record)
        size += length + 1
    if len(current) > 1:
        out.append(SEPARATOR.join(current))
    return out


def parse_notification(payload: str, origin: str, wanted: Container[str]) -> list[Chunk]:
    """The chunks of the streams in ``wanted`` that a notification tells of, unless it is
    ``origin``'s own (see :func:`notification`)."""
    parts = payload.split(SEPARATOR)
    if len(parts) < 2 or parts[0] == origin:
        return []
    out = []
    for record in parts[1:]:
        task_id, _, rest = record.partition(" ")
        if task_id not in wanted:
            continue
        fields = rest.split(" ", 3)
        items = json.loads(fields[3]) if len(fields) > 3 else None
        out.append(Chunk(task_id, int(fields[0]), int(fields[1]), items, fields[2] == "1"))
    return out


def write_chunks(
    chunks: Sequence[Chunk],
    now: datetime,
    *,
    origin: str | None = None,
    announced: Sequence[Chunk] | None = None,
) -> WriteFn:
    """A write that stores event chunks, marks the streams whose final chunk is among them as ended,
    and tells listeners of the ``announced`` ones (default: all) on PostgreSQL, when ``origin`` — the
    writing process's id — is given."""
    texts = [_dumps(c.items) for c in chunks]
    if announced is None or len(announced) == len(chunks):
        told, told_texts = chunks, texts
    else:
        wanted = {id(c) for c in announced}
        pairs = [(c, t) for c, t in zip(chunks, texts, strict=True) if id(c) in wanted]
        told, told_texts = [c for c, _ in pairs], [t for _, t in pairs]
    rows = [
        {
            "task_id": c.task_id,
            "first_seq": c.first_seq,
            "last_seq": c.last_seq,
            "items": text,
            "final": c.final,
            "created_at": now,
        }
        for c, text in zip(chunks, texts, strict=True)
    ]
    ended = [c.task_id for c in chunks if c.final]

    async def write(session: AsyncSession) -> None:
        # A chunk already there (a stream the sweep ended while its worker was only slow) is skipped,
        # not allowed to fail the other streams' chunks.
        await session.execute(insert_unless_present(session, _RUN_EVENTS), rows)
        if ended:
            await session.execute(
                update(RunStream).where(RunStream.task_id.in_(ended)).values(ended_at=now, stop_user=None)
            )
        if notifies(session) and origin is not None and told:
            await _notify(session, EVENTS_CHANNEL, notification(origin, told, told_texts))

    return write


async def get_stream(session: AsyncSession, task_id: str) -> RunStream | None:
    return await session.get(RunStream, task_id)


async def reopen_stream(session: AsyncSession, task_id: str) -> int | None:
    """Make the stream of a message that paused go on: its end is taken back (an empty last chunk
    deleted, the last one's ``final`` cleared, the row not ended); the number of its last event, or
    None when it has no stream (the journal was off, or it was purged). Commits."""
    if await session.get(RunStream, task_id) is None:
        return None
    await session.execute(
        delete(RunEvent).where(RunEvent.task_id == task_id, RunEvent.last_seq < RunEvent.first_seq)
    )
    await session.execute(update(RunEvent).where(RunEvent.task_id == task_id).values(final=False))
    await session.execute(update(RunStream).where(RunStream.task_id == task_id).values(ended_at=None))
    last = await session.scalar(select(func.max(RunEvent.last_seq)).where(RunEvent.task_id == task_id))
    await session.commit()
    return int(last or 0)


async def chunks_after(session: AsyncSession, task_id: str, after: int) -> list[RunEvent]:
    """The chunks of a stream holding events numbered above ``after``, and its final chunk (which may
    hold none, or only events at or below ``after``: a client that saw events never stored before its
    worker died learns that the stream ended), in order."""
    query = (
        select(RunEvent)
        .where(
            RunEvent.task_id == task_id,
            (RunEvent.last_seq > after) | (RunEvent.first_seq > after) | RunEvent.final,
        )
        .order_by(RunEvent.first_seq)
    )
    return list(await session.scalars(query))


@dataclass(slots=True)
class Seen:
    """What a Dify client shows after some events of a stream (:func:`seen_by_client`): ``answer``, the
    text of the ``agent_message`` deltas and ``message`` events concatenated, a ``message_replace``
    starting it again from its answer; ``thoughts``, the last ``agent_thought`` payload of each thought
    id, in the order the ids were announced; ``text_after``, whether text came after the events read
    (when told to stop at one)."""

    answer: str = ""
    thoughts: dict[str, dict[str, Any]] = field(default_factory=dict)
    text_after: bool = False


def seen_by_client(chunks: Iterable[RunEvent], upto: int | None = None) -> Seen:
    """What a client of a stream shows after its stored ``chunks`` (in order: :func:`chunks_after`,
    :func:`chunks_of_messages`) — up to the event numbered ``upto`` when given (``Seen.text_after``
    then tells whether text followed). An event stored twice (in two chunks) counts once."""
    seen = Seen()
    done = 0
    for chunk in chunks:
        for i, item in enumerate(json.loads(chunk.items)):
            seq = chunk.first_seq + i
            if seq <= done:
                continue  # a chunk stored twice
            done = seq
            if upto is not None and seq > upto:
                seen.text_after = seen.text_after or _text_of(item) is not None
                continue
            _show(seen, item)
    return seen


def _text_of(item: Item) -> str | None:
    """The text an event adds to the answer shown, if it adds any."""
    if isinstance(item, str):  # an agent_message delta
        return item
    if item.get("event") == "message":  # a direct answer (a moderation's or an annotation's)
        return str(item.get("answer", ""))
    return None


def _show(seen: Seen, item: Item) -> None:
    text = _text_of(item)
    if text is not None:
        seen.answer += text
    elif isinstance(item, dict) and item.get("event") == "message_replace":
        seen.answer = str(item.get("answer", ""))
    elif isinstance(item, dict) and item.get("event") == "agent_thought" and isinstance(item.get("id"), str):
        seen.thoughts[item["id"]] = item


async def chunks_of_messages(
    session: AsyncSession, message_ids: Collection[str]
) -> dict[str, list[RunEvent]]:
    """The stored chunks of each of these messages' stream (its latest, should it have more than
    one), in order, by message id: one read of the streams, one of their chunks — only these
    messages' (a message without a stream has no key)."""
    if not message_ids:
        return {}
    rows = await session.execute(
        select(RunStream.task_id, RunStream.message_id)
        .where(RunStream.message_id.in_(list(message_ids)))
        .order_by(RunStream.started_at, RunStream.task_id)
    )
    latest = {message_id: task_id for task_id, message_id in rows.all()}  # the last one wins
    if not latest:
        return {}
    message_of = {task_id: message_id for message_id, task_id in latest.items()}
    query = (
        select(RunEvent)
        .where(RunEvent.task_id.in_(list(message_of)))
        .order_by(RunEvent.task_id, RunEvent.first_seq)
    )
    out: dict[str, list[RunEvent]] = {}
    for chunk in await session.scalars(query):
        out.setdefault(message_of[chunk.task_id], []).append(chunk)
    return out


async def interrupt_streams(
    session: AsyncSession,
    final_item: Callable[[RunStream], Mapping[str, Any]],
    now: datetime,
    *,
    worker_id: str | None = None,
    running: Collection[str] = (),
    started_before: datetime | None = None,
) -> list[str]:
    """End every stream still open whose process is gone (no row in ``workers``: call it after the
    sweep removed the dead ones) — and those of ``worker_id`` (this live process) that it no longer
    runs (``running``: the task ids it runs; their end could not be written), started before
    ``started_before`` — with one final chunk holding ``final_item(stream)``; returns their task ids."""
    gone = RunStream.worker_id.is_(None) | RunStream.worker_id.not_in(select(Worker.id))
    if worker_id is not None:
        lost = (RunStream.worker_id == worker_id) & RunStream.task_id.not_in(list(running))
        if started_before is not None:
            lost = lost & (RunStream.started_at < started_before)
        gone = gone | lost
    open_streams = select(RunStream).where(RunStream.ended_at.is_(None), gone)
    orphans = list(await session.scalars(open_streams))
    if not orphans:
        return []
    ids = [s.task_id for s in orphans]
    latest = (
        select(RunEvent.task_id, func.max(RunEvent.last_seq))
        .where(RunEvent.task_id.in_(ids))
        .group_by(RunEvent.task_id)
    )
    last = {task_id: seq for task_id, seq in (await session.execute(latest)).all()}
    # a message paused for approvals was not interrupted: its stream just ends (a decision reopens it)
    waiting = set(
        await session.scalars(select(PendingApproval.task_id).where(PendingApproval.task_id.in_(ids)))
    )
    chunks = []
    for stream in orphans:
        seq = int(last.get(stream.task_id) or 0) + 1
        if stream.task_id in waiting:
            chunks.append(Chunk(stream.task_id, seq, seq - 1, [], True))
        else:
            chunks.append(Chunk(stream.task_id, seq, seq, [dict(final_item(stream))], True))
    await write_chunks(chunks, now, origin="sweep")(session)
    return ids


async def purge_streams(session: AsyncSession, ended_before: datetime) -> int:
    """Forget the streams that ended before ``ended_before`` (their chunks go with them)."""
    old = select(RunStream.task_id).where(RunStream.ended_at < ended_before)
    await session.execute(delete(RunEvent).where(RunEvent.task_id.in_(old)))
    result = await session.execute(delete(RunStream).where(RunStream.ended_at < ended_before))
    return int(result.rowcount or 0)  # type: ignore[attr-defined]


def request_follow(task_id: str) -> WriteFn:
    """A write telling the process that runs ``task_id`` that someone follows it (PostgreSQL)."""

    async def write(session: AsyncSession) -> None:
        if notifies(session):
            await _notify(session, FOLLOWS_CHANNEL, [task_id])

    return write


def request_stop(task_id: str, app_id: str, user: str) -> WriteFn:
    """A write asking whichever process runs ``task_id`` to stop it, if it is this app's and user's:
    a notification on PostgreSQL, else a mark on the stream's row (found by :func:`take_stops`)."""

    async def write(session: AsyncSession) -> None:
        if notifies(session):
            payload = json.dumps({"task_id": task_id, "app_id": app_id, "user": user})
            await _notify(session, STOPS_CHANNEL, [payload])
            return
        await session.execute(
            update(RunStream)
            .where(
                RunStream.task_id == task_id,
                RunStream.app_id == app_id,
                RunStream.user == user,
                RunStream.ended_at.is_(None),
            )
            .values(stop_user=user)
        )

    return write


async def take_stops(session: AsyncSession, task_ids: Collection[str]) -> list[tuple[str, str, str]]:
    """The stops marked on these streams (``task_id, app_id, user``), cleared (SQLite)."""
    marked = (RunStream.task_id.in_(list(task_ids))) & RunStream.stop_user.is_not(None)
    rows = (
        await session.execute(select(RunStream.task_id, RunStream.app_id, RunStream.stop_user).where(marked))
    ).all()
    if rows:
        await session.execute(update(RunStream).where(marked).values(stop_user=None))
    return [(t, a, u) for t, a, u in rows if u is not None]
