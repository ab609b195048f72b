"""One agent-chat message, from request to stored answer: the app layer's ``generate()``.

``prepare()`` finds or creates the conversation and the message and loads the history (one short
transaction); ``run_message()`` runs the agent and yields Dify's wire events as they happen, while the
thought rows and the answer are written at the end of each round and on every way out — an answer, an
error, a stop (the caller cancels the iteration) — so nothing done so far is lost. Building an event
never reads the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from loopwright.agent import Agent, AgentEvent, RoundFinished
from loopwright.app.config import AppConfig
from loopwright.app.wire import DifyStream, MessageContext, ThoughtRow, WireEvent
from loopwright.model.base import Model
from loopwright.model.entities import ContentPart, PromptMessage, UserMessage
from loopwright.store import codec
from loopwright.store import repositories as repo
from loopwright.store.history import UUID_NIL, load_history, trim_to_budget
from loopwright.store.models import AppConfig as AppConfigRow
from loopwright.store.models import MessageAgentThought, unix_seconds
from loopwright.tools.base import Tool

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


@dataclass(slots=True)
class Prepared:
    """What a run needs, loaded once before it starts."""

    config: AppConfig
    context: MessageContext
    history: list[PromptMessage]
    inputs: dict[str, Any]


def conversation_name(query: str) -> str:
    """Dify's first name for a conversation: the first 20 characters of the query, then ``…``."""
    query = query.strip()
    return query if len(query) <= NAME_CHARS else query[:NAME_CHARS] + "…"


async def prepare(sessions: async_sessionmaker[AsyncSession], app_id: str, request: ChatRequest) -> Prepared:
    """Find or create the conversation (same app, same end user, not deleted) and create the message.
    A conversation keeps the configuration version it started with."""
    async with sessions() as session, session.begin():
        user = await repo.get_or_create_end_user(session, app_id, request.user)
        if request.conversation_id:
            conv = await repo.get_conversation(session, app_id, user.id, request.conversation_id)
            if conv is None:
                raise ConversationNotFoundError()
            row = await session.get(AppConfigRow, conv.app_config_id)
            inputs = dict(conv.inputs or {})  # a conversation's inputs are fixed by its first message
        else:
            row = await repo.latest_config(session, app_id)
            if row is None:
                raise LookupError(f"app {app_id} has no configuration")
            inputs = dict(request.inputs)
            conv = await repo.create_conversation(
                session,
                app_id,
                user.id,
                app_config_id=row.id,
                name=conversation_name(request.query),
                inputs=inputs,
            )
        assert row is not None
        # The Service API's conversations are linear, as Dify's (parent UUID_NIL: "the one before").
        message = await repo.create_message(
            session, conv, request.query, inputs=inputs, parent_message_id=UUID_NIL
        )
        history = await load_history(session, conv.id, exclude_message_id=message.id)
        context = MessageContext(
            task_id=str(uuid.uuid4()),
            message_id=message.id,
            conversation_id=conv.id,
            created_at=unix_seconds(message.created_at),
        )
        return Prepared(AppConfig.model_validate(row.config), context, history, inputs)


def build_agent(config: AppConfig, model: Model, tools: Sequence[Tool]) -> Agent:
    """The agent an app configuration describes, on an already built model."""
    by_name = {t.name: t for t in tools}
    chosen = []
    for tc in config.tools:
        tool = by_name.get(tc.name)
        if tool is None:
            raise ValueError(f"the app uses a tool that is not available: {tc.name!r}")
        chosen.append(tool.configure(**tc.form_values) if tc.form_values else tool)
    return Agent(
        model=model,
        tools=chosen,
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
    sessions: async_sessionmaker[AsyncSession],
    prepared: Prepared,
    agent: Agent,
    request: ChatRequest,
    *,
    stop: asyncio.Event | None = None,
    on_saved: Callable[[], None] | None = None,
) -> AsyncGenerator[WireEvent, None]:
    """Run the agent for a prepared message and yield Dify's wire events.

    Setting ``stop`` cancels the model stream and any tool call in flight at once (Dify only stops at
    its next publish); what was done is saved with status ``stopped`` and ``message_end`` follows.
    Closing the generator does the same without the final event."""
    ctx = prepared.context
    stream = DifyStream(ctx, agent.strategy_kind)
    history = fit_history(prepared.history, agent, prepared.config, request.query)
    started = time.perf_counter()
    status, error = "normal", None
    source = agent.stream(request.query, history=history, inputs=prepared.inputs, files=request.files or None)
    try:
        async for event in _until(source, stop) if stop is not None else source:
            for wire in stream.feed(event):
                yield wire
            if type(event) is RoundFinished:
                await _save_thoughts(sessions, ctx.message_id, stream)
    except RunStopped:
        status = "stopped"
        yield stream.message_end()
    except (asyncio.CancelledError, GeneratorExit):
        status = "stopped"
        raise
    except Exception as e:  # a failed run still saves what it did, then tells the client
        status, error = "error", str(e)
        yield stream.error(e)
    finally:
        await asyncio.shield(_finish(sessions, ctx, stream, status, error, time.perf_counter() - started))
        if on_saved is not None:
            on_saved()


