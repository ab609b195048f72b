"""Built-in tools that need no configuration."""

from loopwright.tools.base import Tool
from loopwright.tools.builtin.calculator import calculator_tool
from loopwright.tools.builtin.current_time import current_time_tool


def builtin_tools() -> list[Tool]:
    """All built-in tools, fresh instances."""
    return [calculator_tool(), current_time_tool()]


__all__ = ["builtin_tools", "calculator_tool", "current_time_tool"]
