"""The agent: strategies, the shared loop, events, the ReAct parser and prompts."""

from loopwright.agent.agent import Agent
from loopwright.agent.errors import AgentError, AgentMaxIterationError, AgentRepeatedToolCallError
from loopwright.agent.events import (
    AgentEvent,
    AgentResult,
    Finished,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
)

__all__ = [
    "Agent",
    "AgentError",
    "AgentEvent",
    "AgentMaxIterationError",
    "AgentRepeatedToolCallError",
    "AgentResult",
    "Finished",
    "RoundFinished",
    "RoundStarted",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallStarted",
]
