"""The durable executor: every run a DBOS Transact workflow that a live worker takes up after a crash.

One run is one workflow, its id the run's task id (a request retried with the same id finds it and
starts nothing). The workflow is a loop of steps; each step hands back the run's state at its next
step boundary (``agent.durability``: before each model call, after a reply that asks for tools, after
each tool call, before a non-idempotent tool call) with the events the run streamed since the
previous one, and DBOS records it — before the run goes on where a tool call follows; in the
background elsewhere (agent.durability):

    workflow(spec):  checkpoint = None
                     until checkpoint is an end:  checkpoint = step(spec, checkpoint)

In the process that runs it, a step only waits for the run's next boundary: the run goes on in memory
(the agent loop is not run again from a snapshot) and a step costs one recorded output; the run is
released once it is written, not after DBOS's check of the next step. The workflow starts while the
first model call runs (a crash before its start is written leaves an interrupted message, as the in-
process executor does), and the checkpoints that came while a step was written make one step. After a
crash, DBOS runs the workflow again on a live worker: the recorded steps return their checkpoints
without running, and the first step not recorded finds no run in its process, so it takes the run up
from the last checkpoint (the approvals' resume path: ``Agent.resume_stream`` and
``DifyStream.restore``), after storing the carried events the journal lacks (the journal's write is
never on a step's path): the stream goes on under the same task id, numbered after its last stored
event (first a ``message_replace`` when the stored stream has text of the cut model call), and the
message's row ends answered. A finished tool call is never run again; one that was running is (at least
once), unless its tool is not idempotent (agent.durability).

The free DBOS recovers only its own executor's workflows, at launch. The takeover
(:meth:`DurableExecutor.take_over`) does it for dead workers: at every heartbeat (app.run.recovery), under a
PostgreSQL advisory lock that serializes the workers' sweeps, the worker finds the workers whose lease
is stale (or whose process on this host is gone), hands their pending workflows back to DBOS's queue
(``DBOS._recover_pending_workflows``: idempotent, the first live worker to dequeue one runs it), and
claims their messages and streams so that no sweep marks them interrupted meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any, Protocol

from dbos import DBOS, SetWorkflowID
from dbos._core import WorkflowHandleAsyncTask  # the handle of a workflow this call started
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright._threads import run_sync
from loopwright.agent import Agent
from loopwright.agent.approvals import Interruption
from loopwright.agent.durability import StepLog
from loopwright.agent.run_state import RunState
from loopwright.app.dify.events import EventHead
from loopwright.app.dify.stream import DifyStream
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.run.approvals import Resumption
from loopwright.app.run.executors import InProcessExecutor
from loopwright.app.run.journal import EventJournal, RunRecord
from loopwright.app.run.pipeline import DurableSteps
from loopwright.app.run.plan import RunPlan, created_at, resumed_plan
from loopwright.app.run.recovery import WorkerLease
from loopwright.app.run.runs import Run
from loopwright.config import ConfigError, Settings
from loopwright.errors import StorageError
from loopwright.store import repositories as repo
from loopwright.store import streams, takeover
from loopwright.store.db import Database
from loopwright.store.models import utcnow
from loopwright.store.streams import Chunk

log = logging.getLogger("loopwright.app")

WORKFLOW = "loopwright.run"
STEP = "loopwright.step"
TAKEOVER_LOCK = 0x6C6F6F70  # the advisory lock of the workers' sweeps ("loop")
ADOPTED_BEATS = 4  # heartbeats a run handed back to DBOS counts as the taker's until a worker takes it up
SCHEMA_ENV = "LOOPWRIGHT_DBOS_SCHEMA"  # DBOS's tables' schema (default "dbos")
URL_ENV = "LOOPWRIGHT_DBOS_URL"  # DBOS's system database (default: the app database)
MAX_THREADS = 32

Carried = list[Any]  # [first seq, items]: the events of a run since its previous step boundary

_executor: DurableExecutor | None = None


def _current() -> DurableExecutor:
    if _executor is None:
        raise RuntimeError("a durable run's step ran in a process whose durable executor is not open")
    return _executor


@DBOS.step(name=STEP)
async def _advance(
    spec: dict[str, Any], checkpoint: dict[str, Any], carried: list[Carried]
) -> dict[str, Any]:
    # only a step's output is recorded: ``carried`` (the events of the steps replayed) costs nothing
    return await _current().advance(spec, checkpoint, carried)


@DBOS.workflow(name=WORKFLOW)
async def _run_workflow(spec: dict[str, Any]) -> str:
    executor, task_id = _current(), spec["task_id"]
    checkpoint: dict[str, Any] = spec["first"]  # the run's first boundary starts its workflow
    carried: list[Carried] = []  # the events of the checkpoints replayed here (a run to take up)
    try:
        while True:
            if task_id not in executor.gates and "events" in checkpoint:
                carried.append(checkpoint["events"])
            checkpoint = await _advance(spec, checkpoint, carried)
            if "end" in checkpoint:
                return str(checkpoint["end"])
            # recorded: the run goes on now, while DBOS checks the next step (a database read)
            executor.recorded(task_id, checkpoint["n"])
    except BaseException as exc:  # the run must not wait for a step that will never come
        executor.abandon(task_id, exc)
        raise


class Runtime(Protocol):
    """What the executor uses of the app runtime (app.run.runtime.AppRuntime)."""

    db: Database
    lease: WorkerLease
    journal: EventJournal
    lookup: AppLookup

    @property
    def settings(self) -> Settings: ...

    async def agent(self, version: ConfigVersion, app_id: str = "") -> Agent: ...


class DurableRunError(StorageError, RuntimeError):
    """A durable run's steps could not be recorded (its workflow failed)."""


