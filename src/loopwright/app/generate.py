"""One agent-chat message, from request to stored answer: the app layer's ``generate()``.

``resolve()`` finds the end user, the conversation and its configuration (from memory where it can:
:mod:`loopwright.app.lookup`) and ``start_message()`` queues the new rows on the database writer, so a
model starts streaming without waiting for the database; ``prepare()`` does both. ``run_message()``
runs the agent and yields Dify's wire events as they happen, while the thought rows and the answer
are written (queued, in order) at the end of each round and on every way out — an answer, an error,
a stop (the caller cancels the iteration) — so nothing done so far is lost. Building an event never
reads the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loopwright.agent import Agent, RoundFinished
from loopwright.app.config import AppConfig
from loopwright.app.inputs import InputError, validate_inputs
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.wire import DifyStream, MessageContext, ThoughtRow, WireEvent, file_type
from loopwright.model.base import Model
from loopwright.model.entities import ContentPart, PromptMessage, Usage, UserMessage
from loopwright.store import codec
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.history import UUID_NIL, load_history, trim_to_budget
from loopwright.store.models import (
    Conversation,
    Message,
    MessageAgentThought,
    MessageFile,
    new_id,
    unix_seconds,
    utcnow,
)
from loopwright.store.writer import Insert, Update, WriteOp
from loopwright.tools.app_tool import AppAnswer
from loopwright.tools.base import Tool, ToolContext, ToolInvokeError, ToolLike, ToolOutput
from loopwright.tools.engine import FileSink
from loopwright.tools.files.signing import tool_file_of_url

CONVERSATION_NOT_FOUND = "Conversation Not Exists."
NAME_CHARS = 20
RESERVED_ANSWER_TOKENS = 1024  # room kept for the reply when history is trimmed to the context


class ConversationNotFoundError(LookupError):
    def __init__(self) -> None:
        super().__init__(CONVERSATION_NOT_FOUND)


@dataclass(slots=True)
class ChatRequest:
    query: str
    user: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    conversation_id: str | None = None
    files: Sequence[ContentPart] = ()
    call_depth: int = 0  # how deep in apps calling apps as tools this message is


@dataclass(slots=True)
class Prepared:
    """What a run needs, loaded once before it starts."""

    config: AppConfig
    context: MessageContext
    history: list[PromptMessage]
    inputs: dict[str, Any]
    app_id: str = ""
    end_user_id: str = ""


@dataclass(slots=True)
class Target:
    """Where a new message goes, resolved before anything is written: the end user, the
    configuration version, and the conversation (``None``: a new one) with its inputs and history."""

    end_user_id: str  # "" while ``pending_user`` finds it (a new user of a new conversation)
    version: ConfigVersion
    conversation_id: str | None = None
    inputs: dict[str, Any] = field(default_factory=dict)
    history: list[PromptMessage] = field(default_factory=list)
    pending_user: asyncio.Task[str] | None = None

    async def user_id(self) -> str:
        """The end user's id, waiting for it if it is still being found."""
        if self.pending_user is not None:
            self.end_user_id = await asyncio.shield(self.pending_user)
            self.pending_user = None
        return self.end_user_id


class AppUnavailableError(LookupError):
    """The app has no configuration to run with."""


def conversation_name(query: str) -> str:
    """Dify's first name for a conversation: the first 20 characters of the query, then ``…``."""
    query = query.strip()
    return query if len(query) <= NAME_CHARS else query[:NAME_CHARS] + "…"


async def resolve(
    db: Database, lookup: AppLookup, app_id: str, user: str, conversation_id: str | None
) -> Target:
    """Find the end user and the conversation (same app, same end user, not deleted — else
    :class:`ConversationNotFoundError`) with its pinned configuration, inputs and history; or, for a
    new conversation, the app's latest configuration. Only reads (mostly from memory); a new
    conversation does not wait for a new end user's id (see :func:`start_message`)."""
    if not conversation_id:
        version = await lookup.latest_config(app_id)
        if version is None:
            raise AppUnavailableError(f"app {app_id} has no configuration")
        user_id = lookup.end_user_now(app_id, user)
        if isinstance(user_id, str):
            return Target(user_id, version)
        return Target("", version, pending_user=user_id)
    end_user_id = await lookup.end_user_id(app_id, user)
    await db.writer.settled(conversation_id)  # its earlier messages are in before we read them
    async with db.sessionmaker() as session:
        conv = await repo.get_conversation(session, app_id, end_user_id, conversation_id)
        if conv is None:
            raise ConversationNotFoundError()
        history = await load_history(session, conv.id)
        config_id, inputs = conv.app_config_id, dict(conv.inputs or {})
    pinned = await lookup.config(config_id)
    if pinned is None:
        raise AppUnavailableError(f"configuration {config_id} is missing")
    # A conversation's inputs are fixed by its first message.
    return Target(end_user_id, pinned, conversation_id, inputs, history)


