"""A message from request to stored answer, through the app runtime's entry point and the run's pipeline
(``app.run.plan``, ``app.run.pipeline``), on a real SQLite file and the scripted model."""

from __future__ import annotations

import asyncio
import json
from typing import ClassVar

import pytest

from loopwright import AgentCallback, tool
from loopwright.agent import ToolCallStarted
from loopwright.app.config import AppConfig, ToolConfig
from loopwright.app.dify.events import AgentMessage, AgentThought, ErrorEvent, MessageEnd, WireEvent
from loopwright.app.errors import ConversationNotFoundError
from loopwright.app.run.message_writes import conversation_name
from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run
from loopwright.app.run.runtime import AppRuntime, build_agent
from loopwright.config import Settings
from loopwright.errors import UserInputError
from loopwright.model.base import ModelError
from loopwright.model.entities import AssistantMessage, ToolMessage, UserMessage
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from loopwright.store.models import Message as MessageRow
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.base import Tool

FC = ["tool-call", "stream-tool-call"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def new_app(db: Database, config: AppConfig) -> str:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "calc", config.model_dump())
        return app.id


def runtime_for(db: Database, model: ScriptedModel, tools: list[Tool] | None = None) -> AppRuntime:
    return AppRuntime(db, Settings(), tools=tools or [add], models={"scripted": model})


async def chat(db: Database, app_id: str, model: ScriptedModel, request: MessageRequest) -> list[WireEvent]:
    """The events of one message through the runtime's entry point."""
    run = await runtime_for(db, model).start(request)
    return [e async for e in run.events()]


def ask(app_id: str, query: str, user: str = "alice", **more: object) -> MessageRequest:
    return MessageRequest(app_id, user, query, **more)  # type: ignore[arg-type]


async def started(
    db: Database, model: ScriptedModel, request: MessageRequest, tools: list[Tool] | None = None
) -> tuple[AppRuntime, Run]:
    """A message's run, started through the runtime's entry point."""
    runtime = runtime_for(db, model, tools)
    return runtime, await runtime.start(request)


async def stop_after(runtime: AppRuntime, run: Run, count: int) -> list[WireEvent]:
    """The run's events, the run stopped as soon as ``count`` have arrived."""
    events: list[WireEvent] = []
    async for event in run.events():
        events.append(event)
        if len(events) == count:
            assert runtime.stop(run.task_id, run.app_id, run.user)
    return events


CONFIG = AppConfig(model="scripted", instruction="You add numbers.", tools=[ToolConfig(name="add")])


async def test_a_message_is_streamed_and_stored(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3}), text="Adding."), Reply.text("It is 5.")], features=FC
    )
    events = await chat(db, app_id, model, ask(app_id, "What is 2 + 3, please tell me?"))
    assert isinstance(events[-1], MessageEnd)
    ids = {e.id for e in events if isinstance(e, AgentThought)}
    conversation_id, message_id = events[0].head.conversation_id, events[0].head.message_id

    async with db.transaction() as s:
        message = await s.get(MessageRow, message_id)
        assert message is not None
        assert message.answer == "Adding.\nIt is 5." and message.status == "normal"
        assert message.message_tokens > 0 and message.answer_tokens > 0
        metrics = json.loads(message.message_metadata or "{}")["metrics"]  # the run's figures, kept
        assert (metrics["rounds"], metrics["tool_calls"], metrics["tool_errors"]) == (2, 1, 0)
        assert metrics["prompt_tokens"] == message.message_tokens
        thoughts = await repo.list_thoughts(s, message_id)
        alice = await repo.get_or_create_end_user(s, app_id, "alice")
        conv = await repo.get_conversation(s, app_id, alice.id, conversation_id)
    assert {t.id for t in thoughts} == ids  # stored rows carry the ids the client saw
    first, second = thoughts
    assert (first.position, first.tool, first.thought) == (1, "add", "Adding.")
    assert json.loads(first.tool_input) == {"add": {"a": 2, "b": 3}}
    assert json.loads(first.observation) == {"add": "5"}
    assert json.loads(first.tool_labels_str) == {"add": {"en_US": "add", "zh_Hans": "add"}}
    assert first.tokens > 0 and second.thought == "It is 5." and second.answer == "It is 5."
    assert conv is not None and conv.name == conversation_name("What is 2 + 3, please tell me?")
    assert conv.name == "What is 2 + 3, pleas…"