class StepGate:
    """One run's step boundaries, between its agent loop (a :class:`StepLog`) and its workflow's steps:
    the loop hands over each checkpoint (numbered) and waits until the workflow's next step says it is
    recorded. The first one starts the workflow (``start``), with the checkpoint as its input, while
    the run's first model call goes on; a run taken up starts at the checkpoint it was taken up from
    (``taken_at``). Checkpoints handed over while a step was being recorded are recorded as one."""

    def __init__(
        self, start: Callable[[dict[str, Any]], Awaitable[None]] | None = None, taken_at: int = 0
    ) -> None:
        self._record: RunRecord | None = None  # the run's journal record (its events since a boundary)
        self._start = start
        self._checkpoints: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._go = asyncio.Event()
        self._turn = asyncio.Lock()  # a round's parallel tool calls reach boundaries one at a time
        self._failed: BaseException | None = None
        self._stream: DifyStream | None = None
        self._starting: asyncio.Future[None] | None = None  # the workflow's start, kept from the GC
        self.count = taken_at  # the number of the last checkpoint handed over
        self._released = taken_at  # the number of the last checkpoint recorded

    def bind(self, stream: DifyStream, record: RunRecord | None) -> StepLog:
        """The step log of the run whose events go through ``stream`` and are kept in ``record`` (when
        they are kept for a re-attach): its pipeline's (app.run.pipeline)."""
        self._stream = stream
        self._record = record
        if record is not None:
            record.carry = []
        return self

    async def step(self, snapshot: RunState, *, before_effects: bool = True) -> None:
        async with self._turn:
            self._check()
            assert self._stream is not None
            self.count += 1
            checkpoint = {"n": self.count, "agent": snapshot.to_dict(), "stream": self._stream.saved()}
            record = self._record
            if record is not None and record.carry is not None:
                # the step carries its events: a worker that takes the run up stores those the
                # journal had not stored yet (the journal's write is not on the run's path)
                items, record.carry = record.carry, []
                checkpoint["events"] = [record.seq - len(items) + 1, items]
            start, self._start = self._start, None
            if start is not None:  # recorded as the workflow's input
                self._starting = asyncio.ensure_future(self._begin(start, checkpoint))
            else:
                self._checkpoints.put_nowait(checkpoint)
            if not before_effects:  # recorded while the run goes on (agent.durability)
                return
            while self._released < self.count:
                self._go.clear()
                await self._go.wait()
                self._check()

    async def _begin(self, start: Callable[[dict[str, Any]], Awaitable[None]], first: dict[str, Any]) -> None:
        """Start the run's workflow while the run goes on (no effect comes before its first model
        call): the next boundary that waits fails if it could not."""
        try:
            await start(first)
        except BaseException as exc:
            self.fail(exc)
        else:
            self.release(first["n"])

    def _check(self) -> None:
        if self._failed is not None:
            raise DurableRunError("the run's steps could not be recorded") from self._failed

    def release(self, n: int) -> None:
        """Checkpoint ``n`` is recorded: the run goes on past it."""
        self._released = max(self._released, n)
        self._go.set()

    def end(self, status: str) -> None:
        self._checkpoints.put_nowait({"end": status})

    def fail(self, exc: BaseException) -> None:
        self._failed = exc
        self._go.set()

    async def next(self) -> dict[str, Any]:
        """The run's next checkpoint, or its end — the last of those already waiting: one recorded
        step keeps them all (its checkpoint carries their events; an end needs none)."""
        out = await self._checkpoints.get()
        while "end" not in out and not self._checkpoints.empty():
            later = self._checkpoints.get_nowait()
            if "end" not in later and "events" in out:
                later["events"] = _joined(out["events"], later.get("events"))
            out = later
        return out


