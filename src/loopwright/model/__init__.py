"""Models: entities, the Model protocol, and providers."""

from loopwright.model.base import (
    Model,
    ModelError,
    ReactPromptModel,
    estimate_message_tokens,
    estimate_tokens,
)
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
from loopwright.model.settings import (
    ModelSettings,
    merge_model_settings,
    model_settings_from_params,
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
    "ModelSettings",
    "PromptMessage",
    "ReactPromptModel",
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
    "merge_model_settings",
    "model_settings_from_params",
]
