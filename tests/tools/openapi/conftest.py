"""The live API app of these tests, served on 127.0.0.1 for one test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.live_server import serving
from tests.tools.openapi.api_app import Seen, make_app


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, Seen]]:
    """The app's base URL and the record of the requests it saw."""
    seen = Seen()
    async with serving(make_app(seen)) as url:
        yield url, seen


@pytest.fixture
def api(served: tuple[str, Seen]) -> str:
    """The app's base URL."""
    return served[0]
