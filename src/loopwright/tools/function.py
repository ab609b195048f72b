"""``@tool``: a Tool from a typed Python function (sync or async) and its docstring."""

from __future__ import annotations

import inspect
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Annotated, Any, get_type_hints, overload

import docstring_parser
import pydantic

from loopwright._threads import run_sync
from loopwright.model.entities import QuestionCopy, ToolExample
from loopwright.tools.base import (
    DIRECT_CALL,
    FILE_OUTPUTS,
    BlobMessage,
    JsonMessage,
    LinkMessage,
    LogMessage,
    ProgressMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolOutput,
    ToolParameter,
    ToolParameterValidationError,
    VariableMessage,
    schema_parameter_type,
)

_OUTPUT_TYPES = (
    TextMessage,
    JsonMessage,
    LinkMessage,
    LogMessage,
    VariableMessage,
    ProgressMessage,
    *FILE_OUTPUTS,
)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    cache_ttl: float | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
    examples: Sequence[ToolExample] = (),
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    cache_ttl: float | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
    examples: Sequence[ToolExample] = (),
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` from a function. Its parameters' type hints become the JSON schema the
    model sees, the docstring's first paragraph the description, and its parameter section (Google,
    NumPy or Sphinx style) the parameter descriptions. A parameter annotated ``ToolContext``
    receives the call's context. Sync functions run in a worker thread, never on the event loop.
    ``requires_approval``: a call waits for a person's approval (agent.approvals). ``idempotent=False``:
    a durable run never runs a call of it again after a crash cut it (docs/reliability.md). ``examples``:
    worked examples of the tool's use (``ToolExample``), which prompts for small models show."""

    def build(f: Callable[..., Any]) -> Tool:
        return function_tool(
            f,
            name=name,
            description=description,
            timeout=timeout,
            cache_ttl=cache_ttl,
            requires_approval=requires_approval,
            idempotent=idempotent,
            examples=examples,
        )

    return build(fn) if fn is not None else build


def function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    cache_ttl: float | None = None,
    requires_approval: bool = False,
    idempotent: bool = True,
    examples: Sequence[ToolExample] = (),
    from_question: Mapping[str, QuestionCopy] | None = None,
) -> Tool:
    doc = inspect.getdoc(fn) or ""
    summary, arg_docs = _parse_docstring(doc)
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    ctx_param: str | None = None
    for pname, p in inspect.signature(fn).parameters.items():
        hint = hints.get(pname, Any)
        if hint is ToolContext:
            ctx_param = pname
            continue
        default = ... if p.default is inspect.Parameter.empty else p.default
        # Annotated (not a bare Field default) keeps constraints the hint itself carries.
        doc = pydantic.Field(description=arg_docs.get(pname) or None)
        fields[pname] = (Annotated[hint, doc], default)
    args_model = pydantic.create_model(f"{fn.__name__}_arguments", **fields)
    schema = _inline_refs(args_model.model_json_schema())
    required = set(schema.get("required", ()))
    params = tuple(
        ToolParameter(
            name=pname,
            type=schema_parameter_type(prop),
            required=pname in required,
            description=prop.get("description", ""),
            schema=prop,
        )
        for pname, prop in schema.get("properties", {}).items()
    )
    invoke = _make_invoke(fn, args_model, ctx_param)
    return Tool(
        name=name or fn.__name__,
        description=description or summary,
        parameters=params,
        invoke=invoke,
        timeout=timeout,
        cache_ttl=cache_ttl,
        requires_approval=requires_approval,
        idempotent=idempotent,
        validates_arguments=True,
        examples=tuple(examples),
        from_question=dict(from_question or {}),
        # an async generator may yield ProgressMessage before its result
        streams_progress=inspect.isasyncgenfunction(fn),
    )


def _make_invoke(
    fn: Callable[..., Any], args_model: type[pydantic.BaseModel], ctx_param: str | None
) -> Callable[[dict[str, Any], ToolContext], AsyncIterator[ToolOutput]]:
    validate = args_model.__pydantic_validator__.validate_python
    is_async_gen = inspect.isasyncgenfunction(fn)
    is_coro = inspect.iscoroutinefunction(fn)

    def arguments(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        try:
            kwargs: dict[str, Any] = validate(args).__dict__
        except pydantic.ValidationError as e:
            raise ToolParameterValidationError(_short_validation_error(e)) from None
        if ctx_param is not None:
            kwargs = {**kwargs, ctx_param: ctx}
        return kwargs

    async def call(args: dict[str, Any], ctx: ToolContext) -> list[ToolOutput]:
        kwargs = arguments(args, ctx)
        result = await fn(**kwargs) if is_coro else await run_sync(fn, **kwargs)
        return to_outputs(result)

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        if not is_async_gen:
            for out in await call(args, ctx):
                yield out
            return
        async for item in fn(**arguments(args, ctx)):
            for out in to_outputs(item):
                yield out

    if not is_async_gen:
        # The engine awaits this instead of iterating ``invoke``: one async generator less per call.
        setattr(invoke, DIRECT_CALL, call)  # noqa: B010 - an attribute of a function
    return invoke


def to_outputs(result: Any) -> list[ToolOutput]:
    """Turn a function's return value into tool outputs: strings become text, dicts and lists JSON,
    bytes a blob, tool outputs pass through, ``None`` nothing."""
    if result is None:
        return []
    if isinstance(result, _OUTPUT_TYPES):
        return [result]
    if isinstance(result, str):
        return [TextMessage(result)]
    if isinstance(result, int | float):  # before the pydantic check below, which is slow to miss
        return [TextMessage(str(result))]
    if isinstance(result, bytes):
        return [BlobMessage(result)]
    if isinstance(result, list) and result and all(isinstance(r, _OUTPUT_TYPES) for r in result):
        return list(result)
    if isinstance(result, dict | list | tuple):
        return [JsonMessage(result)]
    if isinstance(result, pydantic.BaseModel):
        return [JsonMessage(result.model_dump(mode="json"))]
    return [TextMessage(str(result))]


def _short_validation_error(e: pydantic.ValidationError) -> str:
    parts = []
    for err in e.errors(include_url=False):
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The summary (the first paragraph, on one line) and the parameter descriptions of a Google,
    NumPy or Sphinx style docstring (the style is detected)."""
    if not doc:
        return "", {}
    try:
        parsed = docstring_parser.parse(doc)
    except docstring_parser.ParseError:  # no style reads it: the first paragraph is the summary
        return " ".join(re.split(r"\n\s*\n", doc)[0].split()), {}
    summary = re.split(r"\n\s*\n", parsed.description or "")[0]
    args = {p.arg_name: " ".join(p.description.split()) for p in parsed.params if p.description}
    return " ".join(summary.split()), args


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline pydantic's ``$defs`` references and drop its ``title`` noise: models read plain schemas
    best, and some providers reject ``$ref``. A model that contains itself (a tree node with child
    nodes) is cut at the repeat, as OpenAPI schemas are: the inner one is a plain object (the
    arguments are still validated against the full model)."""
    defs = schema.get("$defs", {})

    def walk(node: Any, expanding: frozenset[str]) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                name = node["$ref"].rsplit("/", 1)[-1]
                target = defs.get(name, {})
                rest = {k: v for k, v in node.items() if k != "$ref"}
                if name in expanding:
                    cut = {"type": "object"} if target.get("type") == "object" else {}
                    return walk({**cut, **rest}, expanding)
                return walk({**target, **rest}, expanding | {name})
            out = {
                k: walk(v, expanding) for k, v in node.items() if k not in ("title", "$defs", "properties")
            }
            if "properties" in node:  # property names are data, never schema keywords to drop
                out["properties"] = {k: walk(v, expanding) for k, v in node["properties"].items()}
            return out
        if isinstance(node, list):
            return [walk(x, expanding) for x in node]
        return node

    out: dict[str, Any] = walk(schema, frozenset())
    return out
