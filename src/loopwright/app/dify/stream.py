"""Agent events → Dify's agent-chat stream: thought rows and typed wire events, built in memory.

One :class:`DifyStream` per message, with one hook per agent event type. ``feed(event)`` updates the
in-memory mirror of the message's ``MessageAgentThought`` rows (the same values the store persists)
and returns the wire events (:mod:`loopwright.app.dify.events`) to send, field for field as Dify's
Service API (reference §7.6). Building an event never reads the database:
the rows here are the source; the run's row writer saves a round's row when the round ends
(``app.run.message_writes``).

Order, as Dify's (one tool round, then the answer):
function calling — ``agent_thought``(empty) → ``agent_message``… → ``agent_thought``(tool, input) →
[``message_file``…] → ``agent_thought``(+observation) → ``agent_thought``(2, empty) →
``agent_message``… → ``agent_thought``(2, thought) → ``message_end``;
ReAct — the same, except that the final round emits no ``agent_thought``: its answer arrives as one
``agent_message`` before ``message_end``.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from loopwright.agent._snapshot import dump_usage, load_usage
from loopwright.agent.approvals import ApprovalDecision, Interruption
from loopwright.agent.events import (
    AgentEvent,
    ApprovalRequired,
    Finished,
    PlanCreated,
    PlanStep,
    PlanStepFinished,
    PlanStepStarted,
    PlanStepStatus,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolProgress,
)
from loopwright.agent.handoffs import HandoffStarted
from loopwright.agent.metrics import RunMetrics
from loopwright.agent.planning import render_checklist
from loopwright.app.dify.events import (
    AgentMessage,
    AgentThought,
    ErrorEvent,
    EventHead,
    HumanInputFormFilled,
    HumanInputFormTimeout,
    HumanInputRequired,
    MessageEnd,
    MessageFile,
    MessageReplace,
    TextMessage,
    ToolApprovalRequired,
    WireEvent,
    WorkflowPaused,
)
from loopwright.app.dify.human_input import (
    ACTION_TEXT,
    ANSWER,
    APPROVE,
    ARGUMENTS,
    NODE_TITLE,
    REASON,
    REJECT,
    SUBMIT,
    ApprovalForm,
    new_token,
)
from loopwright.model.entities import Usage
from loopwright.store.codec import (
    join_tool_names,
    round_inputs,
    round_observations,
    tool_labels,
    unique_tool_keys,
)
from loopwright.store.models import unix_seconds, utcnow
from loopwright.tools.base import (
    LLM_USAGE,
    RETRIEVER_RESOURCES,
    BlobMessage,
    FileMessage,
    ImageMessage,
    ToolOutput,
    VariableMessage,
)


@dataclass(slots=True)
class ThoughtRow:
    """The in-memory mirror of one ``MessageAgentThought`` row (one round)."""

    id: str
    position: int
    thought: str = ""
    names: list[str] = field(default_factory=list)
    inputs: list[Any] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)
    metas: list[dict[str, Any]] = field(default_factory=list)
    call_ids: list[str] = field(default_factory=list)
    message_files: list[str] = field(default_factory=list)
    answer: str = ""
    usage: Usage | None = None
    revised: bool = False  # changed after its round ended (a plan's checklist ticks): saved again at the end
    running: set[int] = field(default_factory=set)  # calls whose observation is a progress line

    @property
    def tool(self) -> str:
        return join_tool_names(self.names)

    @property
    def tool_input(self) -> str:
        return round_inputs(self.names, self.inputs)

    @property
    def observation(self) -> str:
        return round_observations(self.names, self.observations)

    def progress_keys(self) -> list[str]:
        """The keys (as in ``tool_input``) of the calls still showing progress, not a result."""
        if not self.running:
            return []
        keys = unique_tool_keys(self.names)
        return [keys[i] for i in sorted(self.running)]


class DifyStream:
    """Translates one run's agent events into Dify's wire events, one hook per event type, and keeps
    the in-memory mirror of the message's thought rows; ``answer`` and ``usage`` are the message's
    when it ends. A function-calling answer is every round's streamed text joined with newlines, as
    Dify saves it: the history shows what the client was shown. An app with structured output keeps
    the final round's answer (the JSON document its clients parse; docs/dify-compatibility.md)."""

    def __init__(
        self,
        head: EventHead,
        strategy: Literal["function-calling", "react"],
        first_position: int = 1,
        labels: Mapping[str, Mapping[str, str]] | None = None,
        *,
        extras: StreamExtras | None = None,
    ) -> None:
        self.head = head
        self.extras = extras or StreamExtras()
        self.interruption: Interruption | None = None  # set when the run paused for approvals
        self.paused_until: datetime | None = None  # when the calls waiting count as denied
        self.form: ApprovalForm | None = None  # the pause as Dify's Human Input form, and its token
        self.form_token = ""
        self.output: dict[str, Any] | None = None  # structured output's outcome, for message_end
        self.labels = labels or {}  # tool name → Dify's label (``{"en_US", "zh_Hans"}``); else the name
        self.react = strategy == "react"
        self.started = time.perf_counter()  # Dify's latency is the whole message's wall time
        self.first_token_at: float | None = None
        self.first_position = first_position  # thoughts continue after any the message already has
        self.thoughts: list[ThoughtRow] = []
        self.answer = ""
        self.usage = Usage()
        self.end: MessageEnd | None = None  # the message_end sent (a finished or stopped run)
        self.annotation_reply: dict[str, Any] | None = None  # Dify's {id, account}: answered by an annotation
        self.metrics: RunMetrics | None = None  # the run's figures, when it finished
        self.files: list[tuple[str, ToolOutput]] = []
        self._resources: list[list[dict[str, Any]]] = []  # retriever_resources of each tool call
        self._inner_usage = Usage()  # what apps called as tools spent
        self._text: list[str] = []  # the round's thought text
        self._streamed: list[str] = []  # every text delta of the round, whatever its channel
        # Dify's CoT answer is the final one only; a structured output is the final JSON document
        self._join_rounds = not self.react and not self.extras.structured_output
        self._round_texts: list[str] = []  # each finished round's streamed text (``_join_rounds``)
        self._paused_text = ""  # what a round paused (approvals) or cut (a takeover) had streamed
        self._round_open = False  # a round has started and not finished
        self._plan: _PlanView | None = None  # strategy "plan": the plan's row and its steps' states
        # handoffs (app.run.handoffs): the app answering now (None: the conversation's own), app names
        self.answered_by: str | None = None
        self.app_names: Mapping[str, str] = {}

    @property
    def partial_answer(self) -> str:
        """What a run that ended early had produced: the text streamed in its last round, else the
        last round's thought."""
        streamed = "".join(self._streamed).strip()
        return streamed or (self.thoughts[-1].thought if self.thoughts else "")

    def feed(self, event: AgentEvent | HandoffStarted) -> list[WireEvent]:
        """The wire events for one agent event (none for an event Dify does not show)."""
        hook = _HOOKS.get(type(event))
        wires = hook(self, event) if hook is not None else []
        return _as_plain(wires) if self.extras.plain and wires else wires

    def on_text_delta(self, event: TextDelta) -> list[WireEvent]:
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        self._streamed.append(event.text)
        if event.channel == "thought":
            self._text.append(event.text)
        return [AgentMessage(self.head, event.text)]

    def on_round_started(self, event: RoundStarted) -> list[WireEvent]:
        row = ThoughtRow(str(uuid.uuid4()), self.first_position + len(self.thoughts))
        self.thoughts.append(row)
        self._text = []
        self._streamed = []
        self._round_open = True
        return [self._thought(row)]

    def on_tool_call_started(self, event: ToolCallStarted) -> list[WireEvent]:
        row = self.thoughts[-1]
        if event.id in row.call_ids:  # a resumed round: the call was shown when the run paused
            return [self._thought(row)]
        row.thought = "".join(self._text).strip()
        row.names.append(event.name)
        row.inputs.append(event.arguments)
        row.observations.append("")
        row.metas.append({})
        row.call_ids.append(event.id)
        return [self._thought(row)]

    def on_tool_call_finished(self, event: ToolCallFinished) -> list[WireEvent]:
        for item in event.outputs:
            if isinstance(item, VariableMessage) and item.internal:
                if item.name == RETRIEVER_RESOURCES and isinstance(item.value, list):
                    self._resources.append(item.value)
                elif item.name == LLM_USAGE and isinstance(item.value, Usage):
                    self._inner_usage = self._inner_usage.plus(item.value)
        row = self.thoughts[-1]
        i = row.call_ids.index(event.id)
        row.observations[i] = event.observation
        row.running.discard(i)
        row.metas[i] = event.meta.to_dict()
        out: list[WireEvent] = []
        for output in event.files:
            file_id = str(uuid.uuid4())
            row.message_files.append(file_id)
            self.files.append((file_id, output))
            out.append(self._message_file(file_id, output))
        out.append(self._thought(row))
        return out

    def on_tool_progress(self, event: ToolProgress) -> list[WireEvent]:
        """A running call's progress: its observation, until its result replaces it, is the progress
        line (the round's thought sent again: Dify's clients update it in place)."""
        row = self.thoughts[-1]
        if event.id not in row.call_ids:
            return []
        line = event.text
        if event.fraction is not None:
            line = f"{line} ({max(0.0, min(1.0, event.fraction)):.0%})".strip()
        i = row.call_ids.index(event.id)
        row.observations[i] = line
        row.running.add(i)
        return [self._thought(row)]

    def on_round_finished(self, event: RoundFinished) -> list[WireEvent]:
        row = self.thoughts[-1]
        row.usage = event.usage
        self.usage = self.usage.plus(event.usage)  # the total so far; a stopped run ends with it
        if self._join_rounds:
            self._round_texts.append(self._paused_text + "".join(self._streamed))
            self._paused_text = ""
        self._round_open = False
        row.thought = event.thought.strip()
        if event.answer is None:
            return []  # the tool events already showed this round's state
        row.answer = event.answer
        if self.react:
            # Dify appends a ReAct final answer to the last thought and shows no event for it (unless
            # the answer is the thought itself: a plain-text reply).
            if row.thought != event.answer:
                row.thought += event.answer
            return []
        return [self._thought(row)]

    def on_approval_required(self, event: ApprovalRequired) -> list[WireEvent]:
        """The round's calls are shown (without observations) and the pause announced."""
        # the round's text was shown before the pause: its part of the answer when the round ends
        self._paused_text = "".join(self._streamed)
        row = self.thoughts[-1]
        row.thought = event.thought.strip()
        for call in event.calls:
            row.names.append(call.name)
            row.inputs.append(call.arguments)
            row.observations.append("")
            row.metas.append({})
            row.call_ids.append(call.id)
        self.paused_until = utcnow() + timedelta(seconds=self.extras.approval_timeout)
        calls = [c.to_dict() for c in event.pending]
        expires_at = unix_seconds(self.paused_until)
        # the same pause as Dify 1.13 announces a Human Input node's (app.dify.human_input)
        self.form = ApprovalForm(str(uuid.uuid4()), row.id, calls, expires_at)
        self.form_token = new_token()
        form = self.form.data(self.form_token)
        elapsed = time.perf_counter() - self.started
        reason = {"type": "human_input_required", **form}
        return [
            self._thought(row),
            ToolApprovalRequired(self.head, row.id, calls, expires_at),
            HumanInputRequired(self.head, form),
            WorkflowPaused(self.head, [reason], elapsed, self.usage.total_tokens, len(self.thoughts)),
        ]

    def resumed(
        self, form: ApprovalForm, decisions: Sequence[ApprovalDecision], timed_out: bool
    ) -> WireEvent:
        """The first event of a resumed message, as Dify's after a Human Input node: the form filled
        (approved if any call was, else rejected) or timed out."""
        if timed_out:
            return HumanInputFormTimeout(self.head, form.node_id, form.title, form.expires_at)
        if form.question is not None:
            answer = next((d.answer for d in decisions if d.answer is not None), None)
            if answer is not None:
                text, title = form.rendered({ANSWER: answer}), ACTION_TEXT[SUBMIT]
                return HumanInputFormFilled(self.head, form.node_id, form.title, text, SUBMIT, title)
        action = APPROVE if any(d.approved for d in decisions) else REJECT
        reason = next((d.reason for d in decisions if not d.approved and d.reason), "")
        edited = next((d.arguments for d in decisions if d.arguments is not None), None)
        inputs: dict[str, Any] = {REASON: reason}
        if form.editable:
            inputs[ARGUMENTS] = json.dumps(edited, ensure_ascii=False, sort_keys=True) if edited else ""
            inputs[ARGUMENTS] = inputs[ARGUMENTS] or form.default_values()[ARGUMENTS]
        return HumanInputFormFilled(
            self.head, form.node_id, NODE_TITLE, form.rendered(inputs), action, ACTION_TEXT[action]
        )

    def on_plan_created(self, event: PlanCreated) -> list[WireEvent]:
        """The plan, as its round's thought: a checklist, re-sent (same ``id``) as its steps end."""
        row = self.thoughts[-1]
        self._plan = _PlanView(row, "".join(self._text).strip(), event.steps, {})
        row.thought = self._plan.text()
        return [self._thought(row)]

    def on_plan_step_started(self, event: PlanStepStarted) -> list[WireEvent]:
        # the step's task is its round's thought (a step round has no model text)
        self._text.append(f"{event.step.id}: {event.step.task}\n")
        return []

    def on_plan_step_finished(self, event: PlanStepFinished) -> list[WireEvent]:
        plan = self._plan
        if plan is None or event.step not in plan.steps:
            return []
        plan.status[event.step.id] = event.status
        plan.row.thought = plan.text()
        plan.row.revised = True
        return [self._thought(plan.row)]

    def on_handoff_started(self, event: HandoffStarted) -> list[WireEvent]:
        """Another app answers from here on: a thought of its own says which (``answered_by`` beside
        Dify's fields). The handing app's run ends without a ``finished``: what it spent is kept apart,
        as an inner run's, since the answering app's ``finished`` sets the rounds' usage."""
        self._inner_usage = self._inner_usage.plus(self.usage)
        self.usage = Usage()
        self.answered_by = event.target
        name = self.app_names.get(event.target) or event.target
        text = f"{name} answers from here on" + (f": {event.reason}" if event.reason else ".")
        row = ThoughtRow(str(uuid.uuid4()), self.first_position + len(self.thoughts), thought=text)
        self.thoughts.append(row)
        self._text, self._streamed = [], []
        return [dataclasses.replace(self._thought(row), answered_by=event.target)]

    def on_finished(self, event: Finished) -> list[WireEvent]:
        result = event.result
        self.usage = result.usage
        self.metrics = result.metrics
        if result.interruption is not None:  # paused: no message_end until the run has answered
            self.interruption = result.interruption
            return []
        # Dify's function-calling runner adds each round's text and a newline, and the saved
        # answer is stripped (fc_agent_runner ``final_answer``, the task pipeline's ``_save_message``).
        joined = "".join(f"{text}\n" for text in self._round_texts).strip()
        # Dify's agent app saves its runner's final output alone (the rounds' text went as the process)
        join = self._join_rounds and not self.extras.whole_answer_message
        self.answer = joined if join else result.text
        if self.extras.structured_output:
            self.output = {"valid": not result.output_fallback, "errors": result.output_errors}
        evidence = self.extras.evidence
        if evidence is not None and not evidence.found(self.retriever_resources):
            self.answer = evidence.reply
            return [MessageReplace(self.head, evidence.reply, "no_evidence"), *self._closing()]
        return self._closing()

    def _closing(self) -> list[WireEvent]:
        """The events that end an answered message: ``message_end``, after the whole answer as one
        ``message`` event in Dify's ``agent`` app mode."""
        if self.extras.whole_answer_message:
            return [TextMessage(self.head, self.answer), self.message_end()]
        return [self.message_end()]

    @property
    def total_usage(self) -> Usage:
        """The message's usage: its own rounds and the runs of apps it called as tools."""
        return self.usage.plus(self._inner_usage) if self._inner_usage.total_tokens else self.usage

    @property
    def retriever_resources(self) -> list[dict[str, Any]]:
        """The citations of every retriever call so far, deduplicated and numbered as Dify does."""
        if not self._resources:
            return []
        from loopwright.knowledge.citations import merge_retriever_resources  # numpy: only when used

        return merge_retriever_resources(self._resources)

    def usage_dict(self) -> dict[str, Any]:
        """The message's usage in Dify's shape, timed as Dify times it: ``latency`` from the message's
        start to now (model calls and tools alike), ``time_to_first_token`` to its first streamed
        text, ``time_to_generate`` from there to now (both null when nothing was streamed)."""
        now = time.perf_counter()
        usage = self.total_usage.to_dict()
        usage["latency"] = now - self.started
        first = self.first_token_at
        usage["time_to_first_token"] = None if first is None else first - self.started
        usage["time_to_generate"] = None if first is None else now - first
        return usage

    def message_end(self) -> MessageEnd:
        metadata: dict[str, Any] = {
            "annotation_reply": self.annotation_reply,
            "retriever_resources": self.retriever_resources,
            "usage": self.usage_dict(),
        }
        if self.output is not None:  # ours, beside Dify's keys
            metadata["structured_output"] = self.output
        if self.extras.evidence is not None:
            metadata["evidence"] = {"found": self.extras.evidence.found(self.retriever_resources)}
        self.end = MessageEnd(self.head, metadata)  # what is saved is what was sent
        return self.end

    def saved(self) -> dict[str, Any]:
        """What a paused message's stream must remember to go on (JSON data; see ``restore``)."""
        return {
            # a call's progress is not kept: no call runs while a message waits
            "thoughts": [{**asdict(r), "usage": _usage_data(r.usage), "running": []} for r in self.thoughts],
            "resources": list(self._resources),  # a copy: a durable step may keep it later
            "inner_usage": _usage_data(self._inner_usage),
            "round_texts": [*self._round_texts],
            # the open round's text so far: a worker that takes the run up goes on from there
            "paused_text": self._paused_text or ("".join(self._streamed) if self._round_open else ""),
            "answered_by": self.answered_by,
        }

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take up a paused message's rows (its thoughts continue; files stay with the message)."""
        for r in saved["thoughts"]:
            usage = load_usage(r["usage"]) if r["usage"] is not None else None
            row = ThoughtRow(**{**r, "usage": usage, "running": set(r.get("running", ()))})
            self.thoughts.append(row)
            if usage is not None:
                self.usage = self.usage.plus(usage)
        self._resources = list(saved["resources"])
        self._inner_usage = load_usage(saved["inner_usage"])
        # absent from a pause saved before answers were joined
        self._round_texts = list(saved.get("round_texts", ()))
        self._paused_text = saved.get("paused_text", "")
        self.answered_by = saved.get("answered_by")

    def error(self, exc: BaseException) -> ErrorEvent:
        """Dify's ``error`` event for what ended a run."""
        return ErrorEvent(self.head, exc)

    def _thought(self, row: ThoughtRow) -> AgentThought:
        return AgentThought(
            self.head,
            id=row.id,
            position=row.position,
            thought=row.thought,
            observation=row.observation,
            tool=row.tool,
            tool_labels=tool_labels(row.tool, self.labels),
            tool_input=row.tool_input,
            message_files=list(row.message_files),
            tool_progress=row.progress_keys(),
        )

    def _message_file(self, file_id: str, output: ToolOutput) -> MessageFile:
        url = output.url if isinstance(output, ImageMessage | FileMessage) else ""
        if isinstance(output, ImageMessage):
            kind = file_type(output.mime_type or "image/png")
        elif isinstance(output, FileMessage | BlobMessage):
            kind = file_type(output.mime_type)
        else:
            kind = "custom"
        return MessageFile(self.head, id=file_id, type=kind, url=url)


