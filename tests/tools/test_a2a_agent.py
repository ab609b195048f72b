"""The A2A tool against the A2A project's own server (the a2a-sdk's JSON-RPC routes and request
handler on a real server on 127.0.0.1, allow-listed): the tool is made from its card, a call is its
answer, the calls of one conversation share the agent's context, and a failed task is the call's error."""

from __future__ import annotations

import pytest
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as a2a
from starlette.applications import Starlette

from loopwright.tools.a2a import A2AAgent
from loopwright.tools.base import TextMessage, ToolContext, ToolInvokeError
from loopwright.tools.net import NetworkPolicy
from tests.live_server import serving

LOOPBACK = NetworkPolicy.from_strings(["127.0.0.1"])


class Echo(AgentExecutor):
    """Answers "You asked: …" (and fails on "fail"), noting each task's context."""

    def __init__(self) -> None:
        self.contexts: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        self.contexts.append(context.context_id)
        if context.current_task is None:  # a new task: the handler wants it first
            state = a2a.TaskStatus(state=a2a.TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(
                a2a.Task(id=context.task_id, context_id=context.context_id, status=state)
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        asked = context.get_user_input()
        if asked == "fail":
            await updater.failed(updater.new_agent_message([a2a.Part(text="no such thing")]))
            return
        await updater.add_artifact([a2a.Part(text=f"You asked: {asked}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def echo_server(executor: Echo, where: dict[str, str]) -> Starlette:
    card = a2a.AgentCard(
        name="Echo Desk",
        description="Repeats what it is asked.",
        version="1",
        supported_interfaces=[
            a2a.AgentInterface(url="http://unknown/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=a2a.AgentCapabilities(streaming=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[a2a.AgentSkill(id="echo", name="echo", description="Echoes.", tags=["echo"])],
    )

    async def with_url(card: a2a.AgentCard) -> a2a.AgentCard:
        card.supported_interfaces[0].url = where["url"] + "/"
        return card

    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card, card_modifier=with_url), *create_jsonrpc_routes(handler, "/")]
    return Starlette(routes=routes)


async def ask(agent: A2AAgent, query: str, conversation: str) -> str:
    tool = await agent.tool()
    outputs = [o async for o in tool.invoke({"query": query}, ToolContext(conversation_id=conversation))]
    return "".join(o.text for o in outputs if isinstance(o, TextMessage))


async def test_the_tool_speaks_to_the_a2a_projects_own_server() -> None:
    executor, where = Echo(), {}
    async with serving(echo_server(executor, where)) as url:
        where["url"] = url
        agent = A2AAgent(url, policy=LOOPBACK)
        [tool] = await agent.get_tools()
        first = await ask(agent, "the time", "conv-1")
        second = await ask(agent, "the date", "conv-1")
        other = await ask(agent, "the place", "conv-2")
        with pytest.raises(ToolInvokeError, match="ended failed: no such thing"):
            await ask(agent, "fail", "conv-3")
    assert tool.name == "echo_desk" and tool.label == "Echo Desk"
    assert tool.description == "Repeats what it is asked. Skills: echo."
    assert (first, second, other) == ("You asked: the time", "You asked: the date", "You asked: the place")
    assert executor.contexts[0] == executor.contexts[1] != executor.contexts[2]


async def test_the_token_goes_only_to_the_cards_origin() -> None:
    executor, where = Echo(), {}
    async with serving(echo_server(executor, where)) as url:
        where["url"] = url.replace("127.0.0.1", "localhost")  # the card names another origin
        agent = A2AAgent(url, token="secret", policy=LOOPBACK)
        with pytest.raises(ToolInvokeError, match="sent to the card's origin only"):
            await agent.tool()
    assert executor.contexts == []  # nothing was sent
