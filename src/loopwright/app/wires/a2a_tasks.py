"""The A2A operations on an app's tasks for one app key: send a message (a new task, or the answer to a
task that waits for approval), read a task, follow one, cancel one. A task is a message of the key's end user
(``app.wires.a2a``); nothing here knows HTTP or JSON-RPC framing.

A task paused for a tool approval (input-required) goes on with the next message sent in it
(``taskId``): ``approve`` or ``deny`` (every call waiting), or a data part ``{"decisions": [...]}``
(one decision per call, as ``POST /v1/chat-messages/{task_id}/approvals`` takes them). The pause itself,
its timeout and its resumption are the approvals machinery's (``app.run.approvals``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from loopwright.app.dify.errors import error_fields
from loopwright.app.dify.events import EventHead
from loopwright.app.errors import ConversationNotFoundError
from loopwright.app.run.approvals import ApprovalsRequest, Decision
from loopwright.app.run.journal import Replayed
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run, RunOutcome
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.a2a import (
    INVALID_PARAMS,
    STATES,
    TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND,
    TERMINAL,
    UNSUPPORTED_OPERATION,
    A2AEncoder,
    A2AError,
    Asked,
    TaskState,
    task_body,
)
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store import tasks as stored_tasks
from loopwright.store.models import Message, PendingApproval

APPROVE_WORDS = frozenset({"approve", "approved", "yes", "y", "ok", "allow"})
DENY_WORDS = frozenset({"deny", "denied", "no", "n", "reject"})


@dataclass(frozen=True, slots=True)
class Started:
    """A task's run, just started or resumed, and the query it answers."""

    run: Run
    query: str


@dataclass(frozen=True, slots=True)
class Following:
    """A task to follow: as it is now, and its run's stream (none when nothing runs for it)."""

    task: dict[str, Any]
    head: EventHead | None = None
    events: AsyncIterator[list[Replayed]] | None = None


