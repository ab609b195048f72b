"""app.approvals: the decisions checked against a paused run, and the timer that expires them."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timedelta

import pytest

from loopwright.agent.approvals import Interruption, PendingCall
from loopwright.agent.run_state import RunState
from loopwright.app.run.approvals import TIMEOUT_REASON, ApprovalTimer, Decision, check_owner, resumption
from loopwright.errors import NotFoundError, UserInputError
from loopwright.model.entities import UserMessage
from loopwright.store.models import PendingApproval

NOW = datetime(2026, 1, 1, 12, 0)


def row(expires_in: float = 60.0) -> PendingApproval:
    interruption = Interruption(
        [PendingCall("a", "pay", {"amount": 1}), PendingCall("b", "pay", {"amount": 2})],
        RunState("", "pay", UserMessage("pay"), []),
    )
    return PendingApproval(
        task_id="t",
        app_id="app",
        user="alice",
        run_state=interruption.to_json(),
        stream_state=json.dumps({"thoughts": []}),
        expires_at=NOW + timedelta(seconds=expires_in),
    )


def test_decisions_are_checked_against_the_calls_waiting() -> None:
    resume = resumption(
        row(), [Decision("a", "approve", arguments={"amount": 3}), Decision("b", "deny", "no")], NOW
    )
    first, second = resume.decisions
    assert first.approved and first.arguments == {"amount": 3}
    assert not second.approved and second.reason == "no"
    with pytest.raises(UserInputError, match="'c'"):
        resumption(row(), [Decision("c", "approve")], NOW)
    with pytest.raises(UserInputError, match="two decisions"):
        resumption(row(), [Decision("a", "approve"), Decision("a", "deny")], NOW)


def test_past_the_deadline_every_call_is_denied() -> None:
    resume = resumption(row(expires_in=-1), [Decision("a", "approve")], NOW)
    assert [(d.call_id, d.approved, d.reason) for d in resume.decisions] == [
        ("a", False, TIMEOUT_REASON),
        ("b", False, TIMEOUT_REASON),
    ]


def test_only_the_owner_sees_a_paused_run() -> None:
    assert check_owner(row(), "app", "alice").task_id == "t"
    for app_id, user in (("app", "bob"), ("other", "alice")):
        with pytest.raises(NotFoundError):
            check_owner(row(), app_id, user)
    with pytest.raises(NotFoundError):
        check_owner(None, "app", "alice")


async def test_the_timer_expires_on_its_interval_and_survives_a_failure() -> None:
    calls = 0
    twice = asyncio.Event()

    async def expire() -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise OSError("database gone")
        twice.set()
        return 0

    timer = ApprovalTimer(expire, interval=0.001)
    timer.start()
    await asyncio.wait_for(twice.wait(), 10)
    await timer.aclose()
    assert calls >= 2
