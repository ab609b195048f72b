"""Built-in tools that need no configuration."""

from loopwright.tools.base import Tool
from loopwright.tools.builtin.calculator import calculator_tool
from loopwright.tools.builtin.current_time import current_time_tool
from loopwright.tools.builtin.web_fetch import web_fetch_tool
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy


def builtin_tools(policy: NetworkPolicy = DEFAULT_POLICY) -> list[Tool]:
    """All built-in tools, fresh instances; ``policy`` is the network allow-list ``web_fetch`` uses."""
    return [calculator_tool(), current_time_tool(), web_fetch_tool(policy)]


__all__ = ["builtin_tools", "calculator_tool", "current_time_tool", "web_fetch_tool"]
