"""How runs are executed (the ``executor`` setting, ``LOOPWRIGHT_EXECUTOR``).

- ``in-process`` (the default): each run an asyncio task of the process that took the request
  (:class:`~app.run.runs.RunRegistry`); a crash leaves its messages marked interrupted (app.run.recovery).
- ``durable``: each run also a DBOS Transact workflow whose steps are recorded, taken up by a live
  worker after a crash (:mod:`app.run.durable`; the ``durable`` extra: ``pip install 'loopwright[durable]'``).
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from loopwright.config import ConfigError

if TYPE_CHECKING:
    from loopwright.app.run.durable import DurableExecutor, Runtime

EXECUTORS = ("in-process", "durable")
MISSING_EXTRA = (
    "the durable executor (LOOPWRIGHT_EXECUTOR=durable) needs DBOS Transact, which is not installed: "
    "pip install 'loopwright[durable]'"
)


def check_executor(name: str) -> None:
    """Raise :class:`ConfigError` for an unknown executor, or the durable one without its extra."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}: choose one of {', '.join(EXECUTORS)}")
    if name == "durable" and importlib.util.find_spec("dbos") is None:
        raise ConfigError(MISSING_EXTRA)


def open_durable(runtime: Runtime) -> DurableExecutor:
    """The durable executor of this process, launched (DBOS on the runtime's database)."""
    check_executor("durable")
    from loopwright.app.run.durable import DurableExecutor

    executor = DurableExecutor(runtime)
    executor.launch()
    return executor
