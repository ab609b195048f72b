"""What both kinds of eval target share: the :class:`Target` protocol cases run on (an app in this
process, :class:`~loopwright.evals.runner.EvalTarget`, or behind a server,
:class:`~loopwright.evals.remote.RemoteTarget`), the end user runs are stored under, the error of a
target that cannot be used."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from loopwright.errors import UserInputError
from loopwright.evals.results import TurnTrace

if TYPE_CHECKING:
    from loopwright.app.config import AppConfig
    from loopwright.knowledge.embeddings import Embedder
    from loopwright.model.base import Model

EVAL_USER = "loopwright-eval"  # the end user eval runs are stored under


class EvalTargetError(UserInputError):
    """The app or version to evaluate is not there, or a replay lacks its recordings."""


class Target(Protocol):
    """Where cases run: an app in this process (:class:`EvalTarget`) or behind a server's Service API
    (:class:`~loopwright.evals.remote.RemoteTarget`)."""

    app_label: str
    version: int | None
    model: str | None
    replay: bool
    replay_tools: bool  # with ``replay``: tools give back the outputs recorded with each case

    @property
    def config(self) -> AppConfig | None: ...

    @property
    def default_judge(self) -> str | None: ...

    async def turn(
        self, query: str, inputs: dict[str, Any], files: list[dict[str, Any]], conversation: str | None
    ) -> tuple[TurnTrace, str | None]: ...

    def embedder_for(self, spec: str) -> Embedder | None: ...

    async def judge_model(self, spec: str) -> Model: ...


async def load_model(model: Model) -> None:
    """Load a model's weights when it has a ``load`` coroutine (the embedded model)."""
    load = getattr(model, "load", None)
    if load is not None and asyncio.iscoroutinefunction(load):
        await load()
