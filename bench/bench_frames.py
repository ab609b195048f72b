"""How deep the server path is per token: the frames between the model's chunk and the run's task.

One streaming message (function calling, one tool round, a scripted model) runs through the app
runtime's entry point, as the server runs it. At every chunk the model yields, the stack of the run's
task is walked (``frame.f_back``, from the model's generator up to the task's first frame) and its
loopwright frames are counted: all of them, and the async generators among them — each a hop every
token takes (``__anext__``, an ``await`` and a frame resumed). Printed: the counts at a text chunk,
and the generator frames by name. With ``--callbacks`` the app registers a callback (which wraps the
agent's events in one more generator) and output moderation is on.

Set ``PYTHONPATH`` to the ``src`` of the tree to measure (before/after on the same machine).
Run: .venv/bin/python bench/bench_frames.py [--callbacks]
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import loopwright
from loopwright import tool
from loopwright.config import Settings
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.testing import Reply, ScriptedModel

try:  # the tree after the run pipeline's redesign
    from loopwright.app.run.plan import MessageRequest
    from loopwright.app.run.runtime import AppRuntime
except ImportError:  # the tree before it
    from loopwright.app.messages import MessageRequest  # type: ignore[no-redef]
    from loopwright.app.runtime import AppRuntime  # type: ignore[no-redef]
from loopwright.app.config import AppConfig, ToolConfig

PACKAGE = str(Path(loopwright.__file__).parent)
FC = ["tool-call", "stream-tool-call"]


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class StackModel(ScriptedModel):
    """The scripted model, noting the run task's loopwright frames at each text chunk."""

    stacks: list[list[tuple[str, bool]]]

    def stream(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        inner = super().stream(*args, **kwargs)

        async def noted() -> AsyncGenerator[Any, None]:
            async for chunk in inner:
                if chunk.text:
                    self.stacks.append(_stack(sys._getframe(0).f_back))
                yield chunk

        return noted()


def _stack(frame: Any) -> list[tuple[str, bool]]:
    out = []
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE):
            out.append((code.co_qualname, bool(code.co_flags & inspect.CO_ASYNC_GENERATOR)))
        frame = frame.f_back
    return out


class Counting(loopwright.AgentCallback):
    """A callback that does nothing (it makes the agent wrap its events)."""

    def on_tool_start(self, event: Any) -> None:
        pass


async def main(callbacks: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(f"sqlite+aiosqlite:///{tmp}/frames.db")
        await db.create_all()
        model = StackModel(
            [Reply.tool_calls(("add", {"a": 2, "b": 3})), Reply.text("The answer is five, as asked.")],
            features=FC,
        )
        model.stacks = []
        config = AppConfig(model="scripted", tools=[ToolConfig(name="add")])
        if callbacks:
            config = config.model_copy(update={"callbacks": ["bench.bench_frames:Counting"]})
        async with db.transaction() as s:
            app, _ = await repo.create_app(s, "frames", config.model_dump())
        runtime = AppRuntime(db, Settings(), tools=[add], models={"scripted": model})
        run = await runtime.start(MessageRequest(app.id, "u", "2 + 3?"))
        async for _ in run.events():
            pass
        await runtime.shutdown()
        await db.close()
    stack = model.stacks[-1]
    gens = [name for name, gen in stack if gen]
    print(f"loopwright frames at a text chunk: {len(stack)}; async generator frames: {len(gens)}")
    for name in gens:
        print(f"  generator: {name}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--callbacks", action="store_true", help="an app callback registered")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    asyncio.run(main(args.callbacks))