def start_message(
    db: Database,
    app_id: str,
    target: Target,
    query: str,
    inputs: Mapping[str, Any],
    files: Sequence[Mapping[str, Any]] = (),
) -> Prepared:
    """Queue the rows of the new message (and of its conversation when new) on the database writer
    and return at once: the run starts while they are written, and every later write of the message
    is queued behind them."""
    now = utcnow()
    message_id = new_id()
    conversation_id = target.conversation_id or new_id()
    inputs = dict(inputs if target.conversation_id is None else target.inputs)
    conversation = {
        "id": conversation_id,
        "app_id": app_id,
        "end_user_id": target.end_user_id,
        "app_config_id": target.version.id,
        "name": conversation_name(query),
        "inputs": inputs,
        "status": "normal",
        "is_deleted": False,
        "created_at": now,
        "updated_at": now,
    }
    # The Service API's conversations are linear, as Dify's (parent UUID_NIL: "the one before").
    message = {
        "id": message_id,
        "conversation_id": conversation_id,
        "app_id": app_id,
        "query": query,
        "inputs": inputs,
        "parent_message_id": UUID_NIL,
        "created_at": now,
    }
    rows: list[WriteOp] = [Insert(Message, message)]
    rows += [
        Insert(MessageFile, {**v, "id": new_id(), "message_id": message_id, "created_at": now}) for v in files
    ]
    if target.conversation_id is not None:
        rows.insert(0, Update(Conversation, {"id": conversation_id, "updated_at": now}))
    elif target.pending_user is None:
        rows.insert(0, Insert(Conversation, conversation))
    else:
        # A new end user: the model starts now; the rows, and every later write of this message,
        # wait for the end user's id.
        db.writer.hold(conversation_id)
        _track(asyncio.ensure_future(_release_when_known(db, target, conversation, rows)))
        rows = []
    for op in rows:
        db.writer.submit(op, key=conversation_id)
    context = MessageContext(
        task_id=str(uuid.uuid4()),
        message_id=message_id,
        conversation_id=conversation_id,
        created_at=unix_seconds(now),
    )
    prepared = Prepared(target.version.config, context, target.history, inputs, app_id, target.end_user_id)
    if target.pending_user is not None:
        target.pending_user.add_done_callback(functools.partial(_learn_user, prepared))
    return prepared


_RELEASES: set[asyncio.Future[None]] = set()


def _track(fut: asyncio.Future[None]) -> None:
    _RELEASES.add(fut)  # a reference, or the task could be collected before it runs
    fut.add_done_callback(_RELEASES.discard)


async def _release_when_known(
    db: Database, target: Target, conversation: dict[str, Any], rows: list[WriteOp]
) -> None:
    conversation_id = str(conversation["id"])
    try:
        conversation["end_user_id"] = await target.user_id()
    except BaseException:
        # The parked writes fail on their own (no conversation row) rather than wait for ever.
        db.writer.release(conversation_id)
        raise
    db.writer.release(conversation_id, Insert(Conversation, conversation), *rows)


def _learn_user(prepared: Prepared, task: asyncio.Task[str]) -> None:
    if not task.cancelled() and task.exception() is None:
        prepared.end_user_id = task.result()


async def prepare(
    db: Database, app_id: str, request: ChatRequest, *, lookup: AppLookup | None = None
) -> Prepared:
    """Resolve and start a message in one call (the server validates the inputs in between)."""
    target = await resolve(db, lookup or AppLookup(db), app_id, request.user, request.conversation_id)
    return start_message(db, app_id, target, request.query, request.inputs)


def build_agent(
    config: AppConfig,
    model: Model,
    tools: Sequence[Tool],
    toolsets: Sequence[ToolLike] = (),
    files: FileSink | None = None,
) -> Agent:
    """The agent an app configuration describes, on an already built model: ``config.tools`` chosen by
    name from ``tools``, plus the built ``toolsets`` of ``config.toolsets``; ``files`` keeps the files
    its tools make."""
    by_name = {t.name: t for t in tools}
    chosen = []
    for tc in config.tools:
        tool = by_name.get(tc.name)
        if tool is None:
            raise ValueError(f"the app uses a tool that is not available: {tc.name!r}")
        chosen.append(tool.configure(**tc.form_values) if tc.form_values else tool)
    return Agent(
        model=model,
        tools=[*chosen, *toolsets],
        files=files,
        instruction=config.instruction,
        strategy=config.strategy,
        max_iterations=config.max_iterations,
        model_params=config.model_params,
    )


