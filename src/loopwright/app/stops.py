"""Stops across worker processes (``loopwright serve --workers N``), through the database.

A run lives in the memory of the worker that started it, but a stop request can reach any worker. The
worker that does not have the run writes a stop request row; every worker with running messages looks
for rows naming its runs a few times a second, stops them and deletes the rows. One worker never pays
for this: the board is only used when there are several.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta

from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import StopRequest

POLL_INTERVAL = 0.5  # seconds between looks for stops of this worker's runs
FORGET_AFTER = timedelta(minutes=10)  # a request for a run nobody has (it ended) is dropped then


class StopBoard:
    def __init__(self, db: Database, *, interval: float = POLL_INTERVAL) -> None:
        self.db = db
        self.interval = interval

    def request(self, task_id: str, app_id: str, user: str) -> None:
        """Ask whichever worker runs ``task_id`` to stop it (it checks app and user, as a local stop)."""
        self.db.writer.submit(repo.stop_request_upsert(task_id, app_id, user))

    async def take(self, task_ids: Collection[str]) -> list[StopRequest]:
        """The stop requests for these runs, removed from the board (with stale ones)."""
        if not task_ids:
            return []
        async with self.db.sessionmaker() as session, session.begin():
            return await repo.take_stop_requests(session, task_ids, FORGET_AFTER)