# The hook of each agent event: functions of the class, not bound methods kept on each stream (a
# stream holding its own bound methods is a reference cycle, freed only by a full collection).
_HOOKS: dict[type[AgentEvent | HandoffStarted], Callable[[DifyStream, Any], list[WireEvent]]] = {
    TextDelta: DifyStream.on_text_delta,
    RoundStarted: DifyStream.on_round_started,
    ToolCallStarted: DifyStream.on_tool_call_started,
    ToolCallFinished: DifyStream.on_tool_call_finished,
    ToolProgress: DifyStream.on_tool_progress,
    RoundFinished: DifyStream.on_round_finished,
    ApprovalRequired: DifyStream.on_approval_required,
    PlanCreated: DifyStream.on_plan_created,
    PlanStepStarted: DifyStream.on_plan_step_started,
    PlanStepFinished: DifyStream.on_plan_step_finished,
    Finished: DifyStream.on_finished,
    HandoffStarted: DifyStream.on_handoff_started,
}


@dataclass(slots=True)
class _PlanView:
    """A plan as its thought row shows it: the model's text, then the checklist."""

    row: ThoughtRow
    prefix: str
    steps: tuple[PlanStep, ...]
    status: dict[str, PlanStepStatus]

    def text(self) -> str:
        checklist = render_checklist(self.steps, self.status)
        return f"{self.prefix}\n\n{checklist}" if self.prefix else checklist


