"""Structured output: the final answer as a typed value checked against a JSON Schema.

``Agent(output_type=...)`` takes a pydantic model, a dataclass, a ``TypedDict`` (anything pydantic's
``TypeAdapter`` takes) or a raw JSON Schema (a mapping). :func:`output_spec` turns it into an
:class:`OutputSpec`: the schema the model is shown, and ``check(text)`` giving the typed value or the
validation errors. How the model is asked for it depends on the strategy (see the loop): function
calling offers a dedicated output tool (:data:`OUTPUT_TOOL`), ReAct validates the Final Answer's
JSON, and the embedded model's grammar is generated from the schema so its answer always parses.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from loopwright.model.entities import ToolSchema

OUTPUT_TOOL = "final_result"
WRAPPED_KEY = "response"  # a schema that is not an object travels as {"response": <value>}
_FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
MAX_ERRORS = 8


@dataclass(frozen=True)
class OutputSpec:
    """What a run's final answer must be. ``schema`` is the JSON Schema the model sees."""

    schema: dict[str, Any]
    adapter: pydantic.TypeAdapter[Any] | None = None  # None: a raw JSON Schema, checked with jsonschema
    _validator: Any = field(default=None, repr=False, compare=False)

    @property
    def wrapped(self) -> bool:
        """Whether the output tool's arguments hold the value under :data:`WRAPPED_KEY` (tool
        arguments are always an object)."""
        return self.schema.get("type") != "object"

    @property
    def tool_schema(self) -> ToolSchema:
        params = self.schema
        if self.wrapped:
            params = {"type": "object", "properties": {WRAPPED_KEY: self.schema}, "required": [WRAPPED_KEY]}
        return ToolSchema(OUTPUT_TOOL, "Give your final answer (call this once you have it).", params)

    def instruction(self, react: bool) -> str:
        """What the prompt says about the answer's form."""
        schema = json.dumps(self.schema, ensure_ascii=False, separators=(",", ":"))
        if react:
            return (
                "Your Final Answer's action_input must be a JSON value that follows this JSON Schema, "
                f"and nothing else: {schema}"
            )
        return (
            f"When you have the answer, call the {OUTPUT_TOOL} tool with it (its arguments follow the "
            "answer's JSON Schema); do not answer in plain text."
        )

    def answer_of_tool(self, arguments: dict[str, Any] | str) -> str:
        """The answer text an output tool call carries (the JSON the model wrote, unwrapped)."""
        if isinstance(arguments, str):
            return arguments
        value = arguments.get(WRAPPED_KEY) if self.wrapped and WRAPPED_KEY in arguments else arguments
        return json.dumps(value, ensure_ascii=False)

    def check(self, text: str) -> tuple[Any, str, list[str]]:
        """``(value, json_text, errors)``: the typed value and its JSON text when ``text`` holds JSON
        that follows the schema (errors empty), else the errors (value None, text unchanged)."""
        match = _FENCE.match(text)
        raw = match.group(1) if match else text.strip()
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as e:
            return None, text, [f"the answer is not valid JSON ({e.msg} at position {e.pos})"]
        if self.adapter is not None:
            try:
                value = self.adapter.validate_python(data)
            except pydantic.ValidationError as e:
                return None, text, [_pydantic_error(err) for err in e.errors(include_url=False)][:MAX_ERRORS]
            return value, json.dumps(data, ensure_ascii=False), []
        errors = [_schema_error(err) for err in self._validator.iter_errors(data)][:MAX_ERRORS]
        if errors:
            return None, text, errors
        return data, json.dumps(data, ensure_ascii=False), []


def output_spec(output_type: Any) -> OutputSpec:
    """The spec of an ``output_type`` (see the module's docstring). Raises ``TypeError`` for a type
    pydantic cannot describe and ``ValueError`` for an invalid JSON Schema."""
    if isinstance(output_type, OutputSpec):
        return output_type
    if isinstance(output_type, Mapping):
        # only when a raw schema is used (jsonschema comes with openapi-spec-validator; untyped)
        jsonschema: Any = importlib.import_module("jsonschema")
        schema = dict(output_type)
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise ValueError(f"not a valid JSON Schema: {e.message}") from None
        return OutputSpec(schema, None, cls(schema))
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(output_type)
        schema = adapter.json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError) as e:
        raise TypeError(f"output_type {output_type!r} cannot be described as a JSON Schema: {e}") from None
    return OutputSpec(_inline_defs(schema), adapter)


def output_note(errors: list[str]) -> str:
    """What the model is told after an answer that does not follow the schema."""
    listed = "; ".join(errors)
    return f"Your answer does not follow the required JSON Schema: {listed}. Give the corrected answer."


def _pydantic_error(err: Any) -> str:
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else str(err["msg"])


def _schema_error(err: Any) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    return f"{where}: {err.message}" if where else str(err.message)


def _inline_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with local ``$defs`` references replaced by what they name (models, grammars and
    small providers understand an inlined schema better); a recursive one is left as it is."""
    defs = schema.get("$defs")
    if not defs:
        return schema

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(x, seen) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            if name in seen or name not in defs:
                raise RecursionError(name)
            return resolve(defs[name], seen | {name})
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    try:
        out: dict[str, Any] = resolve(schema, frozenset())
    except RecursionError:
        return schema
    return out
