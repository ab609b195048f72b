"""The same run with the peer frameworks, when they are installed (``pip install openai-agents
smolagents``; neither is a loopwright dependency): an agent built per run (or reused), 2 model calls
from an instant fake model, 1 tool call (openai-agents: an async tool; smolagents runs tools
synchronously, and answers through its final_answer tool).
Each returns per-run µs, or None when its package is missing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

RUNS = 300
WARM_UP = 30


async def openai_agents_us(built_per_run: bool = True) -> list[float] | None:
    try:
        from agents import Agent, Runner, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from agents.usage import Usage
        from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText
    except ImportError:
        return None
    set_tracing_disabled(True)

    @function_tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self) -> None:
            self.turn = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            self.turn += 1
            if self.turn % 2:
                call = ResponseFunctionToolCall(
                    id="fc_1",
                    call_id="call_1",
                    name="add",
                    arguments='{"a": 2, "b": 3}',
                    type="function_call",
                )
                output: list[Any] = [call]
            else:
                text = ResponseOutputText(text="The answer is 5.", type="output_text", annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="msg_1", content=[text], role="assistant", status="completed", type="message"
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    model = Scripted()
    kept = Agent(name="calc", instructions="You are a calculator.", tools=[add], model=model)

    async def once() -> None:
        agent = Agent(name="calc", instructions="You are a calculator.", tools=[add], model=model)
        result = await Runner.run(agent if built_per_run else kept, "What is 2 + 3?")
        assert result.final_output == "The answer is 5.", result.final_output

    return await _timed(once)


async def smolagents_us(built_per_run: bool = True) -> list[float] | None:
    try:
        from smolagents import ToolCallingAgent, tool
        from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, Model
    except ImportError:
        return None

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Args:
            a: The first integer.
            b: The second integer.
        """
        return a + b

    class Scripted(Model):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__(model_id="scripted")
            self.turn = 0

        def generate(self, messages: Any, *args: Any, **kwargs: Any) -> ChatMessage:
            self.turn += 1
            name, arguments = (
                ("add", {"a": 2, "b": 3}) if self.turn % 2 else ("final_answer", {"answer": "5"})
            )
            call = ChatMessageToolCall(
                id=f"call_{self.turn}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            return ChatMessage(role="assistant", content=None, tool_calls=[call])

    model = Scripted()
    kept = ToolCallingAgent(tools=[add], model=model, verbosity_level=0)

    async def once() -> None:
        agent = ToolCallingAgent(tools=[add], model=model, verbosity_level=0) if built_per_run else kept
        assert str(agent.run("What is 2 + 3?")) == "5"  # a new task each time (reset=True)

    return await _timed(once)


async def _timed(once: Any) -> list[float]:
    for _ in range(WARM_UP):
        await once()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        await once()
        times.append((time.perf_counter() - t0) * 1e6)
    return times


if __name__ == "__main__":
    import statistics

    for fn in (openai_agents_us, smolagents_us):
        for built in (True, False):
            t = asyncio.run(fn(built))
            print(fn.__name__, built, None if t is None else round(statistics.median(t), 1))
