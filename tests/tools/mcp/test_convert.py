"""Tool listings as parameters and tool results as outputs."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest

from loopwright.tools import (
    BlobMessage,
    JsonMessage,
    LinkMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolInvokeError,
    ToolOutput,
)
from loopwright.tools.mcp.convert import inline_refs, result_outputs, tool_parameters


async def _never(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
    yield TextMessage("")


def test_parameters_keep_the_servers_schema_and_required_list() -> None:
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for", "minLength": 1},
            "limit": {"type": "integer", "default": 10, "maximum": 50},
            "tags": {"type": "array", "items": {"type": "string"}},
            "when": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        },
        "required": ["query"],
    }
    params = tool_parameters(schema)
    assert [(p.name, p.type, p.required) for p in params] == [
        ("query", "string", True),
        ("limit", "integer", False),
        ("tags", "array", False),
        ("when", "any", False),
    ]
    assert params[0].description == "What to look for"
    tool = Tool("search", "Search.", params, _never)
    assert tool.schema.parameters == {
        "type": "object",
        "properties": schema["properties"],
        "required": ["query"],
    }


def test_local_refs_are_inlined_and_recursion_is_cut() -> None:
    schema = {
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point", "description": "Where"},
            "tree": {"$ref": "#/definitions/Node"},
            "remote": {"$ref": "https://example.com/schema.json"},
        },
        "$defs": {
            "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}}
        },
        "definitions": {
            "Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}},
            }
        },
    }
    out = inline_refs(schema)
    assert "$defs" not in out and "definitions" not in out
    assert out["properties"]["point"] == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "description": "Where",
    }
    assert out["properties"]["tree"]["properties"]["children"]["items"] == {}
    assert out["properties"]["remote"] == {"$ref": "https://example.com/schema.json"}
    (point, _, _) = tool_parameters(schema)
    assert point.type == "object" and point.description == "Where"


def test_a_property_named_like_a_keyword_is_kept() -> None:
    params = tool_parameters({"type": "object", "properties": {"definitions": {"type": "string"}}})
    assert [p.name for p in params] == ["definitions"]


def test_no_properties_means_no_parameters() -> None:
    assert tool_parameters({"type": "object"}) == ()


def _result(
    *content: types.ContentBlock, structured: object = None, error: bool = False
) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structured_content=structured, is_error=error)


def test_json_looking_text_is_also_json_for_the_user_only() -> None:
    outputs = result_outputs(_result(types.TextContent(text=' [{"a": 1}, {"a": 2}] ')))
    assert outputs == [
        TextMessage(' [{"a": 1}, {"a": 2}] '),
        JsonMessage([{"a": 1}, {"a": 2}], suppress_output=True),
    ]
    assert result_outputs(_result(types.TextContent(text="{not json}"))) == [TextMessage("{not json}")]
    assert result_outputs(_result(types.TextContent(text="42"))) == [TextMessage("42")]


def test_structured_content_without_text_is_shown_to_the_model() -> None:
    assert result_outputs(_result(structured={"ok": True})) == [JsonMessage({"ok": True})]


def test_structured_content_echoed_as_text_appears_once() -> None:
    outputs = result_outputs(_result(types.TextContent(text='{"ok": true}'), structured={"ok": True}))
    assert outputs == [TextMessage('{"ok": true}'), JsonMessage({"ok": True}, suppress_output=True)]


def test_binary_content_becomes_blobs_with_names() -> None:
    data = base64.b64encode(b"\x00\x01").decode()
    outputs = result_outputs(
        _result(
            types.ImageContent(data=data, mime_type="image/jpeg"),
            types.AudioContent(data=data, mime_type="audio/x-flac"),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="s3://bucket/dir/", blob=data)),
            types.ResourceLink(uri="file:///tmp/out.csv", name="out"),
        )
    )
    assert outputs == [
        BlobMessage(b"\x00\x01", "image/jpeg", "image.jpg"),
        BlobMessage(b"\x00\x01", "audio/x-flac", "audio.flac"),
        BlobMessage(b"\x00\x01", "application/octet-stream", "resource.bin"),
        LinkMessage("file:///tmp/out.csv"),
    ]


def test_invalid_base64_is_reported_as_text() -> None:
    (out,) = result_outputs(_result(types.ImageContent(data="not base64!", mime_type="image/png")))
    assert isinstance(out, TextMessage) and "not valid base64" in out.text


def test_is_error_raises_with_the_servers_text() -> None:
    with pytest.raises(ToolInvokeError, match="^quota exceeded\nretry later$"):
        result_outputs(
            _result(
                types.TextContent(text="quota exceeded"), types.TextContent(text="retry later"), error=True
            )
        )
    with pytest.raises(ToolInvokeError, match="without a message"):
        result_outputs(_result(error=True))
