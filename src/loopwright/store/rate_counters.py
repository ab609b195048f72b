"""Rate and stream counts shared by every worker of a PostgreSQL database (``rate_windows``,
``stream_leases``), for ``app.run.rate_limits``.

- A request is one upsert that adds 1 to its scope's row of the current minute only while the row is
  under the limit (``ON CONFLICT … DO UPDATE … WHERE count < limit RETURNING count``): no row back is
  a refusal, and a refused request counts nothing.
- A stream is a lease row per scope, taken under a transaction-scoped advisory lock per scope (so two
  workers cannot both take the last place), deleted when its run ends and renewed by its worker's
  heartbeat until then; a lease past its ``expires_at`` — its worker died — is not counted.

PostgreSQL only (the statements use its upsert and advisory locks).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection

from loopwright.store.models import RateWindow, StreamLease

__all__ = ["count_request", "release_streams", "renew_streams", "scope_id", "streams_of", "take_streams"]


def scope_id(scope: str) -> str:
    """What a scope is stored under: a digest (no end user's name in the table; fixed width)."""
    return hashlib.blake2b(scope.encode(), digest_size=16).hexdigest()


async def count_request(conn: AsyncConnection, scope: str, window: int, limit: int) -> bool:
    """Count one request of ``scope`` in minute ``window``; False (nothing counted) at ``limit``."""
    w = RateWindow
    stmt = postgresql.insert(w).values(scope=scope_id(scope), window=window, count=1)
    upsert = stmt.on_conflict_do_update(
        index_elements=["scope", "window"],
        set_={"count": w.count + 1},
        where=w.count < limit,
    ).returning(w.count)
    return (await conn.execute(upsert)).first() is not None


async def take_streams(
    conn: AsyncConnection,
    lease: str,
    scopes: Sequence[tuple[str, int]],
    worker: str,
    now: datetime,
    expires_at: datetime,
) -> int | None:
    """Take one place in each ``(scope, limit)`` for ``lease`` (in the caller's transaction): None
    when taken, else the index of the first scope that is full (then nothing is taken)."""
    ids = [scope_id(s) for s, _ in scopes]
    for sid in sorted(set(ids)):  # one order for every worker: no deadlock between two
        await conn.execute(text("SELECT pg_advisory_xact_lock(hashtext(:s))"), {"s": "stream:" + sid})
    for index, (sid, (_, limit)) in enumerate(zip(ids, scopes, strict=True)):
        if await _live(conn, sid, now) >= limit:
            return index
    rows = [{"id": lease, "scope": sid, "worker_id": worker, "expires_at": expires_at} for sid in ids]
    await conn.execute(postgresql.insert(StreamLease), rows)
    return None


async def _live(conn: AsyncConnection, sid: str, now: datetime) -> int:
    t = StreamLease
    query = select(func.count()).select_from(t).where(t.scope == sid, t.expires_at > now)
    return int((await conn.execute(query)).scalar_one())


async def streams_of(conn: AsyncConnection, scope: str, now: datetime) -> int:
    """The live leases of ``scope``."""
    return await _live(conn, scope_id(scope), now)


async def release_streams(conn: AsyncConnection, lease: str) -> None:
    """The run of ``lease`` has ended: its places are given back."""
    await conn.execute(delete(StreamLease).where(StreamLease.id == lease))


async def renew_streams(
    conn: AsyncConnection, worker: str, now: datetime, expires_at: datetime, oldest_window: int
) -> None:
    """A heartbeat of ``worker``: its leases live until ``expires_at``; expired leases (of dead
    workers) and counters of minutes before ``oldest_window`` are deleted."""
    leases, windows = StreamLease, RateWindow
    await conn.execute(update(leases).where(leases.worker_id == worker).values(expires_at=expires_at))
    await conn.execute(delete(leases).where(leases.expires_at <= now))
    await conn.execute(delete(windows).where(windows.window < oldest_window))
