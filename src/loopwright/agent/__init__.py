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
    PlanCreated,
    PlanStep,
    PlanStepFinished,
    PlanStepStarted,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolCallFinished,
    ToolCallRecord,
    ToolCallStarted,
    ToolProgress,
)
from loopwright.agent.handoffs import HandoffStarted, handoff_tool, stream_with_handoffs
from loopwright.agent.metrics import RunMetrics
from loopwright.agent.subagent import agent_tool

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
    "HandoffStarted",
    "Interruption",
    "LoggingCallback",
    "PendingCall",
    "PlanCreated",
    "PlanStep",
    "PlanStepFinished",
    "PlanStepStarted",
    "RoundFinished",
    "RoundStarted",
    "RunMetrics",
    "TextDelta",
    "agent_tool",
    "handoff_tool",
    "stream_with_handoffs",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallStarted",
    "ToolProgress",
]
