from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from loopwright.store.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'test.db'}")
    await database.create_all()
    yield database
    await database.close()
