"""Approvals of an app's tool calls: a paused message stored, and the decisions that resume it.

When the agent pauses before calls that need approval (``agent.approvals``), the message is saved
as ``waiting`` and a ``pending_approvals`` row keeps what resuming needs: the agent's interruption
(JSON), the message's thought rows, who asked. Nothing runs meanwhile — no task, no model, no worker
is held — so the decision may come hours later, to any worker, after a restart.
``AppRuntime.resume`` takes the row (once: a second decision, or the timeout, finds it gone), checks
the decisions against the calls waiting, and runs the rest of the message under the same task id.
A call of ``ask_user`` (a question to the user) is decided by its answer (``"answer"``), which
becomes its observation. After the app's ``approval.timeout`` the calls count as denied (a question
as answered by nobody): the :class:`ApprovalTimer` resumes
overdue runs that way, and a decision that arrives late is replaced by the denial.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.app.dify.encoder import DifyEncoder
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store.models import PendingApproval, unix_seconds
from loopwright.tools.builtin.ask_user import ASK_USER, NOBODY_ANSWERED

log = logging.getLogger("loopwright.app")

TIMEOUT_REASON = "no decision came in time (the approval timed out)"
NOT_WAITING = "No run of this user is waiting for approval under this task id."


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision as a client sends it."""

    call_id: str
    action: Literal["approve", "deny", "answer"]
    reason: str = ""
    arguments: Mapping[str, Any] | None = None  # approve with these arguments instead
    answer: str = ""  # "answer": the user's answer to an ``ask_user`` call (its observation)


@dataclass(frozen=True, slots=True)
class ApprovalsRequest:
    """The decisions on a paused message, from the user it belongs to."""

    task_id: str
    app_id: str
    user: str
    decisions: Sequence[Decision]
    response_mode: Literal["streaming", "blocking"] = "streaming"
    # The rest of the stream's encoder, as MessageRequest's (another wire's, app.wires); None: Dify's
    encoder: Callable[[int], DifyEncoder] | None = None


@dataclass(frozen=True, slots=True)
class Resumption:
    """What a resumed message's run starts from."""

    interruption: Interruption
    decisions: list[ApprovalDecision]
    stream_state: dict[str, Any]
    expires_at: int = 0  # unix seconds: the pause's deadline
    timed_out: bool = False  # no decision came in time: every call is denied


class ApprovalsClosedError(NotFoundError):
    """The run is not waiting for approval any more (decided or timed out meanwhile)."""


def pending_values(
    *,
    task_id: str,
    app_id: str,
    user: str,
    end_user_id: str,
    config_id: str,
    conversation_id: str,
    message_id: str,
    message_created_at: datetime,
    interruption: Interruption,
    stream_state: dict[str, Any],
    paused_at: datetime,
    expires_at: datetime,
) -> dict[str, Any]:
    """The ``pending_approvals`` row of a paused message."""
    return {
        "task_id": task_id,
        "app_id": app_id,
        "user": user,
        "end_user_id": end_user_id,
        "config_id": config_id,
        "conversation_id": conversation_id,
        "message_id": message_id,
        "message_created_at": message_created_at,
        "calls": json.dumps([c.to_dict() for c in interruption.calls], ensure_ascii=False),
        "run_state": interruption.to_json(),
        "stream_state": json.dumps(stream_state, ensure_ascii=False),
        "created_at": paused_at,
        "expires_at": expires_at,
    }


def check_owner(row: PendingApproval | None, app_id: str, user: str) -> PendingApproval:
    """The row, when it is this app's and user's (anyone else is told nothing is waiting)."""
    if row is None or row.app_id != app_id or row.user != user:
        raise NotFoundError(NOT_WAITING)
    return row


def resumption(row: PendingApproval, decisions: Sequence[Decision], now: datetime) -> Resumption:
    """The decisions checked against the calls waiting (an unknown or repeated call id, or edited
    arguments that are not an object, are refused); past the deadline every call is denied."""
    interruption = Interruption.from_json(row.run_state)
    waiting = {c.id for c in interruption.calls}
    questions = {c.id for c in interruption.calls if c.tool == ASK_USER}
    seen: set[str] = set()
    checked: list[ApprovalDecision] = []
    for d in decisions:
        if d.call_id not in waiting:
            raise UserInputError(f"no tool call {d.call_id!r} is waiting for approval in this run")
        if d.call_id in seen:
            raise UserInputError(f"tool call {d.call_id!r} has two decisions")
        seen.add(d.call_id)
        checked.append(_decision(d, questions))
    timed_out = now >= row.expires_at
    if timed_out:
        checked = [_timed_out(c, questions) for c in sorted(waiting)]
    state = json.loads(row.stream_state)
    return Resumption(interruption, checked, state, unix_seconds(row.expires_at), timed_out)


def _decision(d: Decision, questions: set[str]) -> ApprovalDecision:
    if d.action == "answer":
        if d.call_id not in questions:
            raise UserInputError(f"tool call {d.call_id!r} is not a question: approve or deny it")
        return ApprovalDecision.answered(d.call_id, d.answer)
    if d.action == "approve":
        args = dict(d.arguments) if d.arguments is not None else None
        return ApprovalDecision.approve(d.call_id, args)
    return ApprovalDecision.deny(d.call_id, d.reason)


def _timed_out(call_id: str, questions: set[str]) -> ApprovalDecision:
    """A call nobody decided in time: denied, or a question answered by saying nobody answered."""
    if call_id in questions:
        return ApprovalDecision.answered(call_id, NOBODY_ANSWERED)
    return ApprovalDecision.deny(call_id, TIMEOUT_REASON)


class ApprovalTimer:
    """Every ``interval`` seconds, resumes the paused runs whose time is up (their calls denied)."""

    def __init__(self, expire: Callable[[], Awaitable[int]], interval: float = 15.0) -> None:
        self._expire = expire
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run(), name="loopwright-approvals")

    async def _run(self) -> None:
        while True:
            try:
                await self._expire()
            except Exception:  # the database is busy or gone: try again next time
                log.warning("could not resume the runs whose approval timed out", exc_info=True)
            await asyncio.sleep(self._interval)

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
