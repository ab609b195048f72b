"""A run paused for tool approvals, as Dify's Human Input form (the shapes of Dify 1.13.0).

A Dify 1.13+ client that handles human input reads a paused run from ``human_input_required`` and
``workflow_paused``, fetches the form with ``GET /v1/form/human_input/{form_token}`` and submits one of
its actions. loopwright's pause is put in that form: one form per pause, covering every call waiting;
two actions, ``approve`` and ``reject`` (Dify action ids), and the inputs ``reason`` (told to the model
when the calls are rejected) and, when one call waits, ``arguments`` (its arguments as JSON, to edit
before approving). The form's content is Markdown with Dify's ``{{#$output.NAME#}}`` markers where
the inputs go.

A pause for one ``ask_user`` call (the model asking the user a question, ``tools.builtin.ask_user``) is
a question form instead: its content is the question, its one input ``answer`` (a paragraph, or a
``select`` of the call's ``options``), its one action ``submit``.

The token is 256 random bits (``secrets``), sent once in the stream and stored only as its SHA-256
(``human_input_forms``), so a database dump holds no usable token.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loopwright.tools.builtin.ask_user import ASK_USER

__all__ = [
    "ACTION_TEXT",
    "ANSWER",
    "APPROVE",
    "ARGUMENTS",
    "NODE_TITLE",
    "QUESTION_TITLE",
    "REASON",
    "REJECT",
    "SUBMIT",
    "ApprovalForm",
    "new_token",
    "token_digest",
]

APPROVE = "approve"
REJECT = "reject"
REASON = "reason"  # the input told to the model with a rejection
ARGUMENTS = "arguments"  # the input holding the one waiting call's arguments (JSON), to edit
NODE_TITLE = "Tool approval"
ACTIONS = (
    {"id": APPROVE, "title": "Approve", "button_style": "primary"},
    {"id": REJECT, "title": "Reject", "button_style": "default"},
)
SUBMIT = "submit"  # the question form's one action
ANSWER = "answer"  # the question form's one input: the answer, the call's observation
QUESTION_TITLE = "Question"
QUESTION_ACTIONS = ({"id": SUBMIT, "title": "Submit", "button_style": "primary"},)
ACTION_TEXT = {a["id"]: a["title"] for a in (*ACTIONS, *QUESTION_ACTIONS)}


def new_token() -> str:
    """An unguessable form token (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _arguments_text(arguments: Mapping[str, Any] | str) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)


@dataclass(frozen=True, slots=True)
class ApprovalForm:
    """The form of one pause: ``node_id`` is the paused round's thought id, ``calls`` the calls
    waiting (``{"id", "tool", "arguments"}``), ``expires_at`` unix seconds."""

    form_id: str
    node_id: str
    calls: Sequence[Mapping[str, Any]]
    expires_at: int

    @property
    def editable(self) -> bool:
        """Whether the form offers the ``arguments`` input (one call waits, not a question)."""
        return len(self.calls) == 1 and self.question is None

    @property
    def question(self) -> Mapping[str, Any] | None:
        """The arguments of the ``ask_user`` call this form asks, when the pause is one such call."""
        if len(self.calls) != 1 or self.calls[0]["tool"] != ASK_USER:
            return None
        args = self.calls[0]["arguments"]
        return args if isinstance(args, Mapping) else {"question": str(args)}

    @property
    def options(self) -> list[str]:
        """The answers the question offers (none: any text)."""
        asked = self.question or {}
        options = asked.get("options")
        return [str(o) for o in options] if isinstance(options, list) else []

    @property
    def title(self) -> str:
        return QUESTION_TITLE if self.question is not None else NODE_TITLE

    @property
    def actions(self) -> list[dict[str, str]]:
        return [dict(a) for a in (QUESTION_ACTIONS if self.question is not None else ACTIONS)]

    def content(self) -> str:
        asked = self.question
        if asked is not None:
            return f"{str(asked.get('question') or '').strip()}\n\n{{{{#$output.{ANSWER}#}}}}"
        lines = ["The assistant wants to run tools that need your approval:", ""]
        if self.editable:
            lines[0] = "The assistant wants to run a tool that needs your approval:"
        for call in self.calls:
            lines.append(f"- **{call['tool']}** with `{_arguments_text(call['arguments'])}`")
        lines.append("")
        if self.editable:
            lines += [
                "Arguments (edit them before approving, if you like):",
                "",
                f"{{{{#$output.{ARGUMENTS}#}}}}",
                "",
            ]
        lines += ["Reason (told to the assistant if you reject):", "", f"{{{{#$output.{REASON}#}}}}"]
        return "\n".join(lines)

    def inputs(self) -> list[dict[str, Any]]:
        if self.question is not None:
            answer: dict[str, Any] = {"type": "paragraph", "output_variable_name": ANSWER, "default": None}
            if self.options:
                answer.update(type="select", options=self.options)
            return [answer]
        reason = {"type": "paragraph", "output_variable_name": REASON, "default": None}
        if not self.editable:
            return [reason]
        value = _arguments_text(self.calls[0]["arguments"])
        default = {"type": "constant", "selector": [], "value": value}
        return [{"type": "paragraph", "output_variable_name": ARGUMENTS, "default": default}, reason]

    def default_values(self) -> dict[str, str]:
        if not self.editable:
            return {}
        return {ARGUMENTS: _arguments_text(self.calls[0]["arguments"])}

    def data(self, token: str) -> dict[str, Any]:
        """The ``data`` of ``human_input_required`` (and, with ``type``, a ``workflow_paused`` reason)."""
        return {
            "form_id": self.form_id,
            "node_id": self.node_id,
            "node_title": self.title,
            "form_content": self.content(),
            "inputs": self.inputs(),
            "actions": self.actions,
            "display_in_ui": True,
            "form_token": token,
            "resolved_default_values": self.default_values(),
            "expiration_time": self.expires_at,
        }

    def definition(self) -> dict[str, Any]:
        """The body of ``GET /v1/form/human_input/{form_token}``."""
        return {
            "form_content": self.content(),
            "inputs": self.inputs(),
            "resolved_default_values": self.default_values(),
            "user_actions": self.actions,
            "expiration_time": self.expires_at,
        }

    def rendered(self, inputs: Mapping[str, Any]) -> str:
        """The content with the submitted values in place of the markers (``human_input_form_filled``)."""
        text = self.content()
        for name in (ARGUMENTS, REASON, ANSWER):
            text = text.replace(f"{{{{#$output.{name}#}}}}", str(inputs.get(name, "") or ""))
        return text
