"""The agent: strategies, the shared loop, events, the ReAct parser and prompts."""

from loopwright.agent.agent import Agent
from loopwright.agent.approvals import ApprovalDecision, Interruption, PendingCall
from loopwright.agent.budget import Budget, BudgetExceededError
from loopwright.agent.callbacks import AgentCallback, LoggingCallback
from loopwright.agent.errors import AgentError, AgentMaxIterationError, AgentRepeatedToolCallError
from loopwright.agent.events import (
    AgentEvent,
    AgentResult,
    ApprovalRequired,
    Finished,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
)
from loopwright.agent.metrics import RunMetrics

__all__ = [
    "Agent",
    "AgentCallback",
    "AgentError",
    "AgentEvent",
    "AgentMaxIterationError",
    "AgentRepeatedToolCallError",
    "AgentResult",
    "ApprovalDecision",
    "ApprovalRequired",
    "Budget",
    "BudgetExceededError",
    "Finished",
    "Interruption",
    "LoggingCallback",
    "PendingCall",
    "RoundFinished",
    "RoundStarted",
    "RunMetrics",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallStarted",
]
