"""The durable executor in one process (app.run.durable): a run is a DBOS workflow whose steps are the
agent's step boundaries; it answers as the in-process executor does, a retried id starts nothing, and
a run taken up from a checkpoint goes on from there. On SQLite and on PostgreSQL
(``LOOPWRIGHT_TEST_POSTGRES_URL``); the kill -9 of a real server is in tests/reliability."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text

pytest.importorskip("dbos")

from dbos import DBOS  # noqa: E402

from loopwright import tool  # noqa: E402
from loopwright.app.config import AppConfig, ApprovalSettings, ToolConfig  # noqa: E402
from loopwright.app.dify.events import AgentThought, EventHead, MessageEnd  # noqa: E402
from loopwright.app.dify.stream import DifyStream  # noqa: E402
from loopwright.app.errors import RunExistsError  # noqa: E402
from loopwright.app.run.approvals import ApprovalsRequest, Decision  # noqa: E402
from loopwright.app.run.durable import DurableRunError, StepGate, _missing  # noqa: E402
from loopwright.app.run.journal import EventJournal, RunRecord  # noqa: E402
from loopwright.app.run.runtime import AppRuntime  # noqa: E402
from loopwright.config import Settings  # noqa: E402
from loopwright.store.db import Database  # noqa: E402
from loopwright.store.models import Message, MessageAgentThought  # noqa: E402
from loopwright.testing import Reply, ScriptedModel  # noqa: E402
from tests.app.test_messages import CONFIG, FC, add, ask, new_app  # noqa: E402

URL_ENV = "LOOPWRIGHT_TEST_POSTGRES_URL"


@pytest.fixture(params=["sqlite", "postgresql"])
async def durable_db(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Database]:
    """An empty database (the app's tables made) and a DBOS schema of this test's own."""
    schema = f"dbos_test_{uuid.uuid4().hex[:12]}"
    monkeypatch.setenv("LOOPWRIGHT_DBOS_SCHEMA", schema)
    if request.param == "sqlite":
        database = Database(f"sqlite+aiosqlite:///{tmp_path / 'durable.db'}")
    else:
        url = os.environ.get(URL_ENV)
        if not url:
            pytest.skip(f"{URL_ENV} is not set: no PostgreSQL server")
        database = Database(url)
        async with database.engine.begin() as conn:
            await conn.execute(text("DROP SCHEMA IF EXISTS public CASCADE"))
            await conn.execute(text("CREATE SCHEMA public"))
    await database.create_all()
    yield database
    if database.engine.dialect.name == "postgresql":
        async with database.engine.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    await database.close()


async def workflow(workflow_id: str) -> Any:
    """The handle of a run's workflow, once its start is written: a run starts its workflow while
    its first model call goes on, so one that answers at once may end (and be saved) first."""
    for _ in range(3000):
        if await DBOS.get_workflow_status_async(workflow_id) is not None:
            return await DBOS.retrieve_workflow_async(workflow_id)
        await asyncio.sleep(0.01)
    raise AssertionError(f"workflow {workflow_id} was never started")


def durable_runtime(db: Database, model: ScriptedModel) -> AppRuntime:
    return AppRuntime(db, Settings(executor="durable"), tools=[add], models={"scripted": model})


async def test_a_durable_run_answers_and_records_its_steps(durable_db: Database) -> None:
    db = durable_db
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")], features=FC
    )
    runtime = durable_runtime(db, model)
    try:
        run = await runtime.start(ask(app_id, "What is 2 + 3?"))
        events = [e async for e in run.events()]
        outcome = await run.outcome()
        assert isinstance(events[-1], MessageEnd) and outcome.status == "normal"
        assert outcome.answer == "Adding.\nIt is 5."
        assert any(isinstance(e, AgentThought) and e.observation for e in events)
        handle = await workflow(run.task_id)
        assert await handle.get_result() == "normal"
        steps = await DBOS.list_workflow_steps_async(run.task_id)
        # boundaries: before the model call of round 1 (the workflow's input), after its reply asked for
        # the tool, before the model call of round 2; then the end
        assert [s["function_name"] for s in steps] == ["loopwright.step"] * 3
        status = await DBOS.get_workflow_status_async(run.task_id)
        assert status is not None and status.input is not None
        assert status.input["args"][0]["first"]["n"] == 1
        assert steps[-1]["output"] == {"end": "normal"}
        async with db.transaction() as s:
            row = await s.get(Message, run.head.message_id)
            thoughts = list(
                await s.scalars(select(MessageAgentThought).where(MessageAgentThought.message_id == row.id))
            )  # type: ignore[union-attr]
        assert row is not None and (row.status, row.answer, row.worker_id) == (
            "normal",
            "Adding.\nIt is 5.",
            None,
        )
        assert len(thoughts) == 2
    finally:
        await runtime.shutdown()


async def test_a_retried_id_starts_no_second_run(durable_db: Database) -> None:
    db = durable_db
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.text("Once."), Reply.text("Twice!")], features=FC)
    runtime = durable_runtime(db, model)
    task_id = str(uuid.uuid4())
    try:
        run = await runtime.start(ask(app_id, "hi", task_id=task_id))
        assert run.task_id == task_id
        await run.outcome()
        with pytest.raises(RunExistsError):
            await runtime.start(ask(app_id, "hi", task_id=task_id))
        assert model.remaining == 1  # the model was asked once
    finally:
        await runtime.shutdown()


async def test_a_durable_run_that_waits_for_approval_ends_its_workflow_and_resumes_in_another(
    durable_db: Database,
) -> None:
    db = durable_db
    config = CONFIG.model_copy(update={"approval": ApprovalSettings(tools=["add"])})
    app_id = await new_app(db, config)
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}, "call_1"), text="Adding."), Reply.text("It is 5.")],
        features=FC,
    )
    runtime = durable_runtime(db, model)
    try:
        run = await runtime.start(ask(app_id, "What is 2 + 3?"))
        paused = await run.outcome()
        assert paused.status == "waiting"
        # the paused run's workflow has ended with it: the pending_approvals row is what waits
        assert await (await workflow(run.task_id)).get_result() == "waiting"
        decision = ApprovalsRequest(run.task_id, app_id, "alice", [Decision("call_1", "approve")])
        resumed = await runtime.resume(decision)
        outcome = await resumed.outcome()
        assert (outcome.status, outcome.answer) == ("normal", "Adding.\nIt is 5.")
        resumed_workflow = await workflow(f"{run.task_id}:1")
        assert await resumed_workflow.get_result() == "normal"
        steps = await DBOS.list_workflow_steps_async(f"{run.task_id}:1")
        # its input: the decided round before its call runs; then before round 2's model call; the end
        assert len(steps) == 2 and steps[-1]["output"] == {"end": "normal"}
        async with db.transaction() as s:
            row = await s.get(Message, run.head.message_id)
        assert row is not None and (row.status, row.answer) == ("normal", "Adding.\nIt is 5.")
    finally:
        await runtime.shutdown()


async def test_concurrent_durable_runs_with_parallel_calls_all_end_answered(durable_db: Database) -> None:
    db = durable_db
    calls: list[str] = []

    @tool
    async def fetch(key: str) -> str:
        """Fetch a value."""
        calls.append(key)
        await asyncio.sleep(0)
        return key.upper()

    @tool(idempotent=False)
    async def send(key: str) -> str:
        """Send a value."""
        calls.append(f"send:{key}")
        return "sent"

    config = AppConfig(model="scripted", tools=[ToolConfig(name="fetch"), ToolConfig(name="send")])
    app_id = await new_app(db, config)
    round_ = Reply.tool_calls(("fetch", {"key": "a"}), ("fetch", {"key": "b"}), ("send", {"key": "c"}))
    model = ScriptedModel([round_, Reply.text("Done.")] * 8, features=[*FC, "multi-tool-call"])
    runtime = AppRuntime(db, Settings(executor="durable"), tools=[fetch, send], models={"scripted": model})
    try:
        runs = [await runtime.start(ask(app_id, f"go {i}", user=f"user{i}")) for i in range(8)]
        outcomes = await asyncio.gather(*(r.outcome() for r in runs))
        assert [o.status for o in outcomes] == ["normal"] * 8
        for run in runs:
            assert await (await workflow(run.task_id)).get_result() == "normal"
        # each tool round ran each of its three calls once (the script's rounds go to whichever run asks)
        assert calls.count("a") == calls.count("b") == calls.count("send:c") >= 1
        assert not runtime.durable or not runtime.durable.gates  # every gate let go
    finally:
        await runtime.shutdown()


class Snap:
    """A stand-in for the RunState a run hands its step log: the gate records ``to_dict()``."""

    def __init__(self, at: str) -> None:
        self.data = {"at": at}

    def to_dict(self) -> dict[str, str]:
        return self.data


def _gate_with_record(db: Database) -> tuple[StepGate, RunRecord]:
    head = EventHead("task-1", "message-1", "conversation-1", 0)
    record = RunRecord(EventJournal(db), head.task_id)
    gate = StepGate(taken_at=1)
    gate.bind(DifyStream(head, "function-calling"), record)
    return gate, record


async def test_a_step_before_a_tool_waits_for_its_record_and_those_before_it(tmp_path: Path) -> None:
    """A boundary no effect follows is handed over without waiting; the next one that an effect
    follows waits until both are recorded; each carries the events added since the one before."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'gate.db'}")
    await db.create_all()  # the journal may write the record's events meanwhile
    try:
        gate, record = _gate_with_record(db)
        record.add("Add")
        await gate.step(Snap("model call"), before_effects=False)  # returns without a record
        record.add("ing.")
        record.add("!")
        waiting = asyncio.create_task(gate.step(Snap("tools")))
        first, second = await gate.next(), await gate.next()
        assert (first["n"], first["events"]) == (2, [1, ["Add"]])
        assert (second["n"], second["events"]) == (3, [2, ["ing.", "!"]])
        gate.release(2)
        await asyncio.sleep(0)
        assert not waiting.done()  # its own record is still missing
        gate.release(3)
        await asyncio.wait_for(waiting, 5)
    finally:
        await db.close()


