"""The write-behind writer: order, batching, isolation of a failing write, flush/settled, close."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import App, EndUser
from loopwright.store.writer import Insert, Update, WriteOp


def insert_user(app_id: str, name: str, user_id: str | None = None) -> WriteOp:
    async def op(session: AsyncSession) -> None:
        row = EndUser(app_id=app_id, session_id=name)
        if user_id is not None:
            row.id = user_id
        session.add(row)

    return op


async def new_app(db: Database) -> str:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "w", {})
        return app.id


async def user_names(db: Database, app_id: str) -> list[str]:
    async with db.sessionmaker() as s:
        rows = await s.scalars(select(EndUser).where(EndUser.app_id == app_id).order_by(EndUser.created_at))
        return [r.session_id for r in rows]


async def test_writes_land_in_order_in_few_transactions(db: Database) -> None:
    app_id = await new_app(db)
    applied: list[int] = []

    def op(i: int) -> WriteOp:
        async def write(session: AsyncSession) -> None:
            applied.append(i)
            session.add(EndUser(app_id=app_id, session_id=f"u{i}"))

        return write

    futures = [db.writer.submit(op(i)) for i in range(200)]
    await asyncio.gather(*futures)
    assert applied == list(range(200))
    assert db.writer.batches < 20  # batched, not one transaction each
    assert db.writer.pending == 0
    assert len(await user_names(db, app_id)) == 200


async def test_a_failing_write_fails_alone(db: Database, caplog: pytest.LogCaptureFixture) -> None:
    app_id = await new_app(db)
    good1 = db.writer.submit(insert_user(app_id, "a"))
    bad = db.writer.submit(insert_user("no-such-app", "b"))  # foreign key violation
    good2 = db.writer.submit(insert_user(app_id, "c"))
    await asyncio.wait({good1, bad, good2})
    assert good1.exception() is None and good2.exception() is None
    assert bad.exception() is not None
    assert sorted(await user_names(db, app_id)) == ["a", "c"]
    assert "database write failed" in caplog.text


async def test_transaction_sees_queued_writes(db: Database) -> None:
    app_id = await new_app(db)
    for i in range(5):
        db.writer.submit(insert_user(app_id, f"q{i}"))
    async with db.transaction() as s:
        count = len(list(await s.scalars(select(EndUser).where(EndUser.app_id == app_id))))
    assert count == 5


async def test_settled_waits_for_the_writes_of_one_key(db: Database) -> None:
    app_id = await new_app(db)
    gate = asyncio.Event()

    async def slow(session: AsyncSession) -> None:
        await gate.wait()
        session.add(EndUser(app_id=app_id, session_id="slow"))

    db.writer.submit(slow, key="conv-1")
    waiter = asyncio.create_task(db.writer.settled("conv-1"))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await db.writer.settled("another-key")  # nothing pending under it: returns at once
    gate.set()
    await asyncio.wait_for(waiter, 5)
    assert await user_names(db, app_id) == ["slow"]


async def test_close_applies_what_is_queued(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'close.db'}"
    db = Database(url)
    await db.create_all()
    app_id = await new_app(db)
    for i in range(50):
        db.writer.submit(insert_user(app_id, f"c{i}"))
    await db.close()
    again = Database(url)
    try:
        assert len(await user_names(again, app_id)) == 50
        async with again.sessionmaker() as s:
            assert await s.get(App, app_id) is not None
    finally:
        await again.close()


async def test_a_write_after_the_database_closed_is_refused_and_starts_nothing(tmp_path: Path) -> None:
    """Work still running as its database closes (a run ending while its process shuts down) gets an
    error for its write, and no writer starts a connection that would outlive the event loop."""
    import asyncio

    from loopwright.store.writer import DatabaseClosedError

    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'closed.db'}")
    await db.create_all()
    app_id = await new_app(db)
    await db.close()
    assert db.closed
    late = db.writer.submit(insert_user(app_id, "late"))
    with pytest.raises(DatabaseClosedError):
        await late
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "loopwright-db-writer"]


async def test_rows_are_written_together_parents_first_updates_last(db: Database) -> None:
    app_id = "11111111-2222-3333-4444-555555555555"  # inserted last, but needed by the rows before
    gate = asyncio.Event()

    async def hold(_session: AsyncSession) -> None:
        await gate.wait()

    db.writer.submit(hold)  # the rows below queue up behind it and land in one batch
    await asyncio.sleep(0)
    ops: list[WriteOp] = []
    for i in range(50):
        uid = f"00000000-0000-0000-0000-{i:012d}"
        ops.append(Update(EndUser, {"id": uid, "session_id": f"renamed-{i}"}))  # its insert comes later
        ops.append(Update(EndUser, {"id": uid, "session_id": f"final-{i}"}))  # same keys: order kept
        ops.append(Insert(EndUser, {"id": uid, "app_id": app_id, "session_id": f"new-{i}"}))
    ops.append(Insert(App, {"id": app_id, "name": "parent", "mode": "agent-chat"}))
    futures = [db.writer.submit(op) for op in ops]
    batches = db.writer.batches
    gate.set()
    await asyncio.gather(*futures)
    assert db.writer.batches == batches + 2  # the held batch, then everything else at once
    names = await user_names(db, app_id)
    assert sorted(names) == sorted(f"final-{i}" for i in range(50))


async def test_held_writes_wait_for_release_and_land_after_its_first_writes(db: Database) -> None:
    app_id = "22222222-3333-4444-5555-666666666666"
    db.writer.hold("conv")
    child = db.writer.submit(insert_user(app_id, "child"), key="conv")  # needs the app row below
    other = db.writer.submit(insert_user(await new_app(db), "unrelated"))
    await asyncio.wait_for(other, 5)  # writes of other keys are not held up
    await asyncio.sleep(0.05)
    assert not child.done()
    settled = asyncio.create_task(db.writer.settled("conv"))
    db.writer.release("conv", Insert(App, {"id": app_id, "name": "late parent", "mode": "agent-chat"}))
    await asyncio.wait_for(child, 5)
    await asyncio.wait_for(settled, 5)  # settled waited for the parked write, not just the release's
    assert await user_names(db, app_id) == ["child"]