async def test_the_next_turn_sees_the_history_and_keeps_the_pinned_config(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel(
        [Reply.tool_calls(("add", {"a": 2, "b": 3})), Reply.text("5"), Reply.text("You asked 2 + 3.")],
        features=FC,
    )
    runtime = runtime_for(db, model)
    run = await runtime.start(ask(app_id, "2 + 3?"))
    first = [e async for e in run.events()]
    async with db.transaction() as s:  # a new config version must not affect the conversation
        await repo.add_config_version(
            s, app_id, AppConfig(model="scripted", instruction="CHANGED").model_dump()
        )
    conv_id = first[0].head.conversation_id
    run = await runtime.start(ask(app_id, "What did I ask?", conversation_id=conv_id))
    second = [e async for e in run.events()]
    assert second[0].head.conversation_id == conv_id
    sent = model.requests[2].messages
    assert sent[0].content == "You add numbers."  # the pinned configuration, not the new version
    kinds = [type(m) for m in sent[1:]]
    assert kinds == [UserMessage, AssistantMessage, ToolMessage, AssistantMessage, UserMessage]
    assert sent[3].content == "5"


async def test_another_users_conversation_does_not_exist(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.text("hi")], features=FC)
    runtime = runtime_for(db, model)
    run = await runtime.start(ask(app_id, "hello"))
    events = [e async for e in run.events()]
    with pytest.raises(ConversationNotFoundError, match="Conversation Not Exists."):
        await runtime.start(ask(app_id, "hi", "mallory", conversation_id=events[0].head.conversation_id))


async def test_a_stopped_run_saves_what_it_did(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    # paced: the stop lands while the run waits for the model's next chunk
    model = ScriptedModel([Reply.text("a long answer " * 20)], features=FC, chunk_size=4, delay=0.05)
    runtime, run = await started(db, model, ask(app_id, "talk"))
    seen = await stop_after(runtime, run, 3)  # thought, then two deltas
    outcome = await run.outcome()
    async with db.transaction() as s:
        message = await s.get(MessageRow, run.head.message_id)
        thoughts = await repo.list_thoughts(s, run.head.message_id)
    assert outcome.status == "stopped" and message is not None and message.status == "stopped"
    assert isinstance(seen[0], AgentThought) and [t.id for t in thoughts] == [seen[0].id]
    assert run.stop_reason == "requested" and run.task is not None and not run.task.cancelled()
    # The stopped round's row keeps the text it streamed (a reader of the history shows it as the answer).
    assert message.answer != "" and thoughts[0].thought == message.answer


async def test_a_failing_model_gives_difys_error_event_and_is_recorded(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.error(ModelError("the model server is down"))], features=FC)
    events = await chat(db, app_id, model, ask(app_id, "hi"))
    error = events[-1]
    assert isinstance(error, ErrorEvent) and isinstance(error.error, ModelError)
    async with db.transaction() as s:
        message = await s.get(MessageRow, error.head.message_id)
    assert message is not None and message.status == "error" and message.error == "the model server is down"


async def test_a_react_plain_text_answer_is_saved(db: Database) -> None:
    app_id = await new_app(db, AppConfig(model="scripted", strategy="react"))
    events = await chat(db, app_id, ScriptedModel(["Paris is the capital."]), ask(app_id, "Capital?"))
    async with db.transaction() as s:
        message = await s.get(MessageRow, events[0].head.message_id)
    assert message is not None and message.answer == "Paris is the capital."  # Dify saves ""


class CountingCallback(AgentCallback):
    """Named by import path in an app config below: counts the tool calls of every run."""

    tools: ClassVar[list[str]] = []

    def on_tool_start(self, event: ToolCallStarted) -> None:
        CountingCallback.tools.append(event.name)


async def test_an_apps_callbacks_by_import_path_see_its_runs(db: Database) -> None:
    CountingCallback.tools.clear()
    config = CONFIG.model_copy(update={"callbacks": ["tests.app.test_messages:CountingCallback"]})
    app_id = await new_app(db, config)
    model = ScriptedModel([Reply.tool_calls(("add", {"a": 2, "b": 3})), Reply.text("5")], features=FC)
    events = await chat(db, app_id, model, ask(app_id, "2+3?"))
    assert isinstance(events[-1], MessageEnd) and CountingCallback.tools == ["add"]


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("tests.app.no_such_module:Thing", "cannot be imported"),
        ("tests.app.test_messages:add", "is not an AgentCallback subclass"),
        ("json:JSONDecoder", "is not an AgentCallback subclass"),
    ],
)
def test_a_callback_path_that_is_not_a_callback_is_refused(path: str, error: str) -> None:
    with pytest.raises(UserInputError, match=error):
        build_agent(AppConfig(callbacks=[path]), ScriptedModel([]), [add])


async def test_an_unknown_tool_in_the_config_is_a_clear_error() -> None:
    with pytest.raises(UserInputError, match="not available: 'search'"):
        build_agent(AppConfig(tools=[ToolConfig(name="search")]), ScriptedModel([]), [add])


