"""From a resolved OpenAPI 3 document to operations: one per path and method, with the tool parameters
the model fills and where each one goes in the request (reference §6.5)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import httpx

from loopwright.tools.base import ToolParameter, schema_parameter_type
from loopwright.tools.openapi.spec import SpecError, merge_params

log = logging.getLogger(__name__)

METHODS = ("get", "post", "put", "delete", "patch", "head", "options", "trace")  # Dify's list
Location = Literal["path", "query", "header", "cookie", "body"]
BodyKind = Literal["json", "form", "multipart", "raw"]
MAX_SCHEMA_DEPTH = 8
MAX_NAME = 64
# OpenAPI says header parameters with these names are ignored (the request's own machinery sets them).
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
_DROPPED_KEYS = frozenset(
    {"xml", "externalDocs", "discriminator", "readOnly", "writeOnly", "deprecated", "nullable", "example"}
    | {"examples", "$schema", "$id", "title", "contentMediaType", "contentEncoding"}
)


@dataclass(frozen=True, slots=True)
class Binding:
    """Where a tool parameter goes: its location and its name there. ``binary`` marks a multipart file
    field; ``whole_body`` a parameter that is the entire request body."""

    location: Location
    name: str
    binary: bool = False
    whole_body: bool = False


@dataclass(frozen=True, slots=True)
class Operation:
    name: str
    method: str
    path: str
    server_url: str
    description: str
    parameters: tuple[ToolParameter, ...]
    bindings: Mapping[str, Binding] = field(default_factory=dict)
    body_kind: BodyKind | None = None
    body_media_type: str | None = None
    body_required: bool = False
    operation_id: str | None = None
    # ``x-requires-approval: true`` on the operation: a call waits for a person's approval
    requires_approval: bool = False

    @property
    def url_template(self) -> str:
        return self.server_url.rstrip("/") + "/" + self.path.lstrip("/")


APPROVAL_EXTENSION = "x-requires-approval"


def extract_operations(
    document: Mapping[str, Any], *, server_url: str | None = None, source_url: str | None = None
) -> list[Operation]:
    """Every operation of the document, in path order, with unique tool names."""
    root_servers = document.get("servers") or []
    operations: list[Operation] = []
    names: set[str] = set()
    for path, item in (document.get("paths") or {}).items():
        if not isinstance(item, Mapping):
            continue
        shared = list(item.get("parameters") or [])
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, Mapping):
                continue
            servers = op.get("servers") or item.get("servers") or root_servers
            base = server_url.rstrip("/") if server_url else select_server(servers, source_url)
            name = _unique(tool_name(op, path, method), names)
            operations.append(_operation(name, method, str(path), base, op, shared))
    return operations


def select_server(servers: list[Any], source_url: str | None) -> str:
    """``servers[0].url`` with its variables' defaults filled in (as Dify picks it); a relative URL is
    taken relative to where the spec came from."""
    first: Mapping[str, Any] = servers[0] if servers and isinstance(servers[0], Mapping) else {"url": "/"}
    url = str(first.get("url") or "/")
    for var, spec in (first.get("variables") or {}).items():
        default = spec.get("default", "") if isinstance(spec, Mapping) else ""
        url = url.replace("{" + str(var) + "}", str(default))
    if url.startswith(("http://", "https://")):
        return url.rstrip("/")
    if source_url:
        return str(httpx.URL(source_url).join(url)).rstrip("/")
    raise SpecError(
        f"the spec's server URL {url!r} is relative and the spec was not loaded from a URL; "
        "give the API's base URL (server_url / --server-url)"
    )


def tool_name(op: Mapping[str, Any], path: str, method: str) -> str:
    """``operationId``, else Dify's ``{path without special characters}_{method}``; cut to what model
    APIs accept for a function name (``[a-zA-Z0-9_-]``, 64 characters)."""
    op_id = str(op.get("operationId") or "").strip()
    if op_id:
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", op_id)
    else:
        # Dify writes "<root>" for "/"; function names cannot hold "<>", so "root".
        name = f"{re.sub(r'[^a-zA-Z0-9_-]', '', path.removeprefix('/')) or 'root'}_{method}"
    return name[:MAX_NAME]


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        suffix = f"_{n}"
        candidate, n = name[: MAX_NAME - len(suffix)] + suffix, n + 1
    if candidate != name:
        log.warning("two operations are named %r; the later one is %r", name, candidate)
    taken.add(candidate)
    return candidate


def _operation(
    name: str, method: str, path: str, base: str, op: Mapping[str, Any], shared: list[Any]
) -> Operation:
    params: list[ToolParameter] = []
    bindings: dict[str, Binding] = {}
    for p in merge_params(shared, list(op.get("parameters") or [])):
        where = str(p.get("in", ""))
        if where not in ("path", "query", "header", "cookie"):
            continue
        pname = str(p["name"])
        if where == "header" and pname.lower() in _IGNORED_HEADERS:
            continue
        schema = p.get("schema")
        if schema is None and isinstance(p.get("content"), Mapping) and p["content"]:
            schema = next(iter(p["content"].values())).get("schema")
        required = where == "path" or bool(p.get("required"))
        binding = Binding(cast(Location, where), pname)
        _add(params, bindings, pname, binding, schema or {}, required, str(p.get("description", "")))
    body_kind, media, body_required = _body(op, params, bindings)
    description = str(op.get("description") or op.get("summary") or f"{method.upper()} {path}").strip()
    return Operation(
        name,
        method.upper(),
        path,
        base,
        description,
        tuple(params),
        bindings,
        body_kind,
        media,
        body_required,
        str(op["operationId"]) if op.get("operationId") else None,
        op.get(APPROVAL_EXTENSION) is True,
    )


def _body(
    op: Mapping[str, Any], params: list[ToolParameter], bindings: dict[str, Binding]
) -> tuple[BodyKind | None, str | None, bool]:
    """The request body: one tool parameter per property of an object body (JSON, form, multipart),
    else one ``body`` parameter for all of it; returns the body's kind, media type and requiredness."""
    body = op.get("requestBody")
    if not isinstance(body, Mapping) or not isinstance(body.get("content"), Mapping) or not body["content"]:
        return None, None, False
    media = _pick_media_type(list(body["content"]))
    kind = _body_kind(media)
    required = bool(body.get("required"))
    schema = merge_all_of(body["content"][media].get("schema") or {})
    props = schema.get("properties")
    if kind != "raw" and isinstance(props, Mapping) and props:
        needed = set(schema.get("required") or [])
        for prop, prop_schema in props.items():
            _add_body_property(params, bindings, kind, str(prop), prop_schema, prop in needed)
    else:
        description = str(body.get("description") or schema.get("description") or "The request body.")
        _add(
            params, bindings, "body", Binding("body", "body", whole_body=True), schema, required, description
        )
    return kind, media, required


