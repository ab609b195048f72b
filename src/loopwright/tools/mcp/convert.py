"""MCP ↔ loopwright: a server's tool listing as tool parameters, a tool result as tool outputs."""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import posixpath
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import mcp_types as mcp

from loopwright.tools.base import (
    BlobMessage,
    JsonMessage,
    LinkMessage,
    TextMessage,
    ToolInvokeError,
    ToolOutput,
    ToolParameter,
    schema_parameter_type,
)

_MAX_REF_DEPTH = 32


def tool_parameters(input_schema: Mapping[str, Any]) -> tuple[ToolParameter, ...]:
    """One parameter per property of ``input_schema``; each keeps the server's own JSON schema (with
    local ``$ref``s inlined, since the model only sees the properties), so the model sees it as-is."""
    schema = inline_refs(input_schema)
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return ()
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    params: list[ToolParameter] = []
    for name, prop in props.items():
        prop_schema = dict(prop) if isinstance(prop, Mapping) else {}
        description = prop_schema.get("description")
        params.append(
            ToolParameter(
                name=str(name),
                type=schema_parameter_type(prop_schema),
                required=name in required_names,
                description=description if isinstance(description, str) else "",
                schema=prop_schema,
            )
        )
    return tuple(params)


def inline_refs(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with local references (``#/$defs/X``, ``#/definitions/X``) replaced by their targets.
    A recursive reference becomes ``{}`` (any value) where it would loop; unknown references stay."""
    root = dict(schema)

    def resolve(node: Any, active: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [resolve(item, active) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target = _pointer(root, ref)
            if target is not None:
                if ref in active or len(active) >= _MAX_REF_DEPTH:
                    return {}
                siblings = {k: v for k, v in node.items() if k != "$ref"}
                merged = {**target, **siblings} if isinstance(target, Mapping) else target
                return resolve(merged, (*active, ref))
        return {k: resolve(v, active) for k, v in node.items()}

    body = {k: v for k, v in root.items() if k not in ("$defs", "definitions")}
    resolved = resolve(body, ())
    return resolved if isinstance(resolved, dict) else {}


def _pointer(root: Mapping[str, Any], ref: str) -> Any:
    node: Any = root
    for raw in ref[2:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


# --- results --------------------------------------------------------------------------------------


def result_outputs(result: mcp.CallToolResult) -> list[ToolOutput]:
    """The outputs of a tool result. ``isError`` results raise :class:`ToolInvokeError` with the
    server's text, so the model sees an error observation (Dify ignores ``isError``)."""
    if result.is_error:
        texts = [b.text for b in result.content if isinstance(b, mcp.TextContent) and b.text.strip()]
        raise ToolInvokeError("\n".join(texts) or "the MCP tool reported an error without a message")
    structured = result.structured_content
    outputs: list[ToolOutput] = []
    for block in result.content:
        for out in block_outputs(block):
            # The structured content below carries the same value.
            if not (isinstance(out, JsonMessage) and structured is not None and out.data == structured):
                outputs.append(out)
    if structured is not None:
        # Content is what the server wrote for the model; structured content is for programs, and servers
        # SHOULD echo it as text anyway. The model sees it only when there is no text.
        has_text = any(isinstance(o, TextMessage) for o in outputs)
        outputs.append(JsonMessage(structured, suppress_output=has_text))
    return outputs


def block_outputs(block: mcp.ContentBlock) -> list[ToolOutput]:
    """The outputs of one content block."""
    if isinstance(block, mcp.TextContent):
        return _text_outputs(block.text)
    if isinstance(block, mcp.ImageContent | mcp.AudioContent):
        return [_blob(block.data, block.mime_type, block.type)]
    if isinstance(block, mcp.EmbeddedResource):
        res = block.resource
        if isinstance(res, mcp.TextResourceContents):
            return _text_outputs(res.text)
        return [_blob(res.blob, res.mime_type or "application/octet-stream", _uri_name(res.uri))]
    if isinstance(block, mcp.ResourceLink):
        return [LinkMessage(str(block.uri))]
    return []


def _text_outputs(text: str) -> list[ToolOutput]:
    value = _json_value(text)
    if value is None:
        return [TextMessage(text)]
    # The text already shows the JSON to the model; the JSON message is for the user and callers.
    return [TextMessage(text), JsonMessage(value, suppress_output=True)]


def _json_value(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[" or stripped[-1] not in "}]":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def _blob(data: str, mime_type: str, stem: str) -> ToolOutput:
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return TextMessage(f"[the MCP server sent {stem} content ({mime_type}) that is not valid base64]")
    if "." in stem:
        filename = stem
    else:
        filename = f"{stem}{_extension(mime_type)}"
    return BlobMessage(raw, mime_type=mime_type, filename=filename)


def _extension(mime_type: str) -> str:
    base = mime_type.split(";", 1)[0].strip().lower()
    guessed = mimetypes.guess_extension(base)
    if guessed:
        return guessed
    subtype = base.rpartition("/")[2].removeprefix("x-")
    return f".{subtype}" if subtype.isalnum() and len(subtype) <= 5 else ".bin"


def _uri_name(uri: str) -> str:
    name = posixpath.basename(urlsplit(str(uri)).path)
    return name or "resource"
