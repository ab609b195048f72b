"""Tools: what a tool is, the messages it yields, its parameters and their casting.

A tool is a small dataclass holding its schema and an ``invoke`` coroutine function; sources of tools
(functions, OpenAPI, MCP, knowledge bases, other apps) build ``Tool`` values instead of subclassing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, runtime_checkable

from loopwright.errors import ToolError as ToolError
from loopwright.model.entities import QuestionCopy, ToolExample, ToolSchema

# --- messages a tool yields -----------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class TextMessage:
    text: str
    type: Literal["text"] = "text"


@dataclass(slots=True, frozen=True)
class JsonMessage:
    data: Any
    suppress_output: bool = False  # shown to the user but not to the model (Dify's suppress_output)
    type: Literal["json"] = "json"


@dataclass(slots=True, frozen=True)
class LinkMessage:
    url: str
    type: Literal["link"] = "link"


@dataclass(slots=True, frozen=True)
class ImageMessage:
    url: str
    mime_type: str | None = None
    type: Literal["image"] = "image"


@dataclass(slots=True, frozen=True)
class BlobMessage:
    data: bytes
    mime_type: str = "application/octet-stream"
    filename: str | None = None
    type: Literal["blob"] = "blob"


@dataclass(slots=True, frozen=True)
class FileMessage:
    url: str
    mime_type: str = "application/octet-stream"
    filename: str | None = None
    type: Literal["file"] = "file"


@dataclass(slots=True, frozen=True)
class VariableMessage:
    name: str
    value: Any
    stream: bool = False
    internal: bool = False  # for the app layer (citations, an inner run's usage), not shown to the model
    type: Literal["variable"] = "variable"


@dataclass(slots=True, frozen=True)
class ProgressMessage:
    """How far a call has got, yielded before its result: ``text`` (what it is doing) and ``fraction``
    (0 to 1, or None when unknown). The run streams it as it comes (a ``ToolProgress`` event) when the
    tool says it reports progress (``Tool.streams_progress``); it is never part of the result."""

    text: str = ""
    fraction: float | None = None
    # what the progress is, for a reader that knows it: a sub-agent's own event (agent.subagent)
    detail: Any = None
    type: Literal["progress"] = "progress"


# Names of internal variables the app layer reads from tool outputs.
RETRIEVER_RESOURCES = "retriever_resources"  # citations of a knowledge retrieval (Dify's fields)
LLM_USAGE = "llm_usage"  # the Usage of a model run inside the tool (an app called as a tool)


@dataclass(slots=True, frozen=True)
class LogMessage:
    label: str
    status: Literal["start", "success", "error"] = "success"
    data: Mapping[str, Any] = field(default_factory=dict)
    type: Literal["log"] = "log"


ToolOutput = (
    TextMessage
    | JsonMessage
    | LinkMessage
    | ImageMessage
    | BlobMessage
    | FileMessage
    | VariableMessage
    | LogMessage
    | ProgressMessage
)
FILE_OUTPUTS = (ImageMessage, BlobMessage, FileMessage)

# --- errors a tool may raise to choose its observation --------------------------------------------


class ToolParameterValidationError(ToolError):
    pass


class ToolInvokeError(ToolError):
    pass


class ToolCredentialError(ToolError):
    pass


# --- parameters -----------------------------------------------------------------------------------

ParameterType = Literal[
    "string",
    "number",
    "integer",
    "boolean",
    "select",
    "secret-input",
    "array",
    "object",
    "any",
    "file",
    "files",
]
_STRINGY = frozenset({"string", "select", "secret-input"})
_JSON_TYPE = {"select": "string", "secret-input": "string", "file": "string", "files": "array"}
_FROM_JSON_TYPE: dict[str, ParameterType] = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "array": "array",
    "object": "object",
}


def schema_parameter_type(schema: Mapping[str, Any]) -> ParameterType:
    """The parameter type of a JSON schema: its ``type`` when that is one plain JSON type, else ``"any"``
    (only a plain single type is cast by the engine; unions and compositions pass through untouched)."""
    kind = schema.get("type")
    return _FROM_JSON_TYPE.get(kind, "any") if isinstance(kind, str) else "any"


@dataclass(slots=True, frozen=True)
class ToolParameter:
    """One parameter. ``form="llm"`` parameters are filled by the model; ``form="form"`` ones come from
    the tool's configured ``form_values`` and are never shown to the model."""

    name: str
    type: ParameterType = "string"
    form: Literal["llm", "form"] = "llm"
    required: bool = False
    description: str = ""
    options: tuple[str, ...] = ()
    default: Any = None
    schema: Mapping[str, Any] | None = None  # a full JSON schema for the model, overriding ``type``

    def json_schema(self) -> dict[str, Any]:
        if self.schema is not None:
            return dict(self.schema)
        prop: dict[str, Any] = {"type": _JSON_TYPE.get(self.type, self.type)}
        if prop["type"] == "any":
            prop = {}
        if self.description:
            prop["description"] = self.description
        if self.options:
            prop["enum"] = list(self.options)
        return prop