def _add_body_property(
    params: list[ToolParameter],
    bindings: dict[str, Binding],
    kind: BodyKind,
    prop: str,
    prop_schema: Any,
    required: bool,
) -> None:
    """One property of an object body as a tool parameter (``body_<name>`` if a parameter of the
    same name exists); read-only properties are skipped, multipart binary ones are files."""
    schema = merge_all_of(prop_schema) if isinstance(prop_schema, Mapping) else {}
    if schema.get("readOnly"):
        return
    binary = kind == "multipart" and _is_binary(schema)
    pname = prop
    if pname in bindings:
        log.warning("parameter %r is also a body property; the body property is body_%s", pname, pname)
        pname = f"body_{pname}"
    description = str(schema.get("description", ""))
    if binary:
        description = (description + " (the file's content, uploaded as a file)").strip()
    _add(params, bindings, pname, Binding("body", prop, binary=binary), schema, required, description)


def _add(
    params: list[ToolParameter],
    bindings: dict[str, Binding],
    name: str,
    binding: Binding,
    schema: Mapping[str, Any],
    required: bool,
    description: str,
) -> None:
    model = model_schema(schema)
    if binding.binary:
        model = {"type": "string"}
    if description and not model.get("description"):
        model["description"] = description
    kind = schema_parameter_type(model)
    if name in bindings:
        log.warning("parameter %r appears twice; the later one is used", name)
        params[:] = [p for p in params if p.name != name]
    params.append(ToolParameter(name, kind, required=required, description=description, schema=model))
    bindings[name] = binding


def _pick_media_type(types: list[str]) -> str:
    lowered = [(t, t.split(";")[0].strip().lower()) for t in types]
    for wanted in ("json", "application/x-www-form-urlencoded", "multipart/form-data"):
        for media, low in lowered:
            if low == wanted or (wanted == "json" and (low == "application/json" or low.endswith("+json"))):
                return media
    return types[0]