def fit_history(
    history: list[PromptMessage], agent: Agent, config: AppConfig, query: str
) -> list[PromptMessage]:
    """History trimmed by whole turns to what the model's context leaves after the instruction, the
    query and room for the reply; optionally also to the app's message window."""
    model = agent.model
    current = model.count_tokens([UserMessage(config.instruction), UserMessage(query)])
    budget = max(model.context_size - RESERVED_ANSWER_TOKENS - current, 0)
    return trim_to_budget(history, model.count_tokens, budget, config.history_message_limit)


async def run_message(
    db: Database,
    prepared: Prepared,
    agent: Agent,
    request: ChatRequest,
    *,
    stop: asyncio.Event | None = None,
    on_saved: Callable[[], None] | None = None,
    stream: DifyStream | None = None,
) -> AsyncGenerator[WireEvent, None]:
    """Run the agent for a prepared message and yield Dify's wire events.

    Thought rows are queued for writing at the end of each round and the run ends once everything is
    written. Setting ``stop`` cancels the model stream and any tool call in flight at once (Dify only
    stops at its next publish); what was done is saved with status ``stopped`` and ``message_end``
    follows. Closing the generator does the same without the final event."""
    ctx = prepared.context
    stream = stream or DifyStream(ctx, agent.strategy_kind)
    saver = _ThoughtSaver(db, ctx)
    history = fit_history(prepared.history, agent, prepared.config, request.query)
    started = time.perf_counter()
    status, error = "normal", None
    tool_context = ToolContext(
        user_id=request.user,
        conversation_id=ctx.conversation_id,
        app_id=prepared.app_id or None,
        message_id=ctx.message_id,
        call_depth=request.call_depth,
    )
    source = agent.stream(
        request.query,
        history=history,
        inputs=prepared.inputs,
        files=request.files or None,
        context=tool_context,
    )
    try:
        async for event in source:
            kept = len(stream.files)
            for wire in stream.feed(event):
                yield wire
            if type(event) is RoundFinished:
                saver.save(stream)
            elif len(stream.files) > kept:
                _save_tool_files(db, prepared, stream.files[kept:])
            if stop is not None and stop.is_set():
                raise RunStopped
    except RunStopped:
        status = "stopped"
        yield stream.message_end()
    except asyncio.CancelledError:
        status = "stopped"
        if not _stopping(stop):
            raise
        yield stream.message_end()  # the stop cancelled what the run was waiting on
    except GeneratorExit:
        status = "stopped"
        raise
    except Exception as e:  # a failed run still saves what it did, then tells the client
        status, error = "error", str(e)
        yield stream.error(e)
    finally:
        with contextlib.suppress(Exception):
            await source.aclose()  # a stopped run's model stream and tool calls end here
        saving = asyncio.ensure_future(
            _finish(db, saver, stream, status, error, time.perf_counter() - started)
        )
        try:
            await asyncio.shield(saving)
        except asyncio.CancelledError:
            if not _stopping(stop):
                raise
            await saving  # a stop that came while saving: the save goes on to its end
        if on_saved is not None:
            on_saved()


def _stopping(stop: asyncio.Event | None) -> bool:
    """Whether a cancellation is the run's stop (its task is cancelled to interrupt what it waits on:
    see ``server.runs``); if so it is taken back, and the run ends as stopped."""
    if stop is None or not stop.is_set():
        return False
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
    return True


async def answer(
    db: Database,
    lookup: AppLookup,
    agent_for: Callable[[ConfigVersion], Awaitable[Agent]],
    app_id: str,
    query: str,
    inputs: Mapping[str, Any],
    ctx: ToolContext,
) -> AppAnswer:
    """One message of an app, run to its end for an app that calls it as a tool (a new conversation
    of the same end user each time; it is stored like any other)."""
    user = ctx.user_id or "app-tool"
    try:
        target = await resolve(db, lookup, app_id, user, None)
        checked = validate_inputs(target.version.config.user_input_form, inputs)
    except (AppUnavailableError, InputError) as exc:
        raise ToolInvokeError(str(exc)) from None
    agent = await agent_for(target.version)
    prepared = start_message(db, app_id, target, query, checked)
    stream = DifyStream(prepared.context, agent.strategy_kind)
    request = ChatRequest(query, user, checked, call_depth=ctx.call_depth)
    async for event in run_message(db, prepared, agent, request, stream=stream):
        if event["event"] == "error":
            raise ToolInvokeError(str(event["message"]))
    return AppAnswer(stream.answer or stream.partial_answer, [o for _, o in stream.files], stream.total_usage)


