"""Revocations that every serving process hears at once: a revoked API key, a disabled or deleted app.

A server trusts a key it has seen for a while (``app.lookup``) so that a request reads no row to be
let in. A revocation must still refuse the very next request, in whichever process serves it, and
it may be made by another process (the CLI, another worker). So the transaction that revokes also
announces it:

- on PostgreSQL, a ``NOTIFY`` on :data:`CHANNEL`, sent when the transaction commits; every process
  listens (``app.run.relay``) and drops its cached keys and access switches when it hears one;
- on SQLite (one host), a byte appended to the file :func:`counter_path` beside the database once
  the transaction has committed: the file's size is a revocation counter that a server compares
  with the one it last saw, one ``stat`` per request, before it trusts a cached key.

An in-memory SQLite database has one process: the admin routes drop that process's cache directly.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import event, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.paths import sqlite_path_of_url

__all__ = ["CHANNEL", "RevocationCounter", "announce", "counter_path"]

CHANNEL = "loopwright_revocations"
COUNTER_SUFFIX = "-revocations"


def counter_path(url: str) -> Path | None:
    """The revocation counter of a SQLite database file (``<database>-revocations``, beside its
    ``-wal``), or ``None`` for PostgreSQL and in-memory SQLite."""
    path = sqlite_path_of_url(url)
    return None if path is None else path.with_name(path.name + COUNTER_SUFFIX)


async def announce(session: AsyncSession) -> None:
    """Make the revocation done in ``session``'s transaction known to every process when it commits
    (not before: a process that re-read a key before the commit would trust it again)."""
    bind = session.sync_session.get_bind()
    if bind.dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(CHANNEL, "")))
        return
    url = bind.engine.url  # an Engine's engine is itself
    path = counter_path(url.render_as_string(hide_password=False))
    if path is not None:
        event.listen(session.sync_session, "after_commit", lambda _s: _count(path), once=True)


def _count(path: Path) -> None:
    with open(path, "ab") as counter:  # appending: the size only grows, every revocation is seen
        counter.write(b"\n")


class RevocationCounter:
    """How many revocations a SQLite database has seen (the counter file's size); always 0 where there
    is no file to count in (PostgreSQL hears ``NOTIFY`` instead)."""

    def __init__(self, url: str) -> None:
        self.path = counter_path(url)

    def read(self) -> int:
        if self.path is None:
            return 0
        try:
            return os.stat(self.path).st_size
        except OSError:  # none yet, or a path that cannot hold one: nothing revoked through it
            return 0
