"""One agent-chat message, from request to stored answer: the steps behind ``AppRuntime.start``.

:func:`prepare` resolves what a :class:`MessageRequest` names — the app's configuration (pinned by the
conversation when it continues one), the end user and the conversation's history — checks the
message's inputs against the app's form and the files against its upload settings, and returns the
:class:`Message`: the one object that describes the message from then on. It only reads (mostly from
memory, :mod:`loopwright.app.lookup`) and raises before anything is written. :func:`run_events` then
runs the agent and yields Dify's wire events as they happen, while
:class:`~app.run.message_writes.MessageWrites`
queues the rows at the end of each round and on every way out — an answer, an error, a stop — so
nothing done so far is lost. Building an event never reads the database.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from loopwright.agent import Agent, RoundFinished
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent
from loopwright.app.config import AppConfig
from loopwright.app.dify.events import (
    EventHead,
    MessageEnd,
    MessageReplace,
    ToolApprovalRequired,
    TtsMessage,
    TtsMessageEnd,
    WireEvent,
)
from loopwright.app.dify.stream import DifyStream, EvidencePolicy, StreamExtras
from loopwright.app.errors import AppUnavailableError, ConversationNotFoundError
from loopwright.app.files.chat_files import ChatFiles, resolve_chat_files
from loopwright.app.files.file_inputs import resolve_file_inputs
from loopwright.app.guards.moderation import OutputGuard
from loopwright.app.guards.steps import (
    OUTPUT_MODERATION,
    Guards,
    OutputFlagged,
    Prelude,
    direct_answer,
    moderated,
)
from loopwright.app.inputs import FILE_TYPES, validate_inputs
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.run.approvals import Resumption, pending_values
from loopwright.app.run.history import load_history, trim_to_budget
from loopwright.app.run.message_writes import MessageWrites
from loopwright.app.run.runs import Run, RunOutcome, Status
from loopwright.model.entities import ContentPart, PromptMessage, UserMessage
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import new_id, unix_seconds, utcnow
from loopwright.tools.base import Tool, ToolContext
from loopwright.tools.net import NetworkPolicy, network_policy

log = logging.getLogger("loopwright.app")

RESERVED_ANSWER_TOKENS = 1024  # room kept for the reply when history is trimmed to the context
ResponseMode = Literal["streaming", "blocking"]


@dataclass(frozen=True, slots=True)
class MessageRequest:
    """One message as a caller asks for it (an HTTP request, the CLI, an app calling an app)."""

    app_id: str
    user: str  # the end user's own id in the app (Dify's ``user``)
    query: str
    inputs: Mapping[str, Any] | None = None  # the form's values for this message (checked each turn)
    conversation_id: str | None = None  # None: a new conversation
    files: Sequence[Mapping[str, Any]] = ()  # Dify's file entries (checked against the app's settings)
    response_mode: ResponseMode = "streaming"
    call_depth: int = 0  # how deep in apps calling apps as tools this message is
    auto_generate_name: bool = False  # Dify's flag: name a new conversation with the model (app.run.naming)
    task_id: str | None = None  # the run's id when the caller chose it (a retried request: one run)


@dataclass(slots=True)
class Message:
    """One message, resolved: where it goes and everything its run starts from."""

    head: EventHead  # task, message and conversation ids, creation time
    created: datetime  # the creation time of its rows (``head.created_at`` in seconds)
    request: MessageRequest
    version: ConfigVersion  # the configuration it runs with
    inputs: dict[str, Any]
    history: list[PromptMessage]
    files: ChatFiles
    new_conversation: bool
    end_user: str | asyncio.Task[str]  # the id, or the task finding it (a new user, new conversation)
    writes: MessageWrites  # its rows, queued on the database writer
    prompt_inputs: dict[str, Any] | None = None  # the inputs as ``{{variable}}`` shows them (files readable)


async def prepare(
    db: Database,
    lookup: AppLookup,
    request: MessageRequest,
    *,
    upload_dir: Path,
    file_policy: NetworkPolicy | None = None,
) -> Message:
    """Resolve and check ``request`` (see the module's docstring). Raises
    :class:`ConversationNotFoundError` (not this app's or user's, or deleted),
    :class:`AppUnavailableError`, ``InputError`` and ``UserInputError`` for bad files. ``file_policy``
    is the SSRF guard's for remote files of ``file`` inputs (default: no private address)."""
    app_id = request.app_id
    if request.conversation_id:
        end_user_id = await lookup.end_user_id(app_id, request.user)
        version, history = await _continued(db, lookup, app_id, end_user_id, request.conversation_id)
        end_user: str | asyncio.Task[str] = end_user_id
    else:
        latest = await lookup.latest_config(app_id)
        if latest is None:
            raise AppUnavailableError(f"app {app_id} has no configuration")
        version, history = latest, []
        end_user = lookup.end_user_now(app_id, request.user)
    # Every turn runs on its own inputs, checked against the form (as Dify), and stores them.
    form = version.config.user_input_form
    inputs = validate_inputs(form, request.inputs)
    prompt_inputs = None
    input_parts: list[ContentPart] = []
    if any(f.type in FILE_TYPES and f.variable in inputs for f in form):
        policy = file_policy or network_policy(())
        resolved = await resolve_file_inputs(db, app_id, form, inputs, upload_dir=upload_dir, policy=policy)
        inputs, prompt_inputs, input_parts = resolved.values, resolved.prompt, resolved.parts
    files = ChatFiles([], [])
    if request.files:  # whose uploads they may use: this waits for the end user's id
        user_id = end_user if isinstance(end_user, str) else await asyncio.shield(end_user)
        files = await resolve_chat_files(
            db, app_id, user_id, version.config.file_upload, request.files, upload_dir
        )
    if input_parts:  # the form's files first, then the message's
        files = ChatFiles([*input_parts, *files.parts], files.rows)
    now = utcnow()
    head = EventHead(
        task_id=request.task_id or str(uuid.uuid4()),
        message_id=new_id(),
        conversation_id=request.conversation_id or new_id(),
        created_at=unix_seconds(now),
    )
    writes = MessageWrites(db, head.conversation_id, head.message_id)
    new = not request.conversation_id
    return Message(head, now, request, version, inputs, history, files, new, end_user, writes, prompt_inputs)


async def _continued(
    db: Database, lookup: AppLookup, app_id: str, end_user_id: str, conversation_id: str
) -> tuple[ConfigVersion, list[PromptMessage]]:
    """A conversation's pinned configuration and history."""
    await db.writer.settled(conversation_id)  # its earlier messages are in before we read them
    async with db.sessionmaker() as session:
        conv = await repo.get_conversation(session, app_id, end_user_id, conversation_id)
        if conv is None:
            raise ConversationNotFoundError()
        history = await load_history(session, conv.id)
        config_id = conv.app_config_id
    pinned = await lookup.config(config_id)
    if pinned is None:
        raise AppUnavailableError(f"configuration {config_id} is missing")
    return pinned, history


def start(message: Message, worker_id: str | None = None) -> None:
    """Queue the message's first rows; the run may start at once. With ``worker_id`` (this process's
    lease, app.run.recovery) the message is stored as running in this process until it ends."""
    request = message.request
    message.writes.start(
        app_id=request.app_id,
        config_id=message.version.id,
        query=request.query,
        inputs=message.inputs,
        files=message.files.rows,
        new_conversation=message.new_conversation,
        end_user=message.end_user,
        now=message.created,
        worker_id=worker_id,
    )


def fit_history(
    history: list[PromptMessage], agent: Agent, instruction: str, query: str, limit: int | None
) -> list[PromptMessage]:
    """History trimmed by whole turns to what the model's context leaves after the instruction, the
    query and room for the reply; optionally also to the app's message window."""
    model = agent.model
    current = model.count_tokens([UserMessage(instruction), UserMessage(query)])
    budget = max(model.context_size - RESERVED_ANSWER_TOKENS - current, 0)
    return trim_to_budget(history, model.count_tokens, budget, limit)


def tool_labels_of(agent: Agent) -> dict[str, dict[str, str]]:
    """Dify's ``tool_labels`` entries of the agent's tools that have a label (a toolset's tools,
    known only when it runs, show their names)."""
    return {
        t.name: {"en_US": t.label, "zh_Hans": t.label} for t in agent.tools if isinstance(t, Tool) and t.label
    }


class RunStopped(Exception):
    """The run's stop event was set."""


Speaker = Callable[[str], Awaitable[AsyncGenerator[bytes, None]]]  # text → its speech, as it comes
# A durable run's step log, given the stream the run's events go through (app.run.durable)
DurableSteps = Callable[[DifyStream], StepLog]


def stream_extras(config: AppConfig) -> StreamExtras:
    """What the app adds to Dify's stream (approvals, structured output, evidence)."""
    evidence = config.evidence
    knowledge = any(t.get("type") == "knowledge" for t in config.toolsets)
    return StreamExtras(
        approval_timeout=config.approval.timeout,
        structured_output=config.output_schema is not None,
        evidence=EvidencePolicy(evidence.no_evidence_reply, evidence.min_score)
        if evidence.required and knowledge
        else None,
    )


async def run_events(
    message: Message,
    agent: Agent,
    run: Run,
    guards: Guards | None = None,
    resume: Resumption | None = None,
    *,
    join_rounds: bool = False,
    speak: Speaker | None = None,
    steps: DurableSteps | None = None,
) -> AsyncGenerator[WireEvent, None]:
    """Run the agent for a started message and yield Dify's wire events; record the outcome on ``run``
    once everything is written. With ``guards`` (``app.guards.steps``): input moderation, annotation reply
    and external data first — which may answer without the agent — and output moderation while it
    streams. With ``resume``, a message that paused for approvals goes on (its guards ran already).

    A run that pauses for approvals ends with ``tool_approval_required`` (no ``message_end``): the
    message is saved ``waiting`` with its ``pending_approvals`` row (app.run.approvals).

    Setting the run's stop event (``app.run.runs.stop``) cancels the model stream and any tool call in
    flight at once (Dify only stops at its next publish); what was done is saved with status
    ``stopped`` and ``message_end`` follows. Closing the generator does the same without the final
    event. With ``steps`` the agent's step boundaries are recorded (the durable executor, app.run.durable)."""
    stream = DifyStream(
        message.head,
        agent.strategy_kind,
        labels=tool_labels_of(agent),
        extras=stream_extras(message.version.config),
        join_rounds=join_rounds,
    )
    started = time.perf_counter()
    status: Status = "normal"
    error: BaseException | None = None
    end: MessageEnd | None = None
    approval: ToolApprovalRequired | None = None
    output = guards.output_guard(message.version.config, message.request.app_id) if guards else None
    stop = run.stop_event
    body = _wire_events(message, agent, run, guards, stream, output, resume, steps(stream) if steps else None)
    try:
        async for wire in body:
            if type(wire) is ToolApprovalRequired:
                approval = wire
            yield wire
        end = stream.end
        if stream.interruption is not None:
            status = "waiting"
    except OutputFlagged as replaced:  # the answer so far is replaced and the run ends (as Dify)
        stream.answer = replaced.text
        yield MessageReplace(stream.head, replaced.text, OUTPUT_MODERATION)
        end = stream.message_end()
        yield end
    except RunStopped:
        status, end = "stopped", stream.message_end()
        yield end
    except asyncio.CancelledError:
        status = "stopped"
        if not _stopping(stop):
            raise
        end = stream.message_end()
        yield end  # the stop cancelled what the run was waiting on
    except GeneratorExit:
        status = "stopped"
        raise
    except Exception as e:  # a failed run still saves what it did, then tells the client
        status, error = "error", e
        yield stream.error(e)
    finally:
        if output is not None:
            output.close()
        with contextlib.suppress(Exception):
            await body.aclose()  # a stopped run's model stream and tool calls end here
        outcome = RunOutcome(status, "", error, end, approval=approval)
        await _save(message, stream, run, outcome, time.perf_counter() - started)
    if speak is not None and status == "normal" and stream.answer.strip():
        # Dify's auto-play: the answer's speech after message_end (the message is saved already)
        async for wire in _speech_events(message.head, speak, stream.answer, run.stop_event):
            yield wire


async def _speech_events(
    head: EventHead, speak: Speaker, text: str, stop: asyncio.Event
) -> AsyncGenerator[WireEvent, None]:
    """``tts_message`` events of the text's speech, then ``tts_message_end``. A failing audio server,
    or a stop, ends the speech early; the stream itself never fails for it."""
    try:
        async with contextlib.aclosing(await speak(text)) as chunks:
            async for chunk in chunks:
                yield TtsMessage(head, base64.b64encode(chunk).decode("ascii"))
    except asyncio.CancelledError:
        if not _stopping(stop):
            raise
    except Exception:
        log.warning("text to speech of an answer failed", exc_info=True)
    yield TtsMessageEnd(head)


async def _wire_events(
    message: Message,
    agent: Agent,
    run: Run,
    guards: Guards | None,
    stream: DifyStream,
    output: OutputGuard | None,
    resume: Resumption | None,
    steps: StepLog | None = None,
) -> AsyncGenerator[WireEvent, None]:
    """The run's wire events, its rows queued as it goes; raises :class:`RunStopped` when the run's
    stop event is set and ``OutputFlagged`` when output moderation flags the answer."""
    if resume is None:
        prelude = await _prelude(message, guards)
        if prelude.answer is not None:  # moderated input or an annotation: no agent
            for wire in direct_answer(stream, prelude):
                yield wire
            return
        source = _agent_events(message, agent, prelude, steps)
    else:
        stream.restore(resume.stream_state)
        context = _tool_context(message)
        source = agent.resume_stream(resume.interruption, resume.decisions, context=context, steps=steps)
    writes = message.writes
    try:
        async for event in source:
            kept = len(stream.files)
            wires = stream.feed(event)
            if output is None:
                for wire in wires:
                    yield wire
            else:
                async for wire in moderated(wires, output, stream):
                    yield wire
                verdict = output.poll()
                if verdict is not None and not verdict.overridden:
                    raise OutputFlagged(verdict.text)
                if verdict is not None:  # corrected text: it replaces the answer so far, the run goes on
                    yield MessageReplace(stream.head, verdict.text, OUTPUT_MODERATION)
            if type(event) is RoundFinished:
                writes.save_thoughts(stream)
            elif len(stream.files) > kept:
                writes.save_tool_files(stream.files[kept:])
            if run.stop_event.is_set():
                raise RunStopped
    finally:
        with contextlib.suppress(Exception):
            await source.aclose()


async def _prelude(message: Message, guards: Guards | None) -> Prelude:
    """What the agent runs with (``app.guards.steps``: maybe an answer without it)."""
    # The inputs as ``{{variable}}`` shows them (file inputs as readable text), when they differ.
    inputs = message.inputs if message.prompt_inputs is None else message.prompt_inputs
    if guards is None:
        return Prelude(inputs, message.request.query)
    request = message.request
    return await guards.prepare(
        message.version.config, request.app_id, inputs, request.query, message.head.message_id
    )


def _agent_events(
    message: Message, agent: Agent, prelude: Prelude, steps: StepLog | None
) -> AsyncGenerator[AgentEvent, None]:
    """The agent's run on the prelude's inputs and query, with the conversation's history fitted."""
    config = message.version.config
    history = fit_history(
        message.history, agent, config.instruction, prelude.query, config.history_message_limit
    )
    return agent.stream(
        prelude.query,
        history=history,
        inputs=prelude.inputs,
        files=message.files.parts or None,
        context=_tool_context(message),
        steps=steps,
    )


def _tool_context(message: Message) -> ToolContext:
    request = message.request
    return ToolContext(
        user_id=request.user,
        conversation_id=message.head.conversation_id,
        app_id=request.app_id or None,
        message_id=message.head.message_id,
        call_depth=request.call_depth,
    )


async def _save(message: Message, stream: DifyStream, run: Run, outcome: RunOutcome, elapsed: float) -> None:
    """Write the outcome (to its end, even when a stop lands meanwhile) and record it on the run."""
    error_text = str(outcome.error) if outcome.error is not None else None
    if outcome.status == "waiting":
        message.writes.pause(await _pending(message, stream))
    saving = asyncio.ensure_future(message.writes.finish(stream, outcome.status, error_text, elapsed))
    try:
        await asyncio.shield(saving)
    except asyncio.CancelledError:
        if not _stopping(run.stop_event):
            raise
        await saving  # a stop that came while saving: the save goes on to its end
    outcome.answer, outcome.usage = saving.result()
    outcome.files = [o for _, o in stream.files]
    run.finish(outcome)


async def _pending(message: Message, stream: DifyStream) -> dict[str, Any]:
    """The ``pending_approvals`` row of a message that paused."""
    assert stream.interruption is not None and stream.paused_until is not None
    head, request = message.head, message.request
    end_user = message.end_user
    return pending_values(
        task_id=head.task_id,
        app_id=request.app_id,
        user=request.user,
        end_user_id=end_user if isinstance(end_user, str) else await asyncio.shield(end_user),
        config_id=message.version.id,
        conversation_id=head.conversation_id,
        message_id=head.message_id,
        message_created_at=message.created,
        interruption=stream.interruption,
        stream_state=stream.saved(),
        paused_at=utcnow(),
        expires_at=stream.paused_until,
    )


def _stopping(stop: asyncio.Event) -> bool:
    """Whether a cancellation is the run's stop (its task is cancelled to interrupt what it waits on:
    see ``app.run.runs.stop``); if so it is taken back, and the run ends as stopped."""
    if not stop.is_set():
        return False
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return True
