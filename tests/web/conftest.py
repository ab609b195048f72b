"""What every browser test shares: each browser context it opens is watched (tests/web/browser.py
``Watch``), and the test fails on a console error, an uncaught exception or a request that leaves
127.0.0.1. ``browser`` is one Chromium per test module, started after the module's ``world`` (its
server and apps)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser import Watch, chromium


@pytest.fixture(scope="module")
def browser(world: Any) -> Iterator[Any]:
    yield from chromium()


@pytest.fixture
def watched(browser: Any) -> Iterator[Callable[..., Watch]]:
    """``watched(**context_options)``: a new watched browser context; all are closed and checked
    when the test ends."""
    made: list[Watch] = []

    def new(**options: Any) -> Watch:
        watch = Watch(browser, **options)
        made.append(watch)
        return watch

    yield new
    problems: list[str] = []
    for watch in made:
        try:
            watch.close()
        except AssertionError as e:
            problems.append(str(e))
    assert problems == [], "\n".join(problems)
