"""Errors that end an agent run, with Dify's messages where Dify has one."""

from loopwright.errors import AgentError

__all__ = ["AgentError", "AgentMaxIterationError", "AgentRepeatedToolCallError"]


class AgentMaxIterationError(AgentError):
    def __init__(self, max_iteration: int) -> None:
        self.max_iteration = max_iteration
        super().__init__(
            f"Agent exceeded the maximum iteration limit of {max_iteration}. "
            "The agent was unable to complete the task within the allowed number of iterations."
        )


class AgentRepeatedToolCallError(AgentError):
    def __init__(self, tool_name: str, times: int) -> None:
        self.tool_name = tool_name
        self.times = times
        super().__init__(
            f"Agent called tool '{tool_name}' {times} times in a row with the same arguments; "
            "the run was stopped to avoid an endless loop."
        )
