"""Model-side entities: prompt messages, tool schemas and calls, stream chunks, usage, features.

These are plain slotted dataclasses rather than pydantic models: they are built on the agent's hot path
(several per chunk), and nothing here needs validation — providers construct them from trusted data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal


class ModelFeature(StrEnum):
    """Capabilities a model declares, with Dify's string values."""

    TOOL_CALL = "tool-call"
    MULTI_TOOL_CALL = "multi-tool-call"
    STREAM_TOOL_CALL = "stream-tool-call"
    AGENT_THOUGHT = "agent-thought"
    VISION = "vision"
    DOCUMENT = "document"
    VIDEO = "video"
    AUDIO = "audio"
    STRUCTURED_OUTPUT = "structured-output"


TOOL_CALL_FEATURES = frozenset(
    {ModelFeature.TOOL_CALL, ModelFeature.MULTI_TOOL_CALL, ModelFeature.STREAM_TOOL_CALL}
)


class ModelMode(StrEnum):
    CHAT = "chat"
    COMPLETION = "completion"


# --- content parts of a user message -------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True, frozen=True)
class ImagePart:
    """An image by URL (http(s) or a data: URL)."""

    url: str
    detail: Literal["low", "high", "auto"] = "low"
    mime_type: str | None = None
    type: Literal["image"] = "image"


@dataclass(slots=True, frozen=True)
class FilePart:
    """A non-image file (document, audio, video) by URL."""

    url: str
    mime_type: str = "application/octet-stream"
    filename: str | None = None
    type: Literal["file"] = "file"


ContentPart = TextPart | ImagePart | FilePart


# --- prompt messages ------------------------------------------------------------------------------


@dataclass(slots=True)
class ToolCall:
    """A complete tool call as the model requested it; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(slots=True)
class SystemMessage:
    content: str
    role: Literal["system"] = "system"


@dataclass(slots=True)
class UserMessage:
    content: str | list[ContentPart]
    role: Literal["user"] = "user"

    @property
    def text(self) -> str:
        return content_text(self.content)


@dataclass(slots=True)
class AssistantMessage:
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    role: Literal["assistant"] = "assistant"


@dataclass(slots=True)
class ToolMessage:
    """The result of one tool call, matched to it by ``tool_call_id``."""

    content: str
    tool_call_id: str
    name: str = ""
    role: Literal["tool"] = "tool"


PromptMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage


def content_text(content: str | list[ContentPart]) -> str:
    """The text of a message's content; non-text parts are left out."""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


# --- tools as the model sees them -----------------------------------------------------------------

# How a parameter is taken from the user's words (ToolSchema.from_question)
QuestionCopy = Literal["clause", "phrase", "expression", "place"]


@dataclass(slots=True, frozen=True)
class ToolExample:
    """A worked example of a tool's use, written by the tool's author: a question, the arguments
    that answer it, what the tool returns for them and an answer that states it. Small models are
    shown these as few-shot examples (they follow examples better than descriptions); they never
    reach a provider's tool API."""

    question: str
    arguments: dict[str, Any]
    result: str
    answer: str


@dataclass(slots=True, frozen=True)
class ToolSchema:
    """A tool as sent to the model: name, description and JSON-Schema parameters (and the author's
    worked examples, for prompts that show them; ``to_dict`` leaves them out)."""

    name: str
    description: str
    parameters: dict[str, Any]
    examples: tuple[ToolExample, ...] = ()
    # String parameters whose value is best copied from the user's words: small models copy a part
    # of the question into them on their first try — "clause": a whole clause (a calculation as
    # stated), "phrase": the last words of one (a place), "expression": a clause that states a
    # calculation, or for a word problem ("3 boxes of 48 eggs") an expression the model writes over
    # the question's numbers; "place": the time zone a place named in the question is in (its IANA
    # name, loopwright.zones), or the last words of a clause when it names none.
    from_question: dict[str, QuestionCopy] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


# --- streaming ------------------------------------------------------------------------------------


@dataclass(slots=True)
class ToolCallDelta:
    """A fragment of a streamed tool call. Fragments with the same ``index`` belong to one call;
    ``id`` and ``name`` usually come in the first fragment, ``arguments`` is appended."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


_ZERO = Decimal(0)
_PRICE_UNIT = Decimal("0.001")


@dataclass(slots=True)
class Usage:
    """Token usage and price of one or more model calls (Dify's LLMUsage fields)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    prompt_unit_price: Decimal = _ZERO
    prompt_price_unit: Decimal = _PRICE_UNIT
    prompt_price: Decimal = _ZERO
    completion_unit_price: Decimal = _ZERO
    completion_price_unit: Decimal = _PRICE_UNIT
    completion_price: Decimal = _ZERO
    total_price: Decimal = _ZERO
    currency: str = "USD"
    latency: float = 0.0

    def plus(self, other: Usage | None) -> Usage:
        """A new Usage that adds ``other``'s counts, prices and latency. Neither operand is changed; unit
        prices and currency come from the first operand that has any (as Dify's accumulation)."""
        if other is None:
            return Usage(*_fields(self))
        first = self if (self.total_tokens or self.latency) else other
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            prompt_unit_price=first.prompt_unit_price,
            prompt_price_unit=first.prompt_price_unit,
            prompt_price=self.prompt_price + other.prompt_price,
            completion_unit_price=first.completion_unit_price,
            completion_price_unit=first.completion_price_unit,
            completion_price=self.completion_price + other.completion_price,
            total_price=self.total_price + other.total_price,
            currency=first.currency,
            latency=self.latency + other.latency,
        )

    def with_latency(self, latency: float) -> Usage:
        """A copy with ``latency`` set (cheaper than ``dataclasses.replace`` on the hot path)."""
        copy = Usage(*_fields(self))
        copy.latency = latency
        return copy

    def to_dict(self) -> dict[str, Any]:
        """Dify's wire shape: prices as decimal strings."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "prompt_unit_price": str(self.prompt_unit_price),
            "prompt_price_unit": str(self.prompt_price_unit),
            "prompt_price": str(self.prompt_price),
            "completion_tokens": self.completion_tokens,
            "completion_unit_price": str(self.completion_unit_price),
            "completion_price_unit": str(self.completion_price_unit),
            "completion_price": str(self.completion_price),
            "total_tokens": self.total_tokens,
            "total_price": str(self.total_price),
            "currency": self.currency,
            "latency": self.latency,
        }


def _fields(u: Usage) -> tuple[Any, ...]:
    return (
        u.prompt_tokens,
        u.completion_tokens,
        u.total_tokens,
        u.prompt_unit_price,
        u.prompt_price_unit,
        u.prompt_price,
        u.completion_unit_price,
        u.completion_price_unit,
        u.completion_price,
        u.total_price,
        u.currency,
        u.latency,
    )


@dataclass(slots=True)
class LLMChunk:
    """One streamed piece of a model reply: text, tool-call fragments, and usage (usually last)."""

    text: str = ""
    tool_calls: list[ToolCallDelta] | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
