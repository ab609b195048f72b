"""A run's plan: everything one run of a message starts from, resolved once, frozen.

:func:`prepare` resolves what a :class:`MessageRequest` names — the app's configuration (pinned by the
conversation when it continues one), the end user, the conversation's history — checks the message's
inputs against the app's form and its files against the upload settings, takes the configuration's
prepared agent, and returns the :class:`RunPlan`. It only reads (mostly from memory,
:mod:`loopwright.app.lookup`) and raises before anything is written. A message that goes on — resumed
after approvals (:func:`resumed_plan`) or taken up after a crash by the durable executor
(:func:`taken_up_plan`) — gets its plan from what was stored. An executor (``app.run.executors``) runs
a plan; nothing else assembles a run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from loopwright.agent import Agent, Budget
from loopwright.agent.prompts import fill_inputs
from loopwright.app.config import PLAIN_MODES, AppConfig
from loopwright.app.dify.encoder import DifyEncoder
from loopwright.app.dify.events import EventHead
from loopwright.app.dify.stream import EvidencePolicy, StreamExtras
from loopwright.app.errors import AppUnavailableError, ConversationNotFoundError, ParentMessageNotFoundError
from loopwright.app.files.chat_files import ChatFiles, resolve_chat_files
from loopwright.app.files.file_inputs import resolve_file_inputs
from loopwright.app.inputs import FILE_TYPES, validate_inputs
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.run.approvals import Resumption
from loopwright.app.run.compaction import Compacted, Summarizer, Summary, compact
from loopwright.app.run.handoffs import HandoffTeam
from loopwright.app.run.history import rebuild_history
from loopwright.model.entities import ContentPart, PromptMessage, UserMessage
from loopwright.store import memory as memory_store
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message, MessageAgentThought, new_id, unix_seconds, utcnow
from loopwright.store.threads import (
    UUID_NIL as UUID_NIL,  # re-exported: what a request names as "after the newest"
)
from loopwright.store.threads import load_thread
from loopwright.tools.base import Tool, ToolContext
from loopwright.tools.net import NetworkPolicy, network_policy

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
    # The caller names its conversations (AG-UI's threadId): ``conversation_id`` is continued when
    # it exists, and started under that id when no conversation has it yet.
    names_conversation: bool = False
    files: Sequence[Mapping[str, Any]] = ()  # Dify's file entries (checked against the app's settings)
    response_mode: ResponseMode = "streaming"
    call_depth: int = 0  # how deep in apps calling apps as tools this message is
    auto_generate_name: bool = False  # Dify's flag: name a new conversation with the model (app.run.naming)
    task_id: str | None = None  # the run's id when the caller chose it (a retried request: one run)
    history: Sequence[PromptMessage] = ()  # a new conversation's turns so far, as the caller gives them
    # The stream's encoder, given the number of its last event (another wire's, app.wires); None: Dify's
    encoder: Callable[[int], DifyEncoder] | None = None
    # A new conversation's configuration version (its id) instead of the app's newest: what an eval of
    # an older or a newer version runs on. Set by callers in this process only, never from a wire.
    config_id: str | None = None
    # Where in a continued conversation the message goes (Dify's ``parent_message_id``): after this
    # message of it (a new version of the message after it: Regenerate, or an edited question);
    # ``None``: a new version of its first message; ``UUID_NIL`` (the default): after the newest.
    parent_message_id: str | None = UUID_NIL


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlan:
    """One run of a message, resolved: where it goes and everything it starts from."""

    head: EventHead  # task, message and conversation ids, creation time
    created: datetime  # the creation time of its rows (``head.created_at`` in seconds)
    request: MessageRequest
    version: ConfigVersion  # the configuration it runs with
    agent: Agent  # the configuration's agent, built once per version (``AppRuntime.agent``)
    inputs: dict[str, Any]
    prompt_inputs: dict[str, Any] | None = None  # the inputs as ``{{variable}}`` shows them (files readable)
    history: list[PromptMessage]
    files: ChatFiles
    new_conversation: bool
    end_user: str | asyncio.Task[str]  # the id, or the task finding it (a new user, new conversation)
    resume: Resumption | None = None  # a message that goes on (approvals, or taken up after a crash)
    taken_up: bool = False  # taken up by the durable executor: its rows and stream exist
    continues_stream: bool = False  # resumed after a pause: its stream exists and goes on
    replaced: str | None = None  # taken up after a cut model call: the answer its client should show
    first_seq: int = 0  # the number of the last event its stream already holds
    # the run's caps, narrowed by what the app's wider caps leave (app.run.budgets); None: the agent's
    budget: Budget | None = None
    budget_day: str = ""  # the UTC day its usage counts for (a capped app's daily counters)
    # a continued conversation: its messages' ids (one per turn of ``history``) and its stored summary
    history_ids: tuple[str, ...] = ()
    summary: Summary | None = None
    summarizer: Summarizer | None = None  # memory.compaction: summarize (app.run.compaction)
    summary_spec: str = ""  # the spec of the summarizer's model
    recalled: str | None = None  # memory.long_term: what the app remembers of the end user (app.run.memory)
    # handoffs: the app that answered the conversation's last message (None: its own app), and the apps
    # this message may move between (app.run.handoffs)
    answered_by: str | None = None
    team: HandoffTeam | None = None
    parent_message_id: str | None = UUID_NIL  # as the message row stores it (store.threads)

    @property
    def streaming(self) -> bool:
        return self.request.response_mode == "streaming"

    @property
    def config(self) -> AppConfig:
        return self.version.config

    def tool_context(self) -> ToolContext:
        request = self.request
        return ToolContext(
            user_id=request.user,
            conversation_id=self.head.conversation_id,
            app_id=request.app_id or None,
            message_id=self.head.message_id,
            call_depth=request.call_depth,
        )


async def prepare(
    db: Database,
    lookup: AppLookup,
    request: MessageRequest,
    agent_for: Callable[[ConfigVersion], Awaitable[Agent]],
    *,
    upload_dir: Path,
    file_policy: NetworkPolicy | None = None,
) -> RunPlan:
    """Resolve and check ``request`` (see the module's docstring). Raises
    :class:`ConversationNotFoundError` (not this app's or user's, or deleted),
    :class:`AppUnavailableError`, ``InputError`` and ``UserInputError`` for bad files. ``file_policy``
    is the SSRF guard's for remote files of ``file`` inputs (default: no private address). A request
    that names its conversation (``names_conversation``) starts it when no conversation has its id."""
    app_id = request.app_id
    named = request.conversation_id or ""
    continued = bool(named) and (not request.names_conversation or await _conversation_id_taken(db, named))
    summary: Summary | None = None
    history_ids: tuple[str, ...] = ()
    answered_by: str | None = None
    if continued:
        end_user_id = await lookup.end_user_id(app_id, request.user)
        found = await _continued(db, lookup, app_id, end_user_id, named, request.parent_message_id)
        version, history, history_ids, summary, answered_by = found
        end_user: str | asyncio.Task[str] = end_user_id
    else:
        latest = await _chosen_config(lookup, app_id, request.config_id)
        version, history = latest, list(request.history)
        end_user = lookup.end_user_now(app_id, request.user)
    # Every turn runs on its own inputs, checked against the form (as Dify), and stores them.
    form = version.config.user_input_form
    inputs = validate_inputs(form, request.inputs)
    prompt_inputs = None
    input_parts: list[ContentPart] = []
    if any(f.type in FILE_TYPES and inputs.get(f.variable) is not None for f in form):
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
    return RunPlan(
        head=head,
        created=now,
        request=request,
        version=version,
        agent=await agent_for(version),
        inputs=inputs,
        prompt_inputs=prompt_inputs,
        history=history,
        files=files,
        new_conversation=not continued,
        end_user=end_user,
        history_ids=history_ids,
        summary=summary,
        answered_by=answered_by,
        parent_message_id=request.parent_message_id if continued else UUID_NIL,
    )


async def _chosen_config(lookup: AppLookup, app_id: str, config_id: str | None) -> ConfigVersion:
    """The configuration a new conversation starts on: the one the caller chose, else the newest."""
    version = await (lookup.config(config_id) if config_id else lookup.latest_config(app_id))
    if version is None:
        what = f"configuration {config_id}" if config_id else "configuration"
        raise AppUnavailableError(f"app {app_id} has no {what}")
    return version


async def _conversation_id_taken(db: Database, conversation_id: str) -> bool:
    """Whether a conversation (of any app or user, deleted or not) has this id, once the writes
    queued under it are in."""
    await db.writer.settled(conversation_id)
    async with db.sessionmaker() as session:
        return await repo.conversation_id_taken(session, conversation_id)


async def _continued(
    db: Database,
    lookup: AppLookup,
    app_id: str,
    end_user_id: str,
    conversation_id: str,
    parent_message_id: str | None,
) -> tuple[ConfigVersion, list[PromptMessage], tuple[str, ...], Summary | None, str | None]:
    """A conversation's pinned configuration, the history of the thread the message goes on (the one
    ending at ``parent_message_id``: see :class:`MessageRequest`), the ids of that thread's messages,
    its newest summary when its app summarizes, and the app that answered its last message
    (handoffs). A parent that is not a message of the conversation is :class:`ParentMessageNotFoundError`."""
    await db.writer.settled(conversation_id)  # its earlier messages are in before we read them
    async with db.sessionmaker() as session:
        conv = await repo.get_conversation(session, app_id, end_user_id, conversation_id)
        if conv is None:
            raise ConversationNotFoundError()
        thread: list[Message] = []
        thoughts: dict[str, list[MessageAgentThought]] = {}
        if parent_message_id is not None:  # None: a new version of the first message, no history
            leaf = None if parent_message_id == UUID_NIL else parent_message_id
            thread, thoughts = await load_thread(session, conv.id, leaf=leaf)
            if leaf is not None and not thread:
                raise ParentMessageNotFoundError()
        config_id = conv.app_config_id
    pinned = await lookup.config(config_id)
    if pinned is None:
        raise AppUnavailableError(f"configuration {config_id} is missing")
    summary = None
    if pinned.config.memory.compaction == "summarize":
        async with db.sessionmaker() as session:
            row = await memory_store.latest_summary(session, conversation_id, [m.id for m in thread])
        summary = Summary(row.summary, row.covered_messages, row.id) if row is not None else None
    answered_by = thread[-1].answered_by if thread else None
    return pinned, rebuild_history(thread, thoughts), tuple(m.id for m in thread), summary, answered_by


def resumed_plan(
    *,
    head: EventHead,
    created: datetime,
    app_id: str,
    user: str,
    version: ConfigVersion,
    agent: Agent,
    end_user_id: str,
    query: str,
    resume: Resumption,
    streaming: bool,
    taken_up: bool = False,
    replaced: str | None = None,
    first_seq: int = 0,
    encoder: Callable[[int], DifyEncoder] | None = None,
    continues_stream: bool = False,
) -> RunPlan:
    """The plan of a message that goes on from its stored state: resumed after approvals, or taken up
    by the durable executor (``taken_up``) from its last checkpoint. ``encoder``: the wire the rest
    of its stream is read on (None: Dify's)."""
    request = MessageRequest(
        app_id,
        user,
        query,
        conversation_id=head.conversation_id,
        response_mode="streaming" if streaming else "blocking",
        encoder=encoder,
    )
    return RunPlan(
        head=head,
        created=created,
        request=request,
        version=version,
        agent=agent,
        inputs={},
        history=[],
        files=ChatFiles([], []),
        new_conversation=False,
        end_user=end_user_id,
        resume=resume,
        taken_up=taken_up,
        replaced=replaced,
        first_seq=first_seq,
        continues_stream=continues_stream,
    )


def created_at(head: EventHead) -> datetime:
    """The creation time of a message's rows, from its events' ``created_at`` (naive UTC)."""
    return datetime.fromtimestamp(head.created_at, UTC).replace(tzinfo=None)


def history_room(plan: RunPlan, query: str) -> int:
    """The tokens the history may take: ``memory.max_prompt_tokens`` (default: the model's window
    minus the reply's room) less the instruction (a ReAct agent's: with its template), the query and
    what memory recalled."""
    model = plan.agent.model
    config = plan.config
    # a ReAct agent's instruction is inside its template, which the prompt carries too
    template = getattr(plan.agent.prepare().strategy, "template", None)
    instruction = f"{template}\n{config.instruction}" if isinstance(template, str) else config.instruction
    around = [UserMessage(instruction), UserMessage(query), UserMessage(plan.recalled or "")]
    current = model.count_tokens(around)
    whole = config.memory.max_prompt_tokens or model.context_size - RESERVED_ANSWER_TOKENS
    return max(whole - current, 0)


async def fit_history(plan: RunPlan, query: str) -> Compacted:
    """The plan's history fitted into what the prompt leaves it (``memory.compaction``, and the
    app's message window): see app.run.compaction."""
    config = plan.config
    return await compact(
        plan.history,
        config.memory,
        room=history_room(plan, query),
        count_tokens=plan.agent.model.count_tokens,
        limit=config.history_message_limit,
        summary=plan.summary,
        summarize=plan.summarizer,
    )


def tool_labels_of(agent: Agent) -> dict[str, dict[str, str]]:
    """Dify's ``tool_labels`` entries of the agent's tools that have a label (a toolset's tools,
    known only when it runs, show their names)."""
    return {
        t.name: {"en_US": t.label, "zh_Hans": t.label} for t in agent.tools if isinstance(t, Tool) and t.label
    }


def completion_prompt(instruction: str, inputs: Mapping[str, Any], query: str) -> str:
    """A completion app's message to the model, as Dify's text generator makes it: the instruction with
    the form's ``{{variables}}`` filled in, then the request's ``query`` when one is given (Dify's
    clients put the text in ``inputs.query``, which the instruction names)."""
    prompt = fill_inputs(instruction, inputs).strip()
    query = query.strip()
    return f"{prompt}\n\n{query}" if prompt and query else prompt or query


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
        whole_answer_message=config.mode == "agent",
        plain=config.mode in PLAIN_MODES,
    )