async def test_stop_cancels_a_running_tool_and_ends_with_message_end(db: Database) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(n: int) -> str:
        """Takes a long time."""
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "late"

    app_id = await new_app(db, AppConfig(model="scripted", tools=[ToolConfig(name="slow")]))
    model = ScriptedModel([Reply.tool_calls(("slow", {"n": 1})), Reply.text("never")], features=FC)
    runtime = runtime_for(db, model, [slow])
    run = await runtime.start(ask(app_id, "go"))
    events: list[WireEvent] = []

    async def consume() -> None:
        async for event in run.events():
            events.append(event)

    reader = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5)
    assert runtime.stop(run.task_id, app_id, "alice")  # interrupts what the run waits on
    outcome = await asyncio.wait_for(run.outcome(), 5)  # the run takes it as its stop and ends normally
    await asyncio.wait_for(reader, 5)
    assert run.task is not None and not run.task.cancelled()
    assert cancelled.is_set() and outcome.status == "stopped"
    assert isinstance(events[-1], MessageEnd) and outcome.end == events[-1]
    async with db.transaction() as s:
        message = await s.get(MessageRow, run.head.message_id)
        thoughts = await repo.list_thoughts(s, run.head.message_id)
    assert message is not None and message.status == "stopped"
    assert thoughts[0].tool == "slow"  # saved as far as it got


async def test_stop_between_events_ends_the_run_as_stopped(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.text("a long answer " * 20)], features=FC, chunk_size=4, delay=0.05)
    runtime, run = await started(db, model, ask(app_id, "talk"))
    events = await stop_after(runtime, run, 3)
    assert [e.event for e in events][-2:] == ["agent_message", "message_end"]
    assert len(events) == 4
    async with db.transaction() as s:
        message = await s.get(MessageRow, run.head.message_id)
    streamed = "".join(e.answer for e in events if isinstance(e, AgentMessage))
    assert streamed == "a long a"  # two chunks of four characters
    assert message is not None and message.status == "stopped" and message.answer == streamed


async def test_a_cancellation_that_is_not_a_stop_still_saves_and_propagates(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    model = ScriptedModel([Reply.text("slow " * 50)], features=FC, chunk_size=1, delay=0.05)
    _, run = await started(db, model, ask(app_id, "talk"))
    async for event in run.events():
        if isinstance(event, AgentMessage):
            break
    assert run.task is not None
    run.task.cancel()  # the process going down, say: no stop reason
    outcome = await asyncio.wait_for(run.outcome(), 5)
    with pytest.raises(asyncio.CancelledError):
        await run.task
    async with db.transaction() as s:
        message = await s.get(MessageRow, run.head.message_id)
    assert outcome.status == "stopped" and message is not None and message.status == "stopped"
    assert message.answer and ("slow " * 50).startswith(message.answer)  # what had streamed


async def test_nul_characters_from_the_model_are_not_stored(db: Database) -> None:
    app_id = await new_app(db, CONFIG)
    events = await chat(db, app_id, ScriptedModel([Reply.text("a\x00b")], features=FC), ask(app_id, "hi"))
    async with db.transaction() as s:
        message = await s.get(MessageRow, events[0].head.message_id)
    assert message is not None and message.answer == "ab"  # PostgreSQL would refuse "a\x00b"


async def test_a_new_users_message_streams_before_the_end_user_is_found(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import select

    from loopwright.app.lookup import AppLookup
    from loopwright.store.models import Conversation, EndUser

    app_id = await new_app(db, CONFIG)
    gate = asyncio.Event()
    find = AppLookup._find_or_create_user

    async def slow(self: AppLookup, app: str, user: str) -> str:
        await gate.wait()
        return await find(self, app, user)

    monkeypatch.setattr(AppLookup, "_find_or_create_user", slow)
    model = ScriptedModel([Reply.text("Welcome!")], features=FC)
    runtime = runtime_for(db, model)
    run = await asyncio.wait_for(runtime.start(ask(app_id, "hello", "newcomer")), 5)  # no wait for the user
    events = run.events()
    first = await asyncio.wait_for(anext(events), 5)
    assert isinstance(first, AgentThought)  # streaming while the end user is still unknown
    gate.set()
    rest = [e async for e in events]
    assert isinstance(rest[-1], MessageEnd)
    async with db.transaction() as s:
        user = await s.scalar(select(EndUser).where(EndUser.session_id == "newcomer"))
        conversation = await s.get(Conversation, first.head.conversation_id)
        message = await s.get(MessageRow, first.head.message_id)
    assert user is not None and conversation is not None and conversation.end_user_id == user.id
    assert message is not None and message.answer == "Welcome!" and message.status == "normal"