async def test_a_failed_record_stops_the_run_at_its_next_waiting_step(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'gate.db'}")
    await db.create_all()  # the journal may write the record's events meanwhile
    try:
        gate, _ = _gate_with_record(db)
        await gate.step(Snap("model call"), before_effects=False)
        gate.fail(RuntimeError("the database is gone"))
        with pytest.raises(DurableRunError):
            await gate.step(Snap("tools"))
    finally:
        await db.close()


def test_the_carried_events_the_journal_lacks_make_one_chunk() -> None:
    carried = [[1, ["a", "b"]], [3, [{"event": "agent_thought"}]], [4, ["c", "d"]]]
    chunk = _missing("task-1", carried, 2)
    assert chunk is not None
    assert (chunk.first_seq, chunk.last_seq, chunk.items) == (3, 5, [{"event": "agent_thought"}, "c", "d"])
    assert _missing("task-1", carried, 5) is None  # all stored (or more: the cut step's)
    assert _missing("task-1", carried, 7) is None
    assert _missing("task-1", [], 0) is None


async def test_checkpoints_waiting_together_are_recorded_as_one_step(tmp_path: Path) -> None:
    """The workflow's next step keeps every checkpoint already handed over (the last, carrying the
    events of all); a run's end makes those before it moot."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'gate.db'}")
    await db.create_all()
    try:
        gate, record = _gate_with_record(db)
        record.add("One")
        await gate.step(Snap("model call"), before_effects=False)
        record.add("two")
        record.add("three")
        await gate.step(Snap("next tool result"), before_effects=False)
        folded = await gate.next()
        assert (folded["n"], folded["agent"], folded["events"]) == (
            3,
            {"at": "next tool result"},
            [1, ["One", "two", "three"]],
        )
        await gate.step(Snap("model call"), before_effects=False)
        gate.end("normal")
        assert await gate.next() == {"end": "normal"}
    finally:
        await db.close()


async def test_a_workflow_that_cannot_start_fails_the_run_at_its_first_waiting_step(tmp_path: Path) -> None:
    """The workflow starts while the first model call runs (no effect comes before it); a run whose
    start failed stops before its first tool call, with the reason."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'gate.db'}")
    await db.create_all()
    head = EventHead("task-1", "message-1", "conversation-1", 0)
    started = asyncio.Event()

    async def start(first: dict[str, object]) -> None:
        started.set()
        raise ConnectionError("the database is gone")

    try:
        gate = StepGate(start)
        gate.bind(DifyStream(head, "function-calling"), RunRecord(EventJournal(db), head.task_id))
        await gate.step(Snap("model call"), before_effects=False)  # returns before the start ends
        assert not started.is_set()
        with pytest.raises(DurableRunError) as failed:
            await gate.step(Snap("tools"))
        assert isinstance(failed.value.__cause__, ConnectionError)
    finally:
        await db.close()
