"""loopwright: a standalone, Dify-compatible agent runtime."""

from loopwright.agent import (
    Agent,
    AgentCallback,
    AgentError,
    AgentEvent,
    AgentMaxIterationError,
    AgentRepeatedToolCallError,
    AgentResult,
)
from loopwright.errors import LoopwrightError
from loopwright.tools import Tool, ToolContext, tool

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentCallback",
    "AgentError",
    "AgentEvent",
    "AgentMaxIterationError",
    "AgentRepeatedToolCallError",
    "AgentResult",
    "LoopwrightError",
    "Tool",
    "ToolContext",
    "__version__",
    "tool",
]
