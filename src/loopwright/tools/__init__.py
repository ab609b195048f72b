"""Tools: the Tool type, ``@tool``, the engine that runs them, and built-ins."""

from loopwright.model.entities import ToolExample
from loopwright.tools.base import (
    BlobMessage,
    FileMessage,
    ImageMessage,
    JsonMessage,
    LinkMessage,
    LogMessage,
    ProgressMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolCredentialError,
    ToolError,
    ToolInvokeError,
    ToolOutput,
    ToolParameter,
    ToolParameterValidationError,
    Toolset,
    VariableMessage,
)
from loopwright.tools.engine import ToolEngine, ToolInvokeMeta, ToolResult
from loopwright.tools.function import tool

__all__ = [
    "BlobMessage",
    "FileMessage",
    "ImageMessage",
    "JsonMessage",
    "LinkMessage",
    "LogMessage",
    "ProgressMessage",
    "TextMessage",
    "Tool",
    "ToolContext",
    "ToolCredentialError",
    "ToolEngine",
    "ToolError",
    "ToolExample",
    "ToolInvokeError",
    "ToolInvokeMeta",
    "ToolOutput",
    "ToolParameter",
    "ToolParameterValidationError",
    "ToolResult",
    "Toolset",
    "VariableMessage",
    "tool",
]
