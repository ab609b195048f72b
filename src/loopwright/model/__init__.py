"""Models: entities, the Model protocol, and providers."""

from loopwright.model.base import Model, ModelError, estimate_message_tokens, estimate_tokens
from loopwright.model.entities import (
    AssistantMessage,
    ContentPart,
    FilePart,
    ImagePart,
    LLMChunk,
    ModelFeature,
    ModelMode,
    PromptMessage,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolCallDelta,
    ToolMessage,
    ToolSchema,
    Usage,
    UserMessage,
)

__all__ = [
    "AssistantMessage",
    "ContentPart",
    "FilePart",
    "ImagePart",
    "LLMChunk",
    "Model",
    "ModelError",
    "ModelFeature",
    "ModelMode",
    "PromptMessage",
    "SystemMessage",
    "TextPart",
    "ToolCall",
    "ToolCallDelta",
    "ToolMessage",
    "ToolSchema",
    "Usage",
    "UserMessage",
    "estimate_message_tokens",
    "estimate_tokens",
]
