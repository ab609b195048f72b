"""The resumable-stream tests that depend on the database, on PostgreSQL: the journal turned off."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from loopwright.store.db import Database
from tests.server.test_resumable_off import (
    test_with_resumable_streams_off_streams_work_and_a_reattach_is_refused,
)
from tests.store.test_postgres import pg_empty, pg_url

__all__ = [
    "pg_empty",
    "pg_url",
    "test_with_resumable_streams_off_streams_work_and_a_reattach_is_refused",
]  # fixtures, used by name; the test, run here on PostgreSQL


@pytest.fixture
async def db(pg_empty: Database) -> AsyncIterator[Database]:
    await pg_empty.migrate()
    yield pg_empty
