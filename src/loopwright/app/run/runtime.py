"""``AppRuntime``: the app layer of one process, and its one entry point for running a message.

``await runtime.start(MessageRequest(...))`` resolves and checks the request into a run plan (with the
app's prepared agent, built once per configuration version) and hands it to the executor
(``app.run.executors``); it returns the :class:`~app.run.runs.Run` handle — task id, typed events
(``run.events()`` / ``run.pump(sink)``), outcome (``await run.outcome()``). Everything that can be
refused (unknown conversation, bad inputs or files, an app without configuration, a model that cannot
be built) is raised by ``start`` before anything is written. The HTTP routes, the CLI and apps called as
tools by other apps all go through it.

The runtime owns what requests share, each with the runtime's lifetime: the database, the lookups
cached in memory, the built models and agents, the apps' toolsets, the tool files and the knowledge
bases; ``aclose()`` releases them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cachetools import LRUCache
from sqlalchemy.exc import IntegrityError

from loopwright._threads import run_sync
from loopwright.agent import Agent, Budget
from loopwright.agent.handoffs import handoff_tool
from loopwright.app.callbacks import load_callbacks
from loopwright.app.config import AppConfig, InputField, names_conversations
from loopwright.app.dify.encoder import DifyEncoder
from loopwright.app.dify.events import AgentThought, EventHead
from loopwright.app.dify.human_input import ApprovalForm
from loopwright.app.errors import ProviderNotInitializedError, RunExistsError
from loopwright.app.files.speech import Speech
from loopwright.app.files.uploads import UploadLimits, upload_limits
from loopwright.app.guards.annotations import Annotations
from loopwright.app.guards.steps import Guards
from loopwright.app.guards.tool_allowlist import check_config
from loopwright.app.lookup import AppLookup, ConfigVersion
from loopwright.app.run import budgets, handoffs, human_input, memory, naming
from loopwright.app.run.approvals import (
    NOT_WAITING,
    ApprovalsClosedError,
    ApprovalsRequest,
    ApprovalTimer,
    Resumption,
    check_owner,
    resumption,
)
from loopwright.app.run.compaction import summarize_with
from loopwright.app.run.executors import Executor, InProcessExecutor, check_executor
from loopwright.app.run.journal import EventJournal, Replayed, RunRecord, stream_row
from loopwright.app.run.limits import ActiveRequests
from loopwright.app.run.message_writes import MessageWrites
from loopwright.app.run.pipeline import Speaker
from loopwright.app.run.plan import MessageRequest, RunPlan, prepare, resumed_plan
from loopwright.app.run.prompt_log import PromptLog
from loopwright.app.run.rate_limits import Limiter, LimitSettings, limiter_for
from loopwright.app.run.recovery import WorkerLease
from loopwright.app.run.relay import Relay
from loopwright.app.run.runs import Run, RunRegistry
from loopwright.app.toolsets import ToolsetPool
from loopwright.config import ConfigError, Settings, build_model, load_settings, parse_model_spec
from loopwright.errors import LoopwrightError, UserInputError
from loopwright.model.base import Model
from loopwright.store import approvals as pending
from loopwright.store import streams
from loopwright.store.db import Database as Database  # the handle the runtime runs on, for its callers
from loopwright.store.models import App, PendingApproval, RunStream, unix_seconds, utcnow
from loopwright.tools.app_tool import AppAnswer
from loopwright.tools.base import ProgressMessage, Tool, ToolContext, ToolInvokeError, ToolLike, ToolOutput
from loopwright.tools.files.manager import StoredFile, ToolFiles, load_tool_files
from loopwright.tools.net import NetworkPolicy, network_policy
from loopwright.tools.sandbox import Sandbox
from loopwright.tools.skills import Skill, load_skills

if TYPE_CHECKING:
    from loopwright.app.run.durable import DurableExecutor
    from loopwright.knowledge.kb import KnowledgeBase
    from loopwright.tools.dify_plugins import DifyPlugins
    from loopwright.tools.ranking import ToolRanker

log = logging.getLogger("loopwright.app")

MAX_CACHED_AGENTS = 256
INTERNAL_MESSAGE = "Internal Server Error, please contact support."


async def migrate(db: Database) -> None:
    """Bring the database's schema to the newest version, then let its connections go (they belong to
    the event loop that made them; a server runs its own)."""
    await db.migrate()
    await db.engine.dispose()


class AppRuntime:
    """The app layer over ``db`` (see the module's docstring). ``settings`` default to
    :func:`load_settings` when first needed; ``tools`` are the built-in tools apps choose from;
    ``ping_interval`` is the silence after which a run's reader gets a ping; ``workers`` > 1 when
    several processes serve the same database (stops then reach the process running the message);
    ``models`` are models already built, by the spec apps name them with (embedding, tests)."""

    def __init__(
        self,
        db: Database,
        settings: Settings | None = None,
        *,
        tools: Sequence[Tool] = (),
        ping_interval: float = 10.0,
        workers: int = 1,
        upload_dir: Path | None = None,
        upload_max_bytes: int | None = None,
        models: Mapping[str, Model] | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.clock = clock  # what approval deadlines are checked against (naive UTC); tests move it
        self.tools = list(tools)
        self.upload_dir = upload_dir  # None: see ``upload_limits``
        self.upload_max_bytes = upload_max_bytes
        self.ping_interval = ping_interval
        # Every run's events, kept for a re-attach from any worker (app.run.journal)
        self.journal = EventJournal(db)
        # New events and stops between the processes serving the database (app.run.relay)
        self.relay = Relay(db, self.journal, workers=workers)
        self.runs = RunRegistry(ping_interval, self.relay)
        # This process's heartbeat: its running messages are told apart from a dead process's
        self.lease = WorkerLease(db, journal=self.journal, running=self.runs.running)
        # The durable executor (app.run.durable), opened with the runtime when the settings choose it
        self.durable: DurableExecutor | None = None
        self.lookup = AppLookup(db)
        self.relay.on_revoked = self.lookup.revoked  # a revocation heard from another process
        self.active = ActiveRequests()  # per-app concurrency (``max_active_requests``)
        # Per key / per end user limits (app.run.rate_limits), made when first used
        self._limiter: Limiter | None = None
        self._naming: set[asyncio.Task[None]] = set()  # conversation names being made (app.run.naming)
        self._stopping: set[asyncio.Task[bool]] = set()  # paused messages being stopped
        self._background: set[asyncio.Task[None]] = set()  # memory observations caught up (app.run.memory)
        self._settings = settings
        self._models: dict[str, Model] = dict(models or {})  # by spec; ``models`` are used as given
        self._agents: LRUCache[tuple[str, str], Agent] = LRUCache(MAX_CACHED_AGENTS)
        # Made once per built agent, ``observer(app_id, config, agent)``: a callback added to the
        # agent's own (the server's Prometheus metrics, server.metrics).
        self.agent_observers: list[Callable[[str, AppConfig, Agent], object]] = []
        self.tool_files: ToolFiles | None = None  # built on first use (``files()``)
        # The prompts models receive, per message, for the console's debug view (app.run.prompt_log); set
        # by the server when the console is on, before any agent is built.
        self.prompt_log: PromptLog | None = None
        self._knowledge: KnowledgeBase | None = None
        # Around the agent: moderation, annotation replies, external data (app.guards.steps)
        self.annotations = Annotations(db, endpoints=lambda: self.settings)
        self.guards = Guards(self.annotations, policy=self._network_policy, openai=self._openai_endpoint)
        self.approval_timer = ApprovalTimer(self.expire_approvals)
        # Runs this process executes (app.run.executors); the durable executor wraps it when chosen
        self.in_process = InProcessExecutor(
            db,
            self.runs,
            self.journal,
            self.lease,
            self.guards,
            speaker=self._auto_play,
        )
        self.speech = Speech(lambda: self.settings)  # the apps' audio endpoints (app.files.speech)
        self.toolsets = ToolsetPool(
            policy=lambda: network_policy(self.settings.tool_allow_hosts),
            knowledge=self.knowledge,
            app_info=self._app_info,
            app_runner=self.answer,
            plugins=self.plugins,
        )
        self._plugins: DifyPlugins | None = None
        self._plugins_lock = asyncio.Lock()

    @classmethod
    def with_builtin_tools(cls, db: Database, settings: Settings | None = None, **options: Any) -> AppRuntime:
        """A runtime whose apps choose from the built-in tools, behind the settings' network policy
        (what ``loopwright serve`` and ``loopwright app ask`` run); ``options`` as the constructor's."""
        from loopwright.tools.builtin import AudioEndpoint, builtin_tools

        settings = settings or load_settings()
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
        base = settings.openai_base_url or ("https://api.openai.com/v1" if key else None)
        audio = AudioEndpoint(base, key)
        tools = builtin_tools(network_policy(settings.tool_allow_hosts), audio=audio)
        return cls(db, settings, tools=tools, **options)

    # --- the entry point --------------------------------------------------------------------------

    async def start(self, request: MessageRequest) -> Run:
        """Start running one message; see the module's docstring."""
        uploads = self.upload_limits().directory
        policy = network_policy(self.settings.tool_allow_hosts)  # for remote files of ``file`` inputs
        agent_for = partial(self.agent, app_id=request.app_id)
        plan = await prepare(self.db, self.lookup, request, agent_for, upload_dir=uploads, file_policy=policy)
        if budgets.counts(plan.config.budget):
            plan = await self._within_budget(plan)
        if plan.config.memory.compaction == "summarize" and not plan.new_conversation:
            plan = self._with_summarizer(plan)
        if plan.config.memory.long_term:
            plan = await self._with_memory(plan)
        if plan.config.handoffs:
            team = await handoffs.team_for(
                self.db, self.lookup, request.app_id, plan.config, plan.agent, self.agent, plan.answered_by
            )
            plan = dataclasses.replace(plan, team=team)
        await self.open()
        release = await self._limited(request)
        try:
            with self.active.counted(request.app_id, plan.config.max_active_requests) as count:
                record = await self._claim(plan.head, request) if request.task_id is not None else None
                run = self.executor.start(plan, record)
                count.until(run)
        except BaseException:
            if release is not None:
                release()
            raise
        if release is not None:
            run.on_end(release)
        if self._names_conversation(plan):
            conversation_id = plan.head.conversation_id
            run.on_end(
                lambda: naming.rename_in_background(
                    self.db, plan.agent.model, conversation_id, request.query, self._naming
                )
            )
        return run

    async def _limited(self, request: MessageRequest) -> Callable[[], None] | None:
        """The end user's rate and the streams (app.run.rate_limits): what ends the run's count, if any."""
        if not self.limiter.on:
            return None
        streaming = request.response_mode == "streaming"
        return await self.limiter.start_run(request.app_id, request.user, streaming)

    async def _with_memory(self, plan: RunPlan) -> RunPlan:
        """The plan with what the app remembers of its end user that bears on the question
        (``memory.long_term``; app.run.memory)."""
        end_user = plan.end_user if isinstance(plan.end_user, str) else await asyncio.shield(plan.end_user)
        budget = plan.config.memory.recall_tokens
        conversation = None if plan.new_conversation else plan.head.conversation_id
        recalled = await memory.recall(
            self.db, plan.request.app_id, end_user, plan.request.query, budget, conversation_id=conversation
        )
        return dataclasses.replace(plan, recalled=recalled) if recalled else plan

    def _with_summarizer(self, plan: RunPlan) -> RunPlan:
        """The plan with the model that folds its conversation's older turns (``memory.summary_model``,
        else the app's). The embedded local model is too small to summarize: its apps trim instead,
        as do apps whose summary model cannot be built (logged)."""
        spec = plan.config.memory.summary_model or plan.config.model
        try:
            if parse_model_spec(spec).kind == "local":
                return plan
            model = self.model(spec)
        except (ConfigError, ProviderNotInitializedError) as exc:
            log.warning("summary model %s unavailable, trimming instead: %s", spec, exc)
            return plan
        return dataclasses.replace(plan, summarizer=summarize_with(model), summary_spec=spec)

    async def _within_budget(self, plan: RunPlan) -> RunPlan:
        """The plan with its run's budget narrowed to what the app's, the end user's and the
        conversation's caps leave (app.run.budgets); raises ``BudgetExceededError`` (429) when one is
        used up, before anything is written."""
        end_user = plan.end_user if isinstance(plan.end_user, str) else await asyncio.shield(plan.end_user)
        day = budgets.day_of(self.clock())
        caps = await budgets.allowance(
            self.db,
            plan.config.budget,
            app_id=plan.request.app_id,
            end_user_id=end_user,
            conversation_id=None if plan.new_conversation else plan.head.conversation_id,
            day=day,
        )
        budget = (plan.agent.budget or Budget()).narrowed(caps)
        return dataclasses.replace(plan, budget=budget, budget_day=day)

    async def open(self) -> None:
        """Register this process (sweeping what dead ones left, or taking their durable runs up) and
        listen to the others; the first run does it if the server's start-up could not."""
        self.relay.start()
        if self.durable is None and self.settings.executor == "durable":
            check_executor("durable")  # its extra is installed
            from loopwright.app.run.durable import DurableExecutor

            self.durable = DurableExecutor(self, self.in_process)
            self.durable.launch()  # before the lease: its first beat takes runs over
        if not self.lease.opened:
            await self.lease.open()
            # observations a process that died did not write (app.run.memory), in the background
            catching_up = asyncio.ensure_future(self._catch_up_memory())
            self._background.add(catching_up)
            catching_up.add_done_callback(self._background.discard)

    async def _catch_up_memory(self) -> None:
        try:
            await memory.catch_up(self.db, self.lookup)
        except Exception:  # a later start tries again; runs never wait for it
            log.warning("memory: catching up observations failed", exc_info=True)

    async def _claim(self, head: EventHead, request: MessageRequest) -> RunRecord | None:
        """The stream of a run whose id the caller chose, its row written now: a request retried with
        the same id (at once, or on another worker) finds it and is refused with RunExistsError; with
        the durable executor, so is one whose run's workflow outlived the stream's retention."""
        if self.durable is not None and await self.durable.exists(head.task_id):
            raise RunExistsError(head.task_id)
        row = RunStream(**stream_row(head, request.app_id, request.user, self.lease.id))
        try:
            async with self.db.transaction() as session:
                session.add(row)
        except IntegrityError:
            raise RunExistsError(head.task_id) from None
        # the row guards against a second run even when no events are kept for a re-attach
        return self.journal.record(head.task_id, 0)

    async def settled(self) -> None:
        """Wait until every run has ended and the work they leave behind is done: the conversation
        names they started, observations being caught up, detached runs' events drained."""
        await self.runs.wait_idle()
        await asyncio.sleep(0)  # a finished run's callback starts its naming on the next loop turn
        await asyncio.gather(*self._naming, *self._background, return_exceptions=True)

    @property
    def executor(self) -> Executor:
        """The executor runs go through (the settings' ``executor``; durable once opened)."""
        return self.durable if self.durable is not None else self.in_process

    def _names_conversation(self, plan: RunPlan) -> bool:
        """Whether the model names this message's conversation after the answer (``app.run.naming``)."""
        wanted = plan.new_conversation and plan.request.auto_generate_name
        config = plan.config
        return wanted and (names_conversations(config) or self.settings.dify_strict)

    async def follow(
        self, task_id: str, app_id: str, user: str, after: int = 0
    ) -> tuple[EventHead, AsyncIterator[list[Replayed]]]:
        """Re-attach to the stream of a message of this app and user, whichever process runs it (or
        ran it, within the retention period): the leading fields of its events and its events
        numbered above ``after``, then live until it ends (``EventJournal.follow``). Raises
        ``NotFoundError`` for a task that is not this user's, never was, or expired."""
        self.relay.start()
        if self.runs.get(task_id) is not None:
            await self.db.writer.flush()  # its stream's row, queued when it started
        head = await self.journal.head_of(task_id, app_id, user)
        return head, self.journal.follow(task_id, after, self.ping_interval)

    async def stored_events(
        self, task_id: str, app_id: str, user: str
    ) -> tuple[EventHead, list[Replayed], bool]:
        """The leading fields and the stored events of a message of this app and user (as ``follow``
        finds them, without waiting for more), and whether its stream has ended (a pause ends it until
        a decision resumes it); ``NotFoundError`` as ``follow``'s."""
        if self.runs.get(task_id) is not None:
            await self.db.writer.flush()
        head = await self.journal.head_of(task_id, app_id, user)
        events, ended = await self.journal.stored(task_id)
        return head, events, ended

    def stop(self, task_id: str, app_id: str, user: str) -> bool:
        """Stop a running message of this app and user, whichever process runs it; whether this
        process had it. A message paused for approvals is ended as stopped (in the background: see
        ``stop_paused``)."""
        self.relay.start()
        if self.runs.stop(task_id, app_id, user):
            return True
        task = asyncio.ensure_future(self.stop_paused(task_id, app_id, user))
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
        return False

    async def stop_paused(self, task_id: str, app_id: str, user: str) -> bool:
        """End a message paused for approvals as ``stopped`` (its calls never run); whether there was
        one of this app and user to stop."""
        try:
            async with self.db.sessionmaker() as session:
                row = await pending.get_pending(session, task_id)
                if row is None or row.app_id != app_id or row.user != user:
                    return False
                if not await pending.take_pending(session, task_id):
                    return False  # resumed meanwhile: that run takes stops itself
            writes = MessageWrites(self.db, row.conversation_id, row.message_id)
            await writes.stopped_while_paused()
        except Exception:  # a stop must never fail a request; the timeout still ends the pause
            log.warning("could not stop paused run %s", task_id, exc_info=True)
            return False
        return True

    async def resume(self, request: ApprovalsRequest) -> Run:
        """Resume a message paused for approvals with the user's decisions (app.run.approvals); the run
        handle is as ``start``'s, under the same task id. Raises ``NotFoundError`` when no run of this
        app and user waits under that id, ``UserInputError`` for decisions that do not match it."""
        local = self.runs.get(request.task_id)
        if local is not None and local.app_id == request.app_id and local.user == request.user:
            await local.outcome()  # it is pausing here: its row is written when it has ended
        async with self.db.sessionmaker() as session:
            row = check_owner(
                await pending.get_pending(session, request.task_id), request.app_id, request.user
            )
        resume = resumption(row, request.decisions, self.clock())
        return await self._resume(row, resume, request.response_mode == "streaming", request.encoder)

    async def human_input_form(self, token: str, app_id: str, user: str | None = None) -> ApprovalForm:
        """The open Dify Human Input form of ``token`` (app.run.human_input), if it is this app's
        (and, given, this user's); else ``NotFoundError`` or a 412 error."""
        return (await human_input.form_of(self.db, token, app_id, self.clock(), user)).form

    async def submit_human_input(
        self, token: str, app_id: str, user: str, action: str, inputs: Mapping[str, Any]
    ) -> Run:
        """Decide a paused message with its Human Input form: the form is used (once) and the message
        resumes in the background, its events kept for ``follow``."""
        opened = await human_input.form_of(self.db, token, app_id, self.clock(), user)
        request = human_input.submission(opened, action, inputs, user)
        async with self.db.sessionmaker() as session:
            row = check_owner(await pending.get_pending(session, request.task_id), app_id, user)
        resume = resumption(row, request.decisions, self.clock())  # bad decisions: the form stays open
        await human_input.use(self.db, opened, action)
        try:
            return await self._resume_detached(row, resume)
        except ApprovalsClosedError:
            raise human_input.FormClosedError("The run is no longer waiting on this form") from None
        except BaseException:  # refused before it resumed (e.g. the app's max_active_requests)
            await human_input.unuse(self.db, opened)
            raise

    async def _paused_stream_written(self, task_id: str) -> None:
        """Wait until the stream of a message that paused in this process is stored to its end, so
        that the resumed run numbers its events on from the last one (``streams.reopen_stream``)."""
        local = self.runs.get(task_id)
        if local is not None and local.ended_as() == "waiting" and local.task is not None:
            await asyncio.wait({local.task})
        await self.journal.settled()

    async def _resume_detached(self, row: PendingApproval, resume: Resumption) -> Run:
        """Resume a paused message that no client reads: its events go to the journal only, for
        ``follow`` (``GET /v1/workflow/{task_id}/events``)."""
        run = await self._resume(row, resume, True)
        drain = asyncio.ensure_future(_drain(run))
        self._background.add(drain)
        drain.add_done_callback(self._background.discard)
        return run

    async def expire_approvals(self) -> int:
        """Resume the paused runs whose approval time is up, their calls denied; how many."""
        now = self.clock()
        async with self.db.sessionmaker() as session:
            rows = await pending.overdue(session, now)
        count = 0
        for row in rows:
            try:
                await self._resume_detached(row, resumption(row, (), now))
                count += 1
            except ApprovalsClosedError:
                continue  # decided meanwhile
            except LoopwrightError as exc:  # its app or configuration is gone: it stays, logged
                log.warning("could not resume paused run %s: %s", row.task_id, exc)
        return count

    async def _resume(
        self,
        row: PendingApproval,
        resume: Resumption,
        streaming: bool,
        encoder: Callable[[int], DifyEncoder] | None = None,
    ) -> Run:
        version = await self.lookup.config(row.config_id)
        if version is None:
            raise ProviderNotInitializedError(f"configuration {row.config_id} is missing")
        agent = await self.agent(version, row.app_id)
        answering = resume.stream_state.get("answered_by")
        if isinstance(answering, str) and answering != row.app_id:  # it paused after a handoff
            agent = await handoffs.agent_of(self.lookup, answering, self.agent) or agent
        if not self.lease.opened:
            await self.lease.open()
            # observations a process that died did not write (app.run.memory), in the background
            catching_up = asyncio.ensure_future(self._catch_up_memory())
            self._background.add(catching_up)
            catching_up.add_done_callback(self._background.discard)
        # Counted as a running message of the app (max_active_requests) before the row is taken, so
        # a refusal leaves the run waiting.
        await self._paused_stream_written(row.task_id)
        with self.active.counted(row.app_id, version.config.max_active_requests) as count:
            async with self.db.sessionmaker() as session:
                taken = await pending.take_pending(session, row.task_id)
                # its stream goes on, numbered on (a re-attach follows the whole message)
                first_seq = await streams.reopen_stream(session, row.task_id) if taken else None
            if not taken:
                raise ApprovalsClosedError(NOT_WAITING)
            head = EventHead(
                row.task_id, row.message_id, row.conversation_id, unix_seconds(row.message_created_at)
            )
            plan = resumed_plan(
                head=head,
                created=row.message_created_at,
                app_id=row.app_id,
                user=row.user,
                version=version,
                agent=agent,
                end_user_id=row.end_user_id,
                query=resume.interruption.state.query,
                resume=resume,
                streaming=streaming,
                encoder=encoder,
                first_seq=first_seq or 0,
                continues_stream=first_seq is not None,
            )
            run = self.executor.resume(plan)
            count.until(run)
        return run

    async def answer(
        self,
        app_id: str,
        query: str,
        inputs: Mapping[str, Any],
        ctx: ToolContext,
        progress: Callable[[ProgressMessage], None] | None = None,
    ) -> AppAnswer:
        """One message of an app, run to its end for an app that calls it as a tool (a new conversation
        of the same end user each time; it is stored like any other). ``progress`` is told of each of
        its thoughts as they come (the caller streams them as its call's progress)."""
        request = MessageRequest(
            app_id,
            ctx.user_id or "app-tool",
            query,
            inputs,
            # streaming keeps the run's events for us to read: only when they are wanted
            response_mode="streaming" if progress is not None else "blocking",
            call_depth=ctx.call_depth,
        )
        try:
            run = await self.start(request)
        except UserInputError as exc:
            raise ToolInvokeError(str(exc)) from None
        try:
            if progress is not None:
                async for event in run.events():
                    if isinstance(event, AgentThought) and (line := thought_line(event)):
                        progress(ProgressMessage(line, None, event))
            outcome = await run.outcome()
        except asyncio.CancelledError:
            run.stop("caller stopped")  # the calling run was stopped: so is this one
            raise
        failure = outcome.error
        if outcome.approval is not None:  # it waits for a person: this call cannot wait with it
            raise ToolInvokeError(
                f"the app is waiting for approval of its tool calls (task {outcome.approval.head.task_id})"
            )
        if failure is not None:
            raise ToolInvokeError(str(failure) if isinstance(failure, LoopwrightError) else INTERNAL_MESSAGE)
        return AppAnswer(outcome.answer, outcome.files, outcome.usage)

    # --- what requests share ----------------------------------------------------------------------

    def _network_policy(self) -> NetworkPolicy:
        return network_policy(self.settings.tool_allow_hosts)

    def _openai_endpoint(self) -> tuple[str | None, str | None]:
        key = self.settings.openai_api_key
        return self.settings.openai_base_url, key.get_secret_value() if key is not None else None

    @property
    def limiter(self) -> Limiter:
        if self._limiter is None:
            self.use_limiter(limiter_for(self.db, LimitSettings.of(self.settings)))
        assert self._limiter is not None
        return self._limiter

    def use_limiter(self, limiter: Limiter) -> None:
        """Count the limits with ``limiter`` (tests: one with their own clock); its leases are renewed
        by this process's heartbeat."""
        if self._limiter is not None and self._limiter.on:
            self.lease.renewals.remove(self._limiter.renew)
        self._limiter = limiter
        if limiter.on:
            self.lease.renewals.append(limiter.renew)

    @property
    def settings(self) -> Settings:
        if self._settings is None:
            self._settings = load_settings()
        return self._settings

    def model(self, spec: str) -> Model:
        """The model an app's spec names, built once per spec and shared by every request (a scripted
        model's replies are consumed across requests, as one script for the whole conversation)."""
        model = self._models.get(spec)
        if model is None:
            try:
                model = build_model(spec, self.settings)
            except ConfigError as exc:
                raise ProviderNotInitializedError(str(exc)) from None
            self._models[spec] = model
        return model

    def use_model(self, spec: str, model: Model) -> None:
        """Run the apps whose configuration names ``spec`` on ``model`` instead (an eval swaps an app's
        model, or replays recorded replies); agents already built on the old one are dropped."""
        self._models[spec] = model
        for key in [k for k in self._agents if k[1] == spec]:
            self._agents.pop(key, None)

    async def agent(self, version: ConfigVersion, app_id: str = "") -> Agent:
        """The agent of a configuration version, built once: an Agent is configuration only (runs keep
        their state apart), so one serves every request, with its prompt caches warm."""
        model = self.model(version.config.model)
        key = (version.id, version.config.model)  # one model per spec (see ``model``)
        agent = self._agents.get(key)
        if agent is None:
            check_config(version.config, self.settings.tool_sources)  # an app stored before the list
            toolsets = await self.toolsets.tools_for(version.config)
            if version.config.memory.long_term:  # the end user's working memory (app.run.memory)
                toolsets = [*toolsets, memory.memory_tool(self.db, self.lookup)]
            if self.prompt_log is not None:
                model = self.prompt_log.wrap(model)
            skills = await run_sync(load_skills, version.config.skills) if version.config.skills else []
            agent = build_agent(version.config, model, self.tools, toolsets, _LazyFiles(self), skills)
            if self.agent_observers:
                observers = [make(app_id, version.config, agent) for make in self.agent_observers]
                agent.callbacks = [*agent.callbacks, *observers]
            self._agents[key] = agent
        return agent

    def upload_limits(self) -> UploadLimits:
        """Where uploads are kept and how large one may be: the runtime's own choice, else the
        settings' (:func:`~app.files.uploads.upload_limits`)."""
        return upload_limits(self.settings, directory=self.upload_dir, max_bytes=self.upload_max_bytes)

    async def files(self) -> ToolFiles:
        """The tool files (local storage and signing key from the settings), built once."""
        if self.tool_files is None:
            self.tool_files = await load_tool_files(self.settings)
        return self.tool_files

    async def plugins(self) -> DifyPlugins:
        """The installed Dify plugins and the host that runs them, opened on first use (in the data
        directory; credentials encrypted with the settings' secret key)."""
        async with self._plugins_lock:
            if self._plugins is None:
                from loopwright.tools.dify_plugins import DifyPlugins

                secret = self.settings.secret_key
                configured = secret.get_secret_value() if secret is not None else None
                self._plugins = await run_sync(
                    partial(DifyPlugins.open, configured, model_for=self._plugin_model, files=self.files)
                )
            return self._plugins

    async def tool_icons(self, app_id: str) -> dict[str, str]:
        """Dify's ``tool_icons`` of an app (``/v1/meta``): its plugin tools' provider icons, as URLs
        under the settings' ``files_url``."""
        version = await self.lookup.latest_config(app_id)
        entries = [e for e in version.config.toolsets if e.get("type") == "dify_plugin"] if version else []
        if not entries:
            return {}
        from loopwright.tools.dify_plugins import DifyPluginSource

        plugins = await self.plugins()
        icons = await plugins.tool_icons([DifyPluginSource.model_validate(e) for e in entries])
        return {name: self.settings.files_url + path for name, path in icons.items()}

    def use_plugins(self, plugins: DifyPlugins) -> None:
        """Use these plugins (another directory, a test's host) instead of the data directory's."""
        self._plugins = plugins

    async def _plugin_model(self, ctx: ToolContext) -> Model | None:
        """The model of the app a plugin's tool call runs for (its ``llm`` calls use it)."""
        if ctx.app_id is None:
            return None
        version = await self.lookup.latest_config(ctx.app_id)
        return self.model(version.config.model) if version is not None else None

    def use_knowledge(self, kb: KnowledgeBase) -> None:
        """Serve this knowledge base instead of the one beside the database (tests, embedding)."""
        self._knowledge = kb

    def knowledge(self) -> KnowledgeBase:
        """The knowledge bases beside the app database, opened once (opening is cheap: the store
        connects on its first query)."""
        if self._knowledge is None:
            from loopwright.knowledge.kb import KnowledgeBase

            self._knowledge = KnowledgeBase.open(self.db.url, settings=self.settings)
        return self._knowledge

    def _auto_play(self, plan: RunPlan) -> Speaker | None:
        """The app's voice for a streamed answer when its text to speech plays by itself (Dify's
        ``autoPlay``: ``tts_message`` events after ``message_end``)."""
        config = plan.config
        tts = config.text_to_speech
        if not plan.streaming or not (tts.enabled and tts.autoPlay == "enabled"):
            return None

        async def speak(text: str) -> AsyncGenerator[bytes, None]:
            return (await self.speech.speak(config, text, voice=None)).chunks()

        return speak

    async def shutdown(self, grace: float = 10.0) -> None:
        """Stop every run and wait for them to save, then close what the agents hold open (MCP
        sessions, the knowledge store) and drain the database writer."""
        await self.runs.shutdown(grace)
        await self.journal.settled()
        await self.aclose()
        await self.db.writer.close()

    async def aclose(self) -> None:
        """Give up this process's lease (its runs have ended: none of its messages is left running) and
        close what the agents hold open (MCP sessions, the knowledge store); conversation names still
        being made, and observations being caught up, are given up (the next start catches up)."""
        left = [*self._naming, *self._background]
        for task in left:
            task.cancel()
        # awaited, so none is still inside a database call when the caller's loop closes
        await asyncio.gather(*left, return_exceptions=True)
        await self.approval_timer.aclose()
        if self.durable is not None:
            await self.durable.aclose()
            self.durable = None
        await self.lease.aclose()
        await self.relay.aclose()
        await self.annotations.aclose()
        await self.toolsets.aclose()
        if self._plugins is not None:
            await self._plugins.aclose()
            self._plugins = None
        await self.speech.aclose()
        if self._knowledge is not None:
            await self._knowledge.close()
            self._knowledge = None

    async def _app_info(self, app_id: str) -> tuple[str, str, Sequence[InputField]] | None:
        version = await self.lookup.latest_config(app_id)
        if version is None:
            return None
        async with self.db.sessionmaker() as session:
            app = await session.get(App, app_id)
        if app is None:
            return None
        return app.name, app.description, version.config.user_input_form


async def _drain(run: Run) -> None:
    """Read a run's events that no client reads (they go to the journal as they are made)."""
    async for _ in run.events():
        pass


def build_agent(
    config: AppConfig,
    model: Model,
    tools: Sequence[Tool],
    toolsets: Sequence[ToolLike] = (),
    files: _LazyFiles | None = None,
    skills: Sequence[Skill] = (),
) -> Agent:
    """The agent an app configuration describes, on an already built model: ``config.tools`` chosen by
    name from ``tools``, plus the built ``toolsets`` of ``config.toolsets``; ``files`` keeps the files
    its tools make."""
    by_name = {t.name: t for t in tools}
    chosen = []
    for tc in config.tools:
        tool = by_name.get(tc.name)
        if tool is None:
            raise UserInputError(f"the app uses a tool that is not available: {tc.name!r}")
        chosen.append(tool.configure(**tc.form_values) if tc.form_values else tool)
    return Agent(
        model=model,
        tools=[*chosen, *toolsets, *(handoff_tool(h.app, h.description) for h in config.handoffs)],
        files=files,
        # a completion app's instruction is its message to the model (app.run.plan.completion_prompt)
        instruction="" if config.mode == "completion" else _with_evidence_note(config),
        strategy=config.strategy,
        max_iterations=config.max_iterations,
        model_params=config.model_params,
        callbacks=load_callbacks(config.callbacks) if config.callbacks else (),
        output_type=config.output_schema,
        approval_required=config.approval.tools,
        tool_selector=_tool_ranker(config),
        max_replans=config.plan.max_replans,
        max_plan_steps=config.plan.max_steps,
        skills=skills,
        skill_sandbox=Sandbox() if any(s.scripts for s in skills) else None,
        budget=budgets.run_budget(config.budget),
    )


EVIDENCE_NOTE = (
    "Answer only from what the knowledge base tools return: search them first, and if they return "
    "nothing relevant, say that you do not know."
)


def _with_evidence_note(config: AppConfig) -> str:
    """The app's instruction; an app that requires evidence also tells the model to rest on it."""
    if not (config.evidence.required and any(t.get("type") == "knowledge" for t in config.toolsets)):
        return config.instruction
    return f"{config.instruction}\n\n{EVIDENCE_NOTE}" if config.instruction else EVIDENCE_NOTE


def _tool_ranker(config: AppConfig) -> ToolRanker | None:
    """The app's tool ranking (it ranks only when the app offers more tools than its threshold)."""
    ranking = config.tool_ranking
    if not ranking.enabled:
        return None
    from loopwright.tools.ranking import ToolRanker

    small = config.model == "local" or config.model.startswith("local:")  # the embedded model
    threshold = ranking.threshold or (3 if small else 16)
    return ToolRanker(threshold=threshold, top_k=ranking.top_k or min(threshold, 3 if small else 6))


class _LazyFiles:
    """The runtime's tool files, opened when a tool first makes a file (opening creates the data
    directory and the signing key, which most apps never need)."""

    def __init__(self, runtime: AppRuntime) -> None:
        self._runtime = runtime

    async def store_outputs(self, outputs: Sequence[ToolOutput], ctx: ToolContext) -> list[StoredFile]:
        files = await self._runtime.files()
        return await files.store_outputs(outputs, ctx)


def thought_line(thought: AgentThought) -> str:
    """One line for an app's thought, as its caller's live progress shows it ('' for an empty one)."""
    if thought.tool and thought.observation:
        text = f"{thought.tool}: {thought.observation}"
    elif thought.tool:
        text = f"calling {thought.tool}"
    else:
        text = thought.thought
    text = " ".join(text.split())
    return text if len(text) <= 200 else text[:200] + "…"