class RunStopped(Exception):
    """The run's stop event was set."""


async def _until(
    events: AsyncGenerator[AgentEvent, None], stop: asyncio.Event
) -> AsyncGenerator[AgentEvent, None]:
    """``events`` until ``stop`` is set; then the pending step is cancelled (which cancels the model
    stream or the tools it is waiting on) and :class:`RunStopped` is raised."""
    stopper = asyncio.ensure_future(stop.wait())
    try:
        while True:
            step = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({step, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if step not in done:
                step.cancel()
                with contextlib.suppress(BaseException):
                    await step
                raise RunStopped
            try:
                event = step.result()
            except StopAsyncIteration:
                return
            yield event
    finally:
        stopper.cancel()
        await events.aclose()


async def _finish(
    sessions: async_sessionmaker[AsyncSession],
    ctx: MessageContext,
    stream: DifyStream,
    status: str,
    error: str | None,
    elapsed: float,
) -> None:
    await _save_thoughts(sessions, ctx.message_id, stream, everything=True)
    usage = stream.usage
    if not usage.latency:
        usage = usage.with_latency(elapsed)
    metadata = json.dumps({"usage": usage.to_dict(), "retriever_resources": []}, ensure_ascii=False)
    answer = _storable(stream.answer or _partial_answer(stream))
    async with sessions() as session, session.begin():
        await repo.save_message_result(
            session,
            ctx.message_id,
            answer=answer,
            usage=usage,
            status=status,
            error=_storable(error) if error else None,
            metadata=metadata,
        )


def _storable(text: str) -> str:
    """Text a database accepts: PostgreSQL refuses NUL characters, which a model may emit."""
    return text.replace("\x00", "")


def _partial_answer(stream: DifyStream) -> str:
    """A run that ended early keeps the text it had produced (the last round's)."""
    return stream.thoughts[-1].thought if stream.thoughts else ""


async def _save_thoughts(
    sessions: async_sessionmaker[AsyncSession],
    message_id: str,
    stream: DifyStream,
    *,
    everything: bool = False,
) -> None:
    """Write the changed thought rows as they stand in memory (the mirror is the source of truth)."""
    ids = {r.id for r in stream.thoughts} if everything else set(stream.dirty)
    if not ids:
        return
    async with sessions() as session, session.begin():
        for row in stream.thoughts:
            if row.id in ids:
                await _upsert(session, message_id, row)
    stream.dirty -= ids


async def _upsert(session: AsyncSession, message_id: str, row: ThoughtRow) -> None:
    db_row = await session.get(MessageAgentThought, row.id)
    if db_row is None:  # same id as the wire events already carried
        db_row = await repo.create_thought(session, message_id, row.position, thought_id=row.id)
    db_row.thought = _storable(row.thought)
    db_row.tool = row.tool
    db_row.tool_input = row.tool_input
    db_row.observation = _storable(row.observation)
    db_row.tool_meta_str = row.tool_meta
    db_row.tool_labels_str = codec.dump_json(codec.tool_labels(row.tool))
    db_row.message_files = codec.dump_json(row.message_files)
    db_row.answer = _storable(row.answer)
    if row.usage is not None:
        u = row.usage
        db_row.message_token, db_row.answer_token, db_row.tokens = (
            u.prompt_tokens,
            u.completion_tokens,
            u.total_tokens,
        )
        db_row.message_unit_price, db_row.answer_unit_price = u.prompt_unit_price, u.completion_unit_price
        db_row.total_price, db_row.latency = u.total_price, u.latency
    await session.flush()
