"""A serving process collects its oldest generation on a timer (server.app.tune_gc): under load its
young collections are rare, so each request's cyclic garbage (uvicorn's and FastAPI's per-request
objects) that outlived one would otherwise wait there for an hour."""

from __future__ import annotations

import asyncio
import gc
import weakref

from loopwright.server.app import _collect_every


class _Cyclic:
    def __init__(self) -> None:
        self.me = self


async def test_the_timed_collection_frees_cyclic_garbage() -> None:
    gc.disable()  # only the timed collection may free it
    try:
        garbage = _Cyclic()
        gone = weakref.ref(garbage)
        del garbage
        assert gone() is not None  # a cycle: not freed by reference counting
        collector = asyncio.get_running_loop().create_task(_collect_every(0.01))
        try:
            for _ in range(500):
                if gone() is None:
                    break
                await asyncio.sleep(0.01)
            assert gone() is None
        finally:
            collector.cancel()
    finally:
        gc.enable()