class DurableExecutor:
    """The durable executor of one process (see the module's docstring): DBOS launched on the
    runtime's database, this worker's lease id as its executor id."""

    def __init__(self, runtime: Runtime, inner: InProcessExecutor) -> None:
        self.runtime = runtime
        self.inner = inner  # what runs each run in this process; this executor records its steps
        self.gates: dict[str, StepGate] = {}  # the durable runs of this process, by task id
        self._adopted: dict[str, tuple[str, int]] = {}  # task id → (message id, heartbeats left)

    # --- lifecycle ----------------------------------------------------------------------------------

    def launch(self) -> None:
        """Start DBOS (from the event loop's thread: recovered workflows run on this loop) and hook
        the takeover into this worker's heartbeat."""
        global _executor
        _executor = self
        runtime = self.runtime
        config: Any = {
            "name": "loopwright",
            "system_database_url": os.environ.get(URL_ENV) or system_database_url(runtime.db.url),
            "dbos_system_schema": os.environ.get(SCHEMA_ENV) or "dbos",
            "executor_id": runtime.lease.id,
            "log_level": "WARNING",
            # its thread pool (each step's two database calls; also this loop's default executor)
            "max_executor_threads": MAX_THREADS,
            # no ping before each transaction (a round trip each): a connection found dropped fails
            # its statement as invalidated, which DBOS retries on a new one
            "db_engine_kwargs": {"pool_pre_ping": False},
        }
        DBOS(config=config)
        try:
            DBOS.launch()
        except BaseException:  # the database is down: the next attempt starts over
            DBOS.destroy()
            _executor = None
            raise
        runtime.lease.takeover = self.take_over

    async def aclose(self) -> None:
        """Shut DBOS down (the runs of this process have ended and been saved by then)."""
        global _executor
        await run_sync(DBOS.destroy, workflow_completion_timeout_sec=5)
        _executor = None
        # DBOS made its thread pool this loop's default executor, and has just shut it down
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))

    # --- starting -----------------------------------------------------------------------------------

    # --- the executor seam (app.run.executors) ----------------------------------------------------

    def start(self, plan: RunPlan, record: RunRecord | None = None) -> Run:
        gate = self.gate(plan)
        run = self.inner.launch(plan, record=record, steps=gate.bind)
        self.watch(run)
        return run

    def resume(self, plan: RunPlan) -> Run:
        """A workflow of its own: the paused one has ended."""
        assert plan.resume is not None
        gate = self.gate(plan, f"{plan.head.task_id}:{plan.resume.interruption.state.round}")
        run = self.inner.launch(plan, steps=gate.bind)
        self.watch(run)
        return run

    def take_up(self, plan: RunPlan, steps: DurableSteps) -> Run:
        run = self.inner.launch(plan, steps=steps)
        self.watch(run)
        return run

    def gate(self, plan: RunPlan, workflow_id: str | None = None) -> StepGate:
        """A new run's step gate: its first boundary starts its workflow (``workflow_id``, by default
        the task id); a run that ends before any boundary (an answer without the agent) has none."""
        task_id = plan.head.task_id
        spec = run_spec(plan)

        async def start(first: dict[str, Any]) -> None:
            try:
                with SetWorkflowID(workflow_id or task_id):
                    handle = await DBOS.start_workflow_async(_run_workflow, {**spec, "first": first})
                if not isinstance(handle, WorkflowHandleAsyncTask):  # the id was taken: a concurrent retry
                    raise DurableRunError(f"another run holds workflow {workflow_id or task_id}")
            except BaseException as exc:  # the run fails (at its first boundary): its gate goes
                if self.gates.get(task_id) is gate:
                    del self.gates[task_id]
                log.warning("durable run %s could not start its workflow: %s", task_id, exc)
                raise

        gate = StepGate(start)
        self.gates[task_id] = gate
        return gate

    def watch(self, run: Run) -> None:
        """Tell the run's workflow when the run (started) has ended and been saved."""
        gate = self.gates[run.task_id]
        assert run.task is not None

        def ended(_: object) -> None:
            gate.end(_status(run))
            if gate.count == 0:  # it never started a workflow
                self.gates.pop(run.task_id, None)

        run.task.add_done_callback(ended)

    async def exists(self, workflow_id: str) -> bool:
        """Whether a run was started under this id (a retried request)."""
        return await DBOS.get_workflow_status_async(workflow_id) is not None

    def abandon(self, task_id: str, exc: BaseException) -> None:
        gate = self.gates.pop(task_id, None)
        if gate is not None:
            gate.fail(exc)

    def recorded(self, task_id: str, n: int) -> None:
        """Checkpoint ``n`` of ``task_id`` is recorded: if the run is here, it goes on."""
        gate = self.gates.get(task_id)
        if gate is not None:
            gate.release(n)

    # --- steps --------------------------------------------------------------------------------------

    async def advance(
        self, spec: dict[str, Any], checkpoint: dict[str, Any], carried: list[Carried]
    ) -> dict[str, Any]:
        """One step of a run's workflow: let the run go on from ``checkpoint`` (it is recorded) and
        return its next one — taking the run up here when this process does not have it."""
        task_id = spec["task_id"]
        gate = self.gates.get(task_id)
        if gate is None:
            taken = await self._take_up(spec, checkpoint, carried)
            if isinstance(taken, dict):
                return taken
            gate = taken
        else:
            gate.release(checkpoint["n"])
        out = await gate.next()
        if "end" in out:
            self.gates.pop(task_id, None)
        return out

    async def _take_up(
        self, spec: dict[str, Any], checkpoint: dict[str, Any], carried: list[Carried]
    ) -> StepGate | dict[str, Any]:
        """Go on with a run another process left, from its last checkpoint; or, when it had ended
        already (its end not yet recorded), the end to record. The events its recorded steps carried
        that the journal lacks (numbered above its last stored one) are stored first."""
        runtime = self.runtime
        task_id, message_id = spec["task_id"], spec["message_id"]
        resume = Resumption(
            Interruption([], RunState.from_dict(checkpoint["agent"])), [], checkpoint["stream"]
        )
        async with runtime.db.transaction() as session:
            left = await takeover.take_up_run(
                session, task_id, message_id, spec["conversation_id"], runtime.lease.id
            )
            if left.status != repo.RUNNING:  # it ended (and was saved) before its end was recorded
                return {"end": left.status or "error"}
            last_seq = left.last_seq
            missing = _missing(task_id, carried, last_seq)
            replace = await _answer_replaced(session, task_id, checkpoint, last_seq)
            if missing is not None:
                journal = runtime.journal
                origin = journal.origin if journal.notified else None
                await streams.write_chunks([missing], utcnow(), origin=origin)(session)
                last_seq = missing.last_seq
        if missing is not None:
            runtime.journal.heard([missing])  # this process's followers
        carried.clear()
        self._adopted.pop(task_id, None)
        plan = await self._plan(spec, resume, left.end_user_id, last_seq, replace)
        gate = StepGate(taken_at=checkpoint["n"])
        self.gates[task_id] = gate
        self.take_up(plan, gate.bind)
        log.warning("took up durable run %s from its last recorded step", task_id)
        return gate

    async def _plan(
        self, spec: dict[str, Any], resume: Resumption, end_user_id: str, last_seq: int, replaced: str | None
    ) -> RunPlan:
        """The plan of a run taken up (its rows and its stream exist: they go on)."""
        runtime = self.runtime
        version = await runtime.lookup.config(spec["config_id"])
        if version is None:
            raise DurableRunError(f"configuration {spec['config_id']} is missing")
        head = EventHead(spec["task_id"], spec["message_id"], spec["conversation_id"], spec["created_at"])
        return resumed_plan(
            head=head,
            created=created_at(head),
            app_id=spec["app_id"],
            user=spec["user"],
            version=version,
            agent=await runtime.agent(version, spec["app_id"]),
            end_user_id=end_user_id,
            query=spec["query"],
            resume=resume,
            streaming=bool(spec["streaming"]),
            taken_up=True,
            replaced=replaced,
            first_seq=last_seq,
        )

    # --- takeover -----------------------------------------------------------------------------------

    async def take_over(
        self, session: AsyncSession, alive_since: datetime, gone: Collection[str]
    ) -> list[tuple[str, str]]:
        """Hand the pending workflows of dead workers back to DBOS and claim their messages and
        streams (in the heartbeat's transaction, before its sweep); returns the runs this worker
        counts as its own meanwhile (task id, message id)."""
        await takeover.lock_takeovers(session, TAKEOVER_LOCK)
        me = self.runtime.lease.id
        stale = await takeover.stale_workers(session, alive_since, me)
        dead = sorted({*gone, *stale})
        if dead:
            pending = await DBOS.list_workflows_async(
                status="PENDING", executor_id=dead, name=WORKFLOW, load_input=False, load_output=False
            )
            # claimed first: the rows stay locked until this transaction commits, so the worker that
            # takes a run up (maybe within the second) writes its own claim after this one
            task_ids = {w.workflow_id.partition(":")[0] for w in pending}
            if task_ids:
                await self._claim(session, task_ids)
            await run_sync(DBOS._recover_pending_workflows, dead)
        self._adopted = {t: (m, beats - 1) for t, (m, beats) in self._adopted.items() if beats > 1}
        return [(t, m) for t, (m, _) in self._adopted.items()]

    async def _claim(self, session: AsyncSession, task_ids: Collection[str]) -> None:
        rows = await takeover.claim_runs(session, task_ids, self.runtime.lease.id)
        for task_id, message_id in rows:
            self._adopted[task_id] = (message_id, ADOPTED_BEATS + 1)
        log.warning("handed %d durable run(s) of dead workers back to be taken up", len(rows))


