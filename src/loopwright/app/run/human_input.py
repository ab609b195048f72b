"""Runs paused for approvals, decided through Dify 1.13's Human Input form (``app.dify.human_input``).

When a message pauses, its form's row (``human_input_forms``) is written with its
``pending_approvals`` row: the token's SHA-256, the app and Service API user it belongs to, the calls
it decides on, the deadline. ``POST /v1/form/human_input/{form_token}`` maps the form's action to
decisions — ``approve`` approves every call waiting (the one call with the ``arguments`` input's JSON
object, when it was edited), ``reject`` denies them with the ``reason`` input — marks the form used
(once: a database update only one request wins) and resumes the run as the approvals endpoint does,
in the background: the client follows it on ``GET /v1/workflow/{task_id}/events``. A question's
form (one ``ask_user`` call) has the action ``submit`` and the input ``answer``, which becomes the
call's observation.

A form is refused (Dify's answers): unknown token, another app's, another user's → 404; used, past its
deadline, or no longer the pause waiting (decided another way) → 412.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from loopwright.app.dify.events import HumanInputFormFilled, HumanInputFormTimeout
from loopwright.app.dify.human_input import (
    ANSWER,
    APPROVE,
    ARGUMENTS,
    REASON,
    REJECT,
    SUBMIT,
    ApprovalForm,
    token_digest,
)
from loopwright.app.dify.stream import DifyStream
from loopwright.app.run.approvals import ApprovalsRequest, Decision, Resumption
from loopwright.app.run.plan import RunPlan
from loopwright.errors import LoopwrightError, NotFoundError, UserInputError
from loopwright.store import approvals as store
from loopwright.store.db import Database
from loopwright.store.models import HumanInputForm, PendingApproval, unix_seconds, utcnow

__all__ = [
    "FormClosedError",
    "FormExpiredError",
    "form_of",
    "form_row",
    "resumed_event",
    "submission",
]

FORM_NOT_FOUND = "Form not found"
MAX_ANSWER = 10_000  # characters of an answer kept (it goes into the model's context)


class FormClosedError(LoopwrightError):
    """The form was submitted, or its pause was decided another way (Dify: 412)."""

    status = 412
    code = "human_input_form_submitted"


class FormExpiredError(LoopwrightError):
    """The form's deadline has passed (Dify: 412)."""

    status = 412
    code = "human_input_form_expired"


def form_row(plan: RunPlan, form: ApprovalForm, token: str, expires_at: datetime) -> dict[str, Any]:
    """The ``human_input_forms`` row of a message that paused."""
    return {
        "token_hash": token_digest(token),
        "form_id": form.form_id,
        "task_id": plan.head.task_id,
        "app_id": plan.request.app_id,
        "user": plan.request.user,
        "node_id": form.node_id,
        "calls": json.dumps(list(form.calls), ensure_ascii=False),
        "created_at": utcnow(),
        "expires_at": expires_at,
    }


def _form(row: HumanInputForm) -> ApprovalForm:
    return ApprovalForm(row.form_id, row.node_id, json.loads(row.calls), unix_seconds(row.expires_at))


def resumed_event(stream: DifyStream, resume: Resumption) -> HumanInputFormFilled | HumanInputFormTimeout:
    """The first event of a message resumed by a decision or its timeout, as Dify's."""
    calls = [c.to_dict() for c in resume.interruption.calls]
    form = ApprovalForm("", stream.thoughts[-1].id, calls, resume.expires_at)
    event = stream.resumed(form, resume.decisions, resume.timed_out)
    assert isinstance(event, HumanInputFormFilled | HumanInputFormTimeout)
    return event


@dataclass(frozen=True, slots=True)
class OpenForm:
    """A form found by its token, this app's."""

    row: HumanInputForm
    form: ApprovalForm