def _body_kind(media: str) -> BodyKind:
    low = media.lower()
    if "json" in low:
        return "json"
    if low.startswith("application/x-www-form-urlencoded"):
        return "form"
    if low.startswith("multipart/"):
        return "multipart"
    return "raw"


def _is_binary(schema: Mapping[str, Any]) -> bool:
    # OpenAPI 3.0 says format: binary; 3.1 says contentMediaType (FastAPI writes the latter).
    return schema.get("type") == "string" and (
        schema.get("format") in ("binary", "base64") or "contentMediaType" in schema
    )


# --- schemas the model sees -----------------------------------------------------------------------


def merge_all_of(schema: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """A schema whose ``allOf`` parts are folded in: properties and required lists joined, other keys
    taken from the first part that has them."""
    out = {k: v for k, v in schema.items() if k != "allOf"}
    parts = schema.get("allOf")
    if not isinstance(parts, list) or depth > MAX_SCHEMA_DEPTH:
        return out
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        merged = merge_all_of(part, depth + 1)
        if isinstance(merged.get("properties"), Mapping):
            out["properties"] = {**merged["properties"], **(out.get("properties") or {})}
        if merged.get("required"):
            out["required"] = list(dict.fromkeys([*(out.get("required") or []), *merged["required"]]))
        for key, value in merged.items():
            if key not in ("properties", "required"):
                out.setdefault(key, value)
    if "properties" in out:
        out.setdefault("type", "object")
    return out


def model_schema(schema: Mapping[str, Any], depth: int = 0, stack: tuple[int, ...] = ()) -> dict[str, Any]:
    """A plain JSON schema for the model: ``allOf`` folded, OpenAPI-only keys and read-only properties
    dropped, recursion (a tree node that contains tree nodes) cut at the repeat."""
    if id(schema) in stack or depth > MAX_SCHEMA_DEPTH:  # cycle cutting
        return {"type": "object"} if schema.get("type") == "object" or "properties" in schema else {}
    stack = (*stack, id(schema))
    merged = _drop_null_variant(merge_all_of(schema))  # normalisation
    out: dict[str, Any] = {}
    for key, value in merged.items():  # key filtering: subschemas recurse, other values are copied
        if key in _DROPPED_KEYS or key.startswith("x-"):
            continue
        sub = _SUBSCHEMAS.get(key)
        out[key] = _plain(value) if sub is None else sub(value, depth + 1, stack)
    _prune_required(out)
    return out


def _properties(value: Any, depth: int, stack: tuple[int, ...]) -> Any:
    if not isinstance(value, Mapping):
        return _plain(value)
    return {
        str(k): model_schema(v, depth, stack)
        for k, v in value.items()
        if isinstance(v, Mapping) and not v.get("readOnly")
    }


def _one_schema(value: Any, depth: int, stack: tuple[int, ...]) -> Any:
    return model_schema(value, depth, stack) if isinstance(value, Mapping) else _plain(value)


def _schema_list(value: Any, depth: int, stack: tuple[int, ...]) -> Any:
    if not isinstance(value, list):
        return _plain(value)
    return [model_schema(v, depth, stack) for v in value if isinstance(v, Mapping)]


# The keys whose values are schemas (or hold schemas), and how each is converted.
_SUBSCHEMAS: dict[str, Callable[[Any, int, tuple[int, ...]], Any]] = {
    "properties": _properties,
    "items": _one_schema,
    "additionalProperties": _one_schema,
    "not": _one_schema,
    "anyOf": _schema_list,
    "oneOf": _schema_list,
}


def _prune_required(out: dict[str, Any]) -> None:
    """``required`` keeps only the properties still present (read-only ones are gone); empty, it goes."""
    if "required" in out and isinstance(out.get("properties"), Mapping):
        out["required"] = [r for r in out["required"] if r in out["properties"]]
        if not out["required"]:
            del out["required"]


def _drop_null_variant(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {type: null}]`` (how 3.1 and pydantic write an optional value) becomes X."""
    for key in ("anyOf", "oneOf"):
        variants = schema.get(key)
        if not isinstance(variants, list):
            continue
        real = [v for v in variants if not (isinstance(v, Mapping) and v.get("type") == "null")]
        if len(real) == 1 and len(real) < len(variants) and isinstance(real[0], Mapping):
            rest = {k: v for k, v in schema.items() if k != key}
            return {**merge_all_of(real[0]), **rest}
    return schema


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy of a value that is not a schema (enum, default, …)."""
    if depth > MAX_SCHEMA_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    return value