class A2ATasks:
    """The tasks of the app ``app_id`` seen by the key whose end user is ``user``."""

    def __init__(self, runtime: AppRuntime, app_id: str, user: str) -> None:
        self.runtime = runtime
        self.app_id = app_id
        self.user = user

    # --- send ----------------------------------------------------------------------------------

    async def send(self, asked: Asked, rpc_id: Any, *, streaming: bool) -> Started:
        """Start the run a message asks for: a new task (in the context it names, if any), or the rest
        of the task it names, which must wait for approval. Raises :class:`A2AError`."""
        mode: Literal["streaming", "blocking"] = "streaming" if streaming else "blocking"
        encoder = partial(A2AEncoder, rpc_id)
        if asked.task_id:
            return await self._answer_approval(asked, mode, encoder)
        if not asked.text.strip():
            raise A2AError(INVALID_PARAMS, "a message that starts a task needs a text part")
        query = asked.text
        if asked.data:  # data parts go to the agent as JSON after the text
            query += "\n" + "\n".join(json.dumps(d, ensure_ascii=False) for d in asked.data)
        request = MessageRequest(
            app_id=self.app_id,
            user=self.user,
            query=query,
            inputs=asked.inputs,
            conversation_id=asked.context_id or None,
            response_mode=mode,
            call_depth=asked.call_depth,
            encoder=encoder,
        )
        # The end user known first (cached after the key's first task): the run's rows are then queued
        # as it starts, rather than parked until the user is found, so a GetTask that comes while it
        # runs finds its task once the queue is flushed.
        await self.runtime.lookup.end_user_id(self.app_id, self.user)
        try:
            run = await self.runtime.start(request)
        except ConversationNotFoundError:
            raise A2AError(
                INVALID_PARAMS, f"contextId {asked.context_id!r} is not a context of this key"
            ) from None
        except UserInputError as exc:  # inputs the app's form refuses, among others
            raise A2AError(INVALID_PARAMS, str(exc)) from None
        return Started(run, query)

    async def _answer_approval(
        self, asked: Asked, mode: Literal["streaming", "blocking"], encoder: Any
    ) -> Started:
        row, pending = await self._find(asked.task_id)
        if asked.context_id and asked.context_id != row.conversation_id:
            raise A2AError(INVALID_PARAMS, "contextId is not the context of the task named by taskId")
        state = STATES.get(row.status, TaskState.WORKING)
        if pending is None:
            raise A2AError(
                UNSUPPORTED_OPERATION,
                f"task {row.id} is {_state_name(state)}: it takes no more messages (only a task that "
                "waits for approval does); send a message in its context (contextId) to go on",
            )
        decisions = decisions_of(asked, json.loads(pending.calls))
        request = ApprovalsRequest(
            task_id=pending.task_id,
            app_id=self.app_id,
            user=self.user,
            decisions=decisions,
            response_mode=mode,
            encoder=encoder,
        )
        try:
            run = await self.runtime.resume(request)
        except UserInputError as exc:  # decisions that do not match the calls waiting
            raise A2AError(INVALID_PARAMS, str(exc)) from None
        return Started(run, row.query)

    # --- read and cancel -----------------------------------------------------------------------

    async def get(self, task_id: str, history_length: int | None = None) -> dict[str, Any]:
        """The task as stored; raises :class:`A2AError` (task not found) for one that is not this key's."""
        row, pending = await self._find(task_id)
        return self._stored_task(row, pending, history_length)

    async def cancel(self, task_id: str) -> dict[str, Any]:
        """Stop the task's run (or end its wait for approval) and give the task as it is then: canceled,
        unless its run is on another worker and has not stopped yet."""
        row, pending = await self._find(task_id)
        state = STATES.get(row.status, TaskState.WORKING)
        if state in TERMINAL:
            raise A2AError(TASK_NOT_CANCELABLE, f"task {task_id} is {_state_name(state)} already")
        runtime = self.runtime
        if pending is not None:
            await runtime.stop_paused(pending.task_id, self.app_id, self.user)
        else:
            run_id = await self._run_id(task_id)
            if run_id is not None:
                local = runtime.runs.get(run_id)
                runtime.stop(run_id, self.app_id, self.user)
                if local is not None:
                    await local.outcome()  # saved as stopped
        return await self.get(task_id)

    async def follow(self, task_id: str) -> Following:
        """The task as it is, and its run's stream to follow from its first event while it runs
        (``AppRuntime.follow``, whichever worker runs it). An ended task cannot be followed
        (:class:`A2AError`, unsupported operation); one waiting for input has nothing to follow."""
        row, pending = await self._find(task_id)
        task = self._stored_task(row, pending, None)
        state = task["status"]["state"]
        if state in TERMINAL:
            raise A2AError(
                UNSUPPORTED_OPERATION,
                f"task {task_id} is {_state_name(state)}: only a task going on can be followed; read it "
                "with GetTask",
            )
        run_id = await self._run_id(task_id) if state == TaskState.WORKING else None
        if run_id is None:
            return Following(task)
        try:
            head, events = await self.runtime.follow(run_id, self.app_id, self.user)
        except NotFoundError as exc:  # resumable streams are off, or the stream is gone
            raise A2AError(UNSUPPORTED_OPERATION, str(exc)) from None
        return Following(task, head, events)

    def outcome_task(
        self, started: Started, outcome: RunOutcome, history_length: int | None = None
    ) -> dict[str, Any]:
        """The task a run ended as (or paused as)."""
        head = started.run.head
        error = error_fields(outcome.error)[2] if outcome.error is not None else None
        calls = outcome.approval.calls if outcome.approval is not None else ()
        return task_body(
            head.message_id,
            head.conversation_id,
            STATES[outcome.status],
            query=started.query,
            answer=outcome.answer,
            error=error,
            calls=calls,
            history_length=history_length,
            user=self.user,
        )

    def working_task(self, started: Started, history_length: int | None = None) -> dict[str, Any]:
        """The task of a run going on (the first frame of a stream, or a send that returns at once)."""
        head = started.run.head
        return task_body(
            head.message_id,
            head.conversation_id,
            TaskState.WORKING,
            query=started.query,
            history_length=history_length,
            user=self.user,
        )

    def _stored_task(
        self, row: Message, pending: PendingApproval | None, history_length: int | None
    ) -> dict[str, Any]:
        state = STATES.get(row.status, TaskState.WORKING)
        return task_body(
            row.id,
            row.conversation_id,
            state,
            query=row.query,
            answer=row.answer,
            error=row.error,
            calls=json.loads(pending.calls) if pending is not None else (),
            history_length=history_length,
            user=self.user,
        )

    async def _find(self, task_id: str) -> tuple[Message, PendingApproval | None]:
        """The task's message (and what it waits for), or :class:`A2AError` (task not found)."""
        db = self.runtime.db
        await db.writer.flush()  # the rows of runs of this process, queued behind
        async with db.sessionmaker() as session:
            row = await stored_tasks.user_message(session, self.app_id, self.user, task_id)
            if row is None:
                raise A2AError(TASK_NOT_FOUND, f"no task {task_id!r} of this key")
            pending = await stored_tasks.pending_for(session, task_id) if row.status == "waiting" else None
        return row, pending

    async def _run_id(self, message_id: str) -> str | None:
        """The id of the run answering a message: here, or (another worker's) in its stream's row."""
        for run_id, running_message in self.runtime.runs.running():
            if running_message == message_id:
                return run_id
        async with self.runtime.db.sessionmaker() as session:
            return await stored_tasks.stream_task_id(session, message_id)


def decisions_of(asked: Asked, calls: Sequence[Mapping[str, Any]]) -> list[Decision]:
    """The decisions a message gives on the calls waiting (see the module's docstring)."""
    for data in asked.data:
        given = data.get("decisions")
        if isinstance(given, list):
            return [_decision(d) for d in given]
    word = asked.text.strip().strip(".!").lower()
    if word in APPROVE_WORDS or word in DENY_WORDS:
        action: Literal["approve", "deny"] = "approve" if word in APPROVE_WORDS else "deny"
        return [Decision(str(c.get("id")), action) for c in calls]
    raise A2AError(
        INVALID_PARAMS,
        "this task waits for approval of tool calls: answer 'approve' or 'deny', or send a data part "
        '{"decisions": [{"call_id": ..., "action": "approve" | "deny"}]}',
    )


def _decision(given: Any) -> Decision:
    if not isinstance(given, dict) or not isinstance(given.get("call_id"), str):
        raise A2AError(INVALID_PARAMS, "each decision needs a call_id")
    action = given.get("action")
    if action not in ("approve", "deny"):
        raise A2AError(INVALID_PARAMS, "a decision's action is 'approve' or 'deny'")
    arguments = given.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise A2AError(INVALID_PARAMS, "a decision's arguments must be an object")
    return Decision(given["call_id"], action, str(given.get("reason") or ""), arguments)


def _state_name(state: str) -> str:
    return state.removeprefix("TASK_STATE_").lower().replace("_", "-")
