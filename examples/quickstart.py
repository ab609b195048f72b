"""An agent answers a question with a tool call, streaming what it does.

Until the model providers land this runs on the scripted model (no network, no key): it replays a
function-calling reply that calls the built-in calculator, then the answer.
"""

import asyncio

from loopwright import Agent
from loopwright.agent import TextDelta, ToolCallFinished, ToolCallStarted
from loopwright.testing import Reply, ScriptedModel
from loopwright.tools.builtin import builtin_tools


async def main() -> None:
    model = ScriptedModel(
        [
            Reply.tool_calls(("calculator", {"expression": "17 * 23"}), text="I'll use the calculator.\n"),
            Reply.text("17 * 23 = 391."),
        ],
        features=["tool-call", "stream-tool-call"],
        delay=0.01,
    )
    agent = Agent(model=model, tools=builtin_tools(), instruction="You are a careful assistant.")
    question = "Use the calculator to compute 17 * 23."
    print(f"? {question}")
    async for event in agent.stream(question):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        elif isinstance(event, ToolCallStarted):
            print(f"\n→ {event.name}({event.arguments})")
        elif isinstance(event, ToolCallFinished):
            print(f"← {event.observation}  [{event.meta.time_cost * 1000:.1f} ms]")
        elif event.type == "finished":
            usage = event.result.usage
            print(f"\n\n{event.result.rounds} rounds, {usage.total_tokens} tokens")


if __name__ == "__main__":
    asyncio.run(main())
