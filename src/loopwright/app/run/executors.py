"""How runs are executed: the executor seam, and the ``executor`` setting (``LOOPWRIGHT_EXECUTOR``).

An :class:`Executor` runs a :class:`~app.run.plan.RunPlan` and returns its :class:`~app.run.runs.Run`
handle: ``start`` a new message, ``resume`` one paused for approvals, ``take_up`` one a crashed
process left (from its last checkpoint). :meth:`InProcessExecutor.launch` is the one place a run is
assembled — its rows' writer, its handle, its journal record, its pipeline, its registration.

- ``in-process`` (the default, :class:`InProcessExecutor`): each run an asyncio task of the process
  that took the request; a crash leaves its messages marked interrupted (app.run.recovery), with what
  their journal kept.
- ``durable``: :class:`~app.run.durable.DurableExecutor` wraps the in-process one — each run also a
  DBOS Transact workflow whose steps are recorded, taken up by a live worker after a crash (the
  ``durable`` extra: ``pip install 'loopwright[durable]'``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Protocol

from loopwright.app.dify.encoder import DifyEncoder
from loopwright.app.guards.steps import Guards
from loopwright.app.run.journal import EventJournal, RunRecord
from loopwright.app.run.message_writes import MessageWrites
from loopwright.app.run.pipeline import DurableSteps, MessageRun, Speaker
from loopwright.app.run.plan import RunPlan
from loopwright.app.run.prompt_log import CURRENT_MESSAGE
from loopwright.app.run.recovery import WorkerLease
from loopwright.app.run.runs import Run, RunRegistry
from loopwright.config import ConfigError
from loopwright.store.db import Database

EXECUTORS = ("in-process", "durable")
MISSING_EXTRA = (
    "the durable executor (LOOPWRIGHT_EXECUTOR=durable) needs DBOS Transact, which is not installed: "
    "pip install 'loopwright[durable]'"
)


class Executor(Protocol):
    """Runs plans (see the module's docstring)."""

    def start(self, plan: RunPlan, record: RunRecord | None = None) -> Run:
        """A new message (``record``: its stream's row, already written for a caller-chosen id)."""
        ...

    def resume(self, plan: RunPlan) -> Run:
        """A message paused for approvals, with the decisions in ``plan.resume``."""
        ...

    def take_up(self, plan: RunPlan, steps: DurableSteps) -> Run:
        """A message a crashed process left, from its last checkpoint (``plan.resume``)."""
        ...


class InProcessExecutor:
    """Runs each plan as an asyncio task of this process (``RunRegistry``)."""

    def __init__(
        self,
        db: Database,
        runs: RunRegistry,
        journal: EventJournal,
        lease: WorkerLease,
        guards: Guards,
        *,
        speaker: Callable[[RunPlan], Speaker | None] = lambda _: None,
    ) -> None:
        self.db = db
        self.runs = runs
        self.journal = journal
        self.lease = lease
        self.guards = guards
        self._speaker = speaker  # the app's auto-played voice for a plan, if any

    def start(self, plan: RunPlan, record: RunRecord | None = None) -> Run:
        return self.launch(plan, record=record)

    def resume(self, plan: RunPlan) -> Run:
        return self.launch(plan)

    def take_up(self, plan: RunPlan, steps: DurableSteps) -> Run:
        return self.launch(plan, steps=steps)

    def launch(
        self, plan: RunPlan, *, record: RunRecord | None = None, steps: DurableSteps | None = None
    ) -> Run:
        """Assemble the plan's run and start it (the one place a run is assembled)."""
        head, request = plan.head, plan.request
        writes = MessageWrites(self.db, head.conversation_id, head.message_id)
        if plan.resume is None:
            writes.start(
                app_id=request.app_id,
                config_id=plan.version.id,
                query=request.query,
                inputs=plan.inputs,
                files=plan.files.rows,
                new_conversation=plan.new_conversation,
                end_user=plan.end_user,
                now=plan.created,
                worker_id=self.lease.id,
                parent_message_id=plan.parent_message_id,
            )
        else:
            assert isinstance(plan.end_user, str)  # a message that goes on has its end user already
            thoughts = () if plan.taken_up else [t["id"] for t in plan.resume.stream_state["thoughts"]]
            writes.resumed(thoughts, plan.end_user, self.lease.id)
        if record is None and (plan.taken_up or plan.continues_stream):
            record = self.journal.record(head.task_id, plan.first_seq)
        elif record is None:
            record = self.journal.open(head, request.app_id, request.user, self.lease.id)
        encoder = (request.encoder or DifyEncoder)(plan.first_seq)
        run = Run(head, request.app_id, request.user, plan.streaming, record, encoder)
        pipeline = MessageRun(
            plan,
            run,
            writes,
            self.guards,
            speak=self._speaker(plan) if plan.resume is None else None,
            steps=steps,
        )
        noted = CURRENT_MESSAGE.set(head.message_id)  # the run's task keeps it (prompt_log)
        try:
            self.runs.start(run, pipeline())
        finally:
            CURRENT_MESSAGE.reset(noted)
        return run


def check_executor(name: str) -> None:
    """Raise :class:`ConfigError` for an unknown executor, or the durable one without its extra."""
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}: choose one of {', '.join(EXECUTORS)}")
    if name == "durable" and importlib.util.find_spec("dbos") is None:
        raise ConfigError(MISSING_EXTRA)


__all__ = ["EXECUTORS", "Executor", "InProcessExecutor", "check_executor"]