@dataclass(frozen=True, slots=True)
class EvidencePolicy:
    """An app that answers only from retrieved segments: without one scoring ``min_score`` or more,
    the answer is ``reply`` (sent as ``message_replace``) instead of the model's."""

    reply: str
    min_score: float = 0.0

    def found(self, resources: list[dict[str, Any]]) -> bool:
        return any((r.get("score") or 0.0) >= self.min_score for r in resources)


@dataclass(frozen=True, slots=True)
class StreamExtras:
    """What an app adds to Dify's stream: how long approvals wait (seconds), whether the agent has
    an output type (its outcome goes in ``message_end``), the evidence policy."""

    approval_timeout: float = 3600.0
    structured_output: bool = False
    evidence: EvidencePolicy | None = None
    # Dify's ``agent`` app mode: after the streamed ``agent_message`` pieces, the whole answer comes
    # again as one ``message`` event before ``message_end`` (its runner publishes the final output so)
    whole_answer_message: bool = False
    # a chat or completion app (no tools): Dify's ``message`` events carry the text, no thoughts are shown
    plain: bool = False


def _as_plain(wires: list[WireEvent]) -> list[WireEvent]:
    """A chat app's stream, as Dify's chat and completion apps send it: the text as ``message``
    events, and no ``agent_thought`` (its one round is kept as a row, not shown)."""
    return [
        TextMessage(w.head, w.answer) if type(w) is AgentMessage else w
        for w in wires
        if type(w) is not AgentThought
    ]


def _usage_data(usage: Usage | None) -> dict[str, Any] | None:
    return dump_usage(usage) if usage is not None else None


DOCUMENT_EXTENSIONS = frozenset({"pdf", "txt", "md", "markdown"})


def file_type(mime: str, extension: str = "") -> str:
    """Dify's file type — image, audio, video, document or custom — from a MIME type (and a file
    name's extension, for a generic type): of an upload, and of a message file."""
    major = mime.split("/", 1)[0]
    if major in ("image", "video", "audio"):
        return major
    if major == "text" or mime == "application/pdf" or extension in DOCUMENT_EXTENSIONS:
        return "document"
    return "custom"