def cast_value(param: ToolParameter, value: Any) -> Any:
    """Cast a value to the parameter's declared type the way Dify does (reference §6.1)."""
    kind = param.type
    try:
        if kind in _STRINGY:
            return "" if value is None else str(value)
        if kind == "boolean":
            return _cast_bool(value)
        if kind in ("number", "integer"):
            return _cast_number(value)
        if kind == "array":
            return _cast_json(value, list)
        if kind == "object":
            return _cast_json(value, dict)
        if kind == "files":
            return value if isinstance(value, list) else [value]
        if kind == "file" and isinstance(value, list):
            if len(value) != 1:
                raise ValueError("a single file is expected")
            return value[0]
        return value
    except (TypeError, ValueError) as e:
        raise ToolParameterValidationError(
            f"The tool parameter value {value!r} is not in correct type of {kind}: {e}"
        ) from e


def _cast_bool(value: Any) -> bool:
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "yes", "y", "1"):
            return True
        if low in ("false", "no", "n", "0"):
            return False
    return bool(value)


def _cast_number(value: Any) -> int | float:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return value
    text = str(value).strip()
    return float(text) if "." in text or "e" in text.lower() else int(text)


def _cast_json(value: Any, kind: type) -> Any:
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return [value] if kind is list else {}
        if isinstance(parsed, kind):
            return parsed
    return [value] if kind is list else {}


# --- the tool itself ------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class ToolContext:
    """Who and what a tool call runs for; tools may ignore it."""

    user_id: str = ""
    conversation_id: str | None = None
    app_id: str | None = None
    message_id: str | None = None
    call_depth: int = 0


InvokeFn = Callable[[dict[str, Any], ToolContext], AsyncIterator[ToolOutput]]
# An ``invoke`` function may carry, under this attribute, a coroutine function with the same arguments
# that returns every output at once (``@tool`` functions that are not generators): the engine awaits
# it instead of iterating ``invoke``. A wrapper of ``invoke`` does not have it, so it is never bypassed.
DIRECT_CALL = "direct_call"
DirectCallFn = Callable[[dict[str, Any], ToolContext], Awaitable[list[ToolOutput]]]


@dataclass(frozen=True)
class Tool:
    """A named, described, typed callable the agent can use.

    ``invoke(args, ctx)`` is an async iterator of tool outputs. ``form_values`` are configured values
    for ``form`` parameters; they override whatever the model sends for the same name (as in Dify).
    ``timeout`` (seconds) and ``cache_ttl`` (seconds, ``None`` = no cache) are per-tool settings the
    engine honours; ``None`` timeout means the engine's default.
    """

    name: str
    description: str
    parameters: tuple[ToolParameter, ...]
    invoke: InvokeFn
    form_values: Mapping[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    cache_ttl: float | None = None
    label: str = ""
    # A call waits for a person's approval before it runs (agent.approvals)
    requires_approval: bool = False
    # Running a call twice does no harm (durable runs: a call cut by a crash is run again only then)
    idempotent: bool = True
    # The invoke function validates and coerces its own arguments (``@tool`` does, with pydantic), so
    # the engine's Dify-style casting is skipped.
    validates_arguments: bool = False
    # Worked examples of the tool's use, shown to small models as few-shot examples.
    examples: tuple[ToolExample, ...] = ()
    # String parameters whose value is best copied from the user's words (ToolSchema.from_question).
    from_question: Mapping[str, QuestionCopy] = field(default_factory=dict)
    # The tool yields ProgressMessages before its result: its calls stream them (tools that do not
    # say so are run without the means to, at no cost)
    streams_progress: bool = False
    _schema: ToolSchema | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_schema", self._build_schema())

    @property
    def schema(self) -> ToolSchema:
        assert self._schema is not None
        return self._schema

    @property
    def llm_parameters(self) -> list[ToolParameter]:
        return [p for p in self.parameters if p.form == "llm" and p.type not in ("file", "files")]

    def configure(self, **form_values: Any) -> Tool:
        """A copy of this tool with ``form`` parameter values set."""
        return replace(self, form_values={**self.form_values, **form_values}, _schema=None)

    def _build_schema(self) -> ToolSchema:
        props: dict[str, Any] = {}
        required: list[str] = []
        for p in self.llm_parameters:
            props[p.name] = p.json_schema()
            if p.required and p.name not in required:
                required.append(p.name)
        params = {"type": "object", "properties": props, "required": required}
        return ToolSchema(self.name, self.description, params, tuple(self.examples), dict(self.from_question))


@runtime_checkable
class Toolset(Protocol):
    """A source of several tools (an MCP server, an OpenAPI spec, …) that an agent accepts as one item."""

    async def get_tools(self) -> Sequence[Tool]: ...


ToolLike = Tool | Toolset