async def form_of(db: Database, token: str, app_id: str, now: datetime, user: str | None = None) -> OpenForm:
    """The form of ``token`` if it is this app's (and, given, this user's) and still open; else
    ``NotFoundError`` (unknown, another app's or user's) or a 412 error (used, expired, decided)."""
    async with db.sessionmaker() as session:
        row = await store.get_form(session, token_digest(token))
        if row is None or row.app_id != app_id or (user is not None and row.user != user):
            raise NotFoundError(FORM_NOT_FOUND)
        if row.submitted_at is not None:
            raise FormClosedError("The form has already been submitted")
        if now >= row.expires_at:
            raise FormExpiredError("The form has expired")
        pending = await store.get_pending(session, row.task_id)
    if not _same_pause(pending, row):
        raise FormClosedError("The run is no longer waiting on this form (it was decided another way)")
    return OpenForm(row, _form(row))


def _same_pause(pending: PendingApproval | None, row: HumanInputForm) -> bool:
    if pending is None:
        return False
    waiting = sorted(c["id"] for c in json.loads(pending.calls))
    return waiting == sorted(c["id"] for c in json.loads(row.calls))


def _edited(form: ApprovalForm, inputs: Mapping[str, Any]) -> dict[str, Any] | None:
    """The one call's arguments as edited in the form; None when left as they were."""
    text = inputs.get(ARGUMENTS)
    if not form.editable or text is None or text == form.default_values()[ARGUMENTS]:
        return None
    if not isinstance(text, str):
        raise UserInputError(f"the form input {ARGUMENTS!r} must be a string (a JSON object)")
    try:
        value = json.loads(text)
    except ValueError:
        raise UserInputError(f"the form input {ARGUMENTS!r} is not valid JSON") from None
    if not isinstance(value, dict):
        raise UserInputError(f"the form input {ARGUMENTS!r} must be a JSON object")
    return value


def submission(opened: OpenForm, action: str, inputs: Mapping[str, Any], user: str) -> ApprovalsRequest:
    """The decisions a submitted form stands for (its action on every call waiting)."""
    form, row = opened.form, opened.row
    if form.question is not None:
        return _answer(opened, action, inputs, user)
    if action not in (APPROVE, REJECT):
        raise UserInputError(f"unknown action {action!r}: choose {APPROVE!r} or {REJECT!r}")
    unknown = sorted(set(inputs) - {a["output_variable_name"] for a in form.inputs()})
    if unknown:
        raise UserInputError(f"the form has no input {unknown[0]!r}")
    reason = inputs.get(REASON) or ""
    if not isinstance(reason, str):
        raise UserInputError(f"the form input {REASON!r} must be a string")
    if action == APPROVE:
        edited = _edited(form, inputs)
        decisions = [Decision(c["id"], "approve", arguments=edited) for c in form.calls]
    else:
        decisions = [Decision(c["id"], "deny", reason[:2000]) for c in form.calls]
    return ApprovalsRequest(row.task_id, row.app_id, user, decisions, response_mode="blocking")


def _answer(opened: OpenForm, action: str, inputs: Mapping[str, Any], user: str) -> ApprovalsRequest:
    """The answer a submitted question form gives its ``ask_user`` call."""
    form, row = opened.form, opened.row
    if action != SUBMIT:
        raise UserInputError(f"unknown action {action!r}: the question's form has only {SUBMIT!r}")
    unknown = sorted(set(inputs) - {ANSWER})
    if unknown:
        raise UserInputError(f"the form has no input {unknown[0]!r}")
    answer = inputs.get(ANSWER)
    if not isinstance(answer, str) or not answer.strip():
        raise UserInputError(f"the form input {ANSWER!r} must be the answer (a string that is not empty)")
    if form.options and answer not in form.options:
        raise UserInputError(f"the form input {ANSWER!r} must be one of the options: {form.options}")
    decisions = [Decision(form.calls[0]["id"], "answer", answer=answer.strip()[:MAX_ANSWER])]
    return ApprovalsRequest(row.task_id, row.app_id, user, decisions, response_mode="blocking")


async def use(db: Database, opened: OpenForm, action: str) -> None:
    """Mark the form used; a 412 error when another request used it first."""
    async with db.sessionmaker() as session:
        if not await store.use_form(session, opened.row.token_hash, action, utcnow()):
            raise FormClosedError("The form has already been submitted")


async def unuse(db: Database, opened: OpenForm) -> None:
    """Open the form again: the run it decided could not be resumed (it still waits)."""
    async with db.sessionmaker() as session:
        await store.reopen_form(session, opened.row.token_hash)
