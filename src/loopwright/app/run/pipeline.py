"""One run of a message: the agent's events handed to the run's sinks in one flat loop.

:class:`MessageRun` is the body of a run's task (``app.run.runs``). It runs the guards before the agent
(``app.guards.steps``: input moderation, annotation reply, external data — which may answer without the
agent), then the agent — or, for a message that goes on, the agent's resumed run — and hands each agent
event, in order, to:

- the Dify wire adapter (:class:`~app.dify.stream.DifyStream`), which maps it to Dify's wire events and
  keeps the in-memory mirror of the message's thought rows;
- output moderation (:class:`~app.guards.moderation.OutputGuard`), fed the streamed text, which may
  replace the answer;
- the row writer (:class:`~app.run.message_writes.MessageWrites`): a round's thought row when the round
  ends, the files tools made as they come;
- the run (:meth:`~app.run.runs.Run.emit`): each wire event encoded once, for the journal and the reader.

Callbacks, metrics and traces see the agent's events inside the agent (its callbacks). On every way out
— an answer, an error, a stop, a pause for approvals — what was done is saved (``_save``) and the
outcome recorded on the run. A stop is the run's task cancelled with a reason (:meth:`Run.stopping`):
what the run waited on is interrupted at once (Dify only stops at its next publish); what was done is
saved with status ``stopped`` and ``message_end`` follows.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from loopwright.agent import RoundFinished, ToolCallFinished
from loopwright.agent.durability import StepLog
from loopwright.agent.events import AgentEvent
from loopwright.agent.handoffs import HandoffStarted
from loopwright.app.dify.events import (
    AgentMessage,
    MessageEnd,
    MessageReplace,
    TextMessage,
    ToolApprovalRequired,
    TtsMessage,
    TtsMessageEnd,
    WireEvent,
)
from loopwright.app.dify.stream import DifyStream
from loopwright.app.guards.moderation import OutputGuard
from loopwright.app.guards.steps import OUTPUT_MODERATION, Guards, OutputFlagged, Prelude, direct_answer
from loopwright.app.run import budgets, memory
from loopwright.app.run.approvals import pending_values
from loopwright.app.run.compaction import Compacted
from loopwright.app.run.human_input import form_row, resumed_event
from loopwright.app.run.journal import RunRecord
from loopwright.app.run.message_writes import MessageWrites
from loopwright.app.run.plan import RunPlan, completion_prompt, fit_history, stream_extras, tool_labels_of
from loopwright.app.run.runs import Run, RunOutcome
from loopwright.errors import UserInputError
from loopwright.model.entities import Usage, UserMessage
from loopwright.store import memory as memory_store
from loopwright.store.models import ConversationSummary, HumanInputForm, utcnow
from loopwright.store.writer import Insert

log = logging.getLogger("loopwright.app")

EMPTY_COMPLETION = (
    "nothing to complete: the app's instruction and the inputs are empty, and no query was given"
)
RESUMED = "resumed"  # the reason of the message_replace a run taken up after a cut model call sends

Speaker = Callable[[str], Awaitable[AsyncGenerator[bytes, None]]]  # text → its speech, as it comes
# A durable run's step log, given the stream its events go through and its journal record
DurableSteps = Callable[[DifyStream, RunRecord | None], StepLog]


class MessageRun:
    """The pipeline of one run (see the module's docstring); ``await run_()`` runs it to its end."""

    def __init__(
        self,
        plan: RunPlan,
        run: Run,
        writes: MessageWrites,
        guards: Guards | None = None,
        *,
        speak: Speaker | None = None,
        steps: DurableSteps | None = None,
    ) -> None:
        self.plan = plan
        self.run = run
        self.writes = writes
        self.guards = guards
        self.speak = speak
        self.stream = DifyStream(
            plan.head,
            plan.agent.strategy_kind,
            labels=tool_labels_of(plan.agent),
            extras=stream_extras(plan.config),
        )
        self.steps = steps(self.stream, run.record if run.keep_events else None) if steps else None
        self.output = guards.output_guard(plan.config, plan.request.app_id) if guards else None
        self.approval: ToolApprovalRequired | None = None

    async def __call__(self) -> None:
        run, stream = self.run, self.stream
        started = time.perf_counter()
        outcome = RunOutcome("normal", "")
        try:
            await self._events()
            outcome.end = stream.end
            if stream.interruption is not None:
                outcome.status = "waiting"
        except OutputFlagged as replaced:  # the answer so far is replaced and the run ends (as Dify)
            stream.answer = replaced.text
            await run.emit(MessageReplace(stream.head, replaced.text, OUTPUT_MODERATION))
            outcome.end = stream.message_end()
            await run.emit(outcome.end)
        except asyncio.CancelledError:
            outcome.status = "stopped"
            if not run.stopping():
                raise
            outcome.end = stream.message_end()
            await run.emit(outcome.end)  # the stop interrupted what the run was waiting on
        except Exception as e:  # a failed run still saves what it did, then tells the client
            outcome.status, outcome.error = "error", e
            await run.emit(stream.error(e))
        finally:
            if self.output is not None:
                self.output.close()
            outcome.approval = self.approval
            await self._save(outcome, time.perf_counter() - started)
        if self.speak is not None and outcome.status == "normal" and stream.answer.strip():
            await self._speech(stream.answer)  # Dify's auto-play, after message_end (saved already)

    async def _events(self) -> None:
        """The run's events, through its sinks; raises ``OutputFlagged`` when output moderation flags
        the answer."""
        source = await self._source()
        if source is None:
            return
        run, stream, writes, output = self.run, self.stream, self.writes, self.output
        feed, emit = stream.feed, run.emit
        async with contextlib.aclosing(source):
            async for event in source:
                for wire in feed(event):
                    if type(wire) is not AgentMessage and type(wire) is not TextMessage:
                        await self._on_wire(wire)
                    elif output is not None:
                        output.feed(wire.answer)
                    await emit(wire)
                if type(event) is RoundFinished or type(event) is HandoffStarted:
                    writes.save_round(stream.thoughts[-1], stream.labels)
                elif type(event) is ToolCallFinished and event.files:  # the files' ids are the stream's
                    writes.save_tool_files(stream.files[-len(event.files) :])
                if output is not None:
                    await self._verdict(output)

    async def _on_wire(self, wire: WireEvent) -> None:
        """A wire event other than a text delta, before it is sent."""
        if type(wire) is ToolApprovalRequired:
            self.approval = wire
        elif type(wire) is MessageEnd and self.output is not None:
            verdict = await self.output.final(self.stream.answer)
            if verdict is not None:  # the final answer is flagged: replaced before message_end
                self.stream.answer = verdict.text
                await self.run.emit(MessageReplace(self.stream.head, verdict.text, OUTPUT_MODERATION))

    async def _verdict(self, output: OutputGuard) -> None:
        verdict = output.poll()
        if verdict is not None and not verdict.overridden:
            raise OutputFlagged(verdict.text)
        if verdict is not None:  # corrected text: it replaces the answer so far, the run goes on
            await self.run.emit(MessageReplace(self.stream.head, verdict.text, OUTPUT_MODERATION))

    async def _source(self) -> AsyncGenerator[AgentEvent | HandoffStarted, None] | None:
        """The agent's events for this run; None when the guards answered without it."""
        plan, stream = self.plan, self.stream
        if plan.resume is not None:
            stream.restore(plan.resume.stream_state)
            if plan.replaced is None and stream.thoughts:  # a decision, not a takeover: as Dify's
                await self.run.emit(resumed_event(stream, plan.resume))
            if plan.replaced is not None:  # taken up after a cut model call, which runs again
                await self.run.emit(MessageReplace(plan.head, plan.replaced, RESUMED))
            resume = plan.resume
            return plan.agent.resume_stream(
                resume.interruption,
                resume.decisions,
                context=plan.tool_context(),
                steps=self.steps,
                budget=plan.budget,
            )
        prelude = await self._prelude()
        if prelude.answer is not None:  # moderated input or an annotation: no agent
            for wire in direct_answer(stream, prelude):
                await self.run.emit(wire)
            return None
        fitted = await fit_history(plan, prelude.query)
        if plan.config.memory.compaction == "summarize":
            self._keep_compaction(fitted)
        history = fitted.messages
        if plan.recalled is not None:  # last: the history's prefix stays the same from turn to turn
            history = [*history, UserMessage(plan.recalled)]
        if plan.team is not None:  # handoffs: the message may move to other apps (app.run.handoffs)
            stream.app_names = plan.team.names
            stream.answered_by = plan.team.start
        query = prelude.query
        if plan.config.mode == "completion":  # Dify's text generator: the prompt is the message
            query = completion_prompt(plan.config.instruction, prelude.inputs, query)
            if not query:
                raise UserInputError(EMPTY_COMPLETION)
        return (plan.team or plan.agent).stream(
            query,
            history=history,
            inputs=prelude.inputs,
            files=plan.files.parts or None,
            context=plan.tool_context(),
            steps=self.steps,
            budget=plan.budget,
        )

    async def _observe(self, answer: str) -> None:
        """The turn's observation for the end user's memory (app.run.memory), written behind with the
        message's rows (a process that dies first leaves it to ``memory.catch_up``)."""
        plan = self.plan
        end_user = plan.end_user if isinstance(plan.end_user, str) else await asyncio.shield(plan.end_user)
        head = plan.head
        self.writes.submit(
            memory.observation_row(
                plan.request.app_id,
                end_user,
                head.conversation_id,
                head.message_id,
                plan.request.query,
                answer,
            )
        )

    def _keep_compaction(self, fitted: Compacted) -> None:
        """What compaction did goes into the message's log; a summary made now is stored, to stand
        for the turns it folds in the prompts of the turns after (app.run.compaction)."""
        plan = self.plan
        self.writes.compaction = fitted.log_entry(plan.config.memory.compaction)
        made = fitted.made
        if made is not None and 0 < made.covered <= len(plan.history_ids):
            row = memory_store.new_summary(
                plan.head.conversation_id,
                covered_messages=made.covered,
                last_message_id=plan.history_ids[made.covered - 1],
                summary=made.text,
                model=plan.summary_spec,
            )
            self.writes.submit(Insert(ConversationSummary, row))

    async def _prelude(self) -> Prelude:
        """What the agent runs with (``app.guards.steps``: maybe an answer without it)."""
        plan = self.plan
        # The inputs as ``{{variable}}`` shows them (file inputs as readable text), when they differ.
        inputs = plan.inputs if plan.prompt_inputs is None else plan.prompt_inputs
        if self.guards is None:
            return Prelude(inputs, plan.request.query)
        request = plan.request
        return await self.guards.prepare(
            plan.config, request.app_id, inputs, request.query, plan.head.message_id
        )

    async def _save(self, outcome: RunOutcome, elapsed: float) -> None:
        """Write the outcome (to its end, even when a stop lands meanwhile) and record it on the run."""
        stream, writes = self.stream, self.writes
        error_text = str(outcome.error) if outcome.error is not None else None
        if outcome.status == "waiting":
            writes.pause(await self._pending())
            if stream.form is not None and stream.paused_until is not None:  # app.run.human_input
                row = form_row(self.plan, stream.form, stream.form_token, stream.paused_until)
                writes.submit(Insert(HumanInputForm, row))
        saving = asyncio.ensure_future(writes.finish(stream, outcome.status, error_text, elapsed))
        try:
            await asyncio.shield(saving)
        except asyncio.CancelledError:
            if not self.run.stopping():
                raise
            await saving  # a stop that came while saving: the save goes on to its end
        outcome.answer, outcome.usage = saving.result()
        outcome.files = [o for _, o in stream.files]
        if budgets.counts(self.plan.config.budget) and outcome.status != "waiting":
            await self._count(outcome.usage)
        if self.plan.config.memory.long_term and outcome.status == "normal" and outcome.answer:
            await self._observe(outcome.answer)
        self.run.finish(outcome)

    async def _count(self, usage: Usage) -> None:
        """Add the message's usage to its app's, end user's and conversation's counters
        (app.run.budgets), before the run is over (the next request is checked against them). A message
        that pauses for approvals is counted once, whole, when it ends."""
        plan = self.plan
        end_user = plan.end_user if isinstance(plan.end_user, str) else await asyncio.shield(plan.end_user)
        spent = (usage.total_tokens, usage.total_price)
        write = budgets.record(
            plan.config.budget,
            spent,
            app_id=plan.request.app_id,
            end_user_id=end_user,
            conversation_id=plan.head.conversation_id,
            day=plan.budget_day or budgets.day_of(plan.created),
        )
        await asyncio.shield(self.writes.count(write))

    async def _pending(self) -> dict[str, Any]:
        """The ``pending_approvals`` row of a message that paused."""
        stream, plan = self.stream, self.plan
        assert stream.interruption is not None and stream.paused_until is not None
        head, request = plan.head, plan.request
        end_user = plan.end_user
        return pending_values(
            task_id=head.task_id,
            app_id=request.app_id,
            user=request.user,
            end_user_id=end_user if isinstance(end_user, str) else await asyncio.shield(end_user),
            config_id=plan.version.id,
            conversation_id=head.conversation_id,
            message_id=head.message_id,
            message_created_at=plan.created,
            interruption=stream.interruption,
            stream_state=stream.saved(),
            paused_at=utcnow(),
            expires_at=stream.paused_until,
        )

    async def _speech(self, text: str) -> None:
        """``tts_message`` events of the answer's speech, then ``tts_message_end``. A failing audio
        server, or a stop, ends the speech early; the stream itself never fails for it."""
        assert self.speak is not None
        run, head = self.run, self.plan.head
        try:
            async with contextlib.aclosing(await self.speak(text)) as chunks:
                async for chunk in chunks:
                    await run.emit(TtsMessage(head, base64.b64encode(chunk).decode("ascii")))
        except asyncio.CancelledError:
            if not run.stopping():
                raise
        except Exception:
            log.warning("text to speech of an answer failed", exc_info=True)
        await run.emit(TtsMessageEnd(head))