class RunStopped(Exception):
    """The run's stop event was set."""


async def _finish(
    db: Database,
    saver: _ThoughtSaver,
    stream: DifyStream,
    status: str,
    error: str | None,
    elapsed: float,
) -> None:
    saver.save(stream, everything=True)
    usage = stream.total_usage
    if not usage.latency:
        usage = usage.with_latency(elapsed)
    metadata = json.dumps(
        {"usage": usage.to_dict(), "retriever_resources": stream.retriever_resources}, ensure_ascii=False
    )
    answer = _storable(stream.answer or stream.partial_answer)
    result = repo.message_result(
        answer=answer,
        usage=usage,
        status=status,
        error=_storable(error) if error else None,
        metadata=metadata,
    )
    result["id"] = stream.ctx.message_id
    # Waited for, so that a run has ended only when it is stored; a failure is logged by the writer.
    await asyncio.wait({db.writer.submit(Update(Message, result), key=stream.ctx.conversation_id)})


def _storable(text: str) -> str:
    """Text a database accepts: PostgreSQL refuses NUL characters, which a model may emit."""
    return text.replace("\x00", "")


def _save_tool_files(db: Database, prepared: Prepared, files: Sequence[tuple[str, ToolOutput]]) -> None:
    """``message_files`` rows of the files tools made (Dify: ``transfer_method="tool_file"``), under
    the ids their ``message_file`` events carried. A tool file's URL is kept without its signature,
    which expires: readers sign it again."""
    ctx = prepared.context
    for file_id, output in files:
        url = getattr(output, "url", "") or ""
        if tool_file_of_url(url) is not None:  # ours: drop the signature (…?timestamp=…&sign=…)
            url = url.partition("?")[0]
        mime = getattr(output, "mime_type", None) or "application/octet-stream"
        row = {
            "id": file_id,
            "message_id": ctx.message_id,
            "type": file_type(mime),
            "transfer_method": "tool_file",
            "url": url,
            "belongs_to": "assistant",
            "upload_file_id": None,
            "created_by_role": "end_user",
            "created_by": prepared.end_user_id,
            "created_at": utcnow(),
        }
        db.writer.submit(Insert(MessageFile, row), key=ctx.conversation_id)


class _ThoughtSaver:
    """Queues writes of a message's changed thought rows as they stand in memory (the mirror is the
    source of truth): an insert the first time a row is saved, an update after that."""

    def __init__(self, db: Database, ctx: MessageContext) -> None:
        self._db = db
        self._ctx = ctx
        self._inserted: set[str] = set()

    def save(self, stream: DifyStream, *, everything: bool = False) -> None:
        ids = {r.id for r in stream.thoughts} if everything else set(stream.dirty)
        stream.dirty -= ids
        for row in stream.thoughts:
            if row.id not in ids:
                continue
            values = _thought_values(row)
            if row.id in self._inserted:
                op: Insert | Update = Update(MessageAgentThought, values)
            else:
                self._inserted.add(row.id)
                new = repo.new_thought(self._ctx.message_id, row.position, thought_id=row.id)
                op = Insert(MessageAgentThought, {**new, **values})
            self._db.writer.submit(op, key=self._ctx.conversation_id)


def _thought_values(row: ThoughtRow) -> dict[str, Any]:
    """Every column a round changes, always the same keys (the writer keeps updates of one table in
    order only among rows with the same keys)."""
    u = row.usage or Usage()
    return {
        "id": row.id,
        "position": row.position,
        "thought": _storable(row.thought),
        "tool": row.tool,
        "tool_input": row.tool_input,
        "observation": _storable(row.observation),
        "tool_meta_str": row.tool_meta,
        "tool_labels_str": codec.dump_json(codec.tool_labels(row.tool)),
        "message_files": codec.dump_json(row.message_files),
        "answer": _storable(row.answer),
        "message_token": u.prompt_tokens,
        "answer_token": u.completion_tokens,
        "tokens": u.total_tokens,
        "message_unit_price": u.prompt_unit_price,
        "answer_unit_price": u.completion_unit_price,
        "total_price": u.total_price,
        "latency": u.latency,
    }