def run_spec(plan: RunPlan) -> dict[str, Any]:
    """What a worker needs to take a run up (the workflow's input, with its first checkpoint)."""
    head, request = plan.head, plan.request
    spec: dict[str, Any] = {
        "task_id": head.task_id,
        "message_id": head.message_id,
        "conversation_id": head.conversation_id,
        "created_at": head.created_at,
        "app_id": request.app_id,
        "user": request.user,
        "query": request.query,
        "config_id": plan.version.id,
        "streaming": request.response_mode == "streaming",
    }
    return spec


def system_database_url(url: str) -> str:
    """DBOS's system database beside the app's: the same PostgreSQL database (its own schema), or a
    SQLite file next to the app's."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if parsed.get_backend_name() == "sqlite" and parsed.database:
        return f"sqlite:///{parsed.database}.dbos"
    raise ConfigError(f"the durable executor runs on PostgreSQL or a SQLite file, not {parsed.drivername}")


def _joined(earlier: Carried, later: Carried | None) -> Carried:
    """The events two consecutive checkpoints carried, as one checkpoint's."""
    if later is None:
        return earlier
    return [earlier[0], [*earlier[1], *later[1]]]


def _missing(task_id: str, carried: list[Carried], last_seq: int) -> Chunk | None:
    """The carried events numbered above ``last_seq`` (the last stored one), as one chunk."""
    first, items = last_seq + 1, list[Any]()
    for start, events in carried:
        for i, item in enumerate(events):
            if start + i == first + len(items):
                items.append(item)
    if not items:
        return None
    return Chunk(task_id, first, first + len(items) - 1, items, False)


async def _answer_replaced(
    session: AsyncSession, task_id: str, checkpoint: dict[str, Any], last_seq: int
) -> str | None:
    """The answer a client of the stream should show when the run is taken up from ``checkpoint``:
    the text of the stored events up to it, when the stored stream goes on past it with text (the
    cut step's model call, which the resumed run makes again); None when nothing needs replacing."""
    carried = checkpoint.get("events")
    if carried is None:
        return None
    upto = int(carried[0]) + len(carried[1]) - 1  # the last event the checkpoint carried
    if last_seq <= upto:
        return None
    seen = streams.seen_by_client(await streams.chunks_after(session, task_id, 0), upto=upto)
    return seen.answer if seen.text_after else None


def _status(run: Run) -> str:
    """How a run that has ended ended (stopped when it never got to record it)."""
    return run.ended_as() or "stopped"
