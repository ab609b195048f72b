"""Calling operations against a live FastAPI app on 127.0.0.1: every parameter location, every body
kind, errors, responses."""

from __future__ import annotations

import socket
from typing import Any

import httpx
import pytest

from loopwright.tools.base import BlobMessage, JsonMessage, TextMessage, ToolParameterValidationError
from loopwright.tools.engine import ToolEngine, ToolResult
from loopwright.tools.net import NetworkPolicy
from loopwright.tools.openapi import OpenAPIToolset
from loopwright.tools.openapi.operations import Operation
from loopwright.tools.openapi.request import build_request
from tests.tools.openapi.api_app import Seen

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])


@pytest.fixture
async def engine(served: tuple[str, Seen]) -> ToolEngine:
    toolset = OpenAPIToolset.from_file(f"{served[0]}/openapi.json", policy=LOCAL)
    return ToolEngine(await toolset.get_tools(), observation_token_limit=None)


async def call(engine: ToolEngine, name: str, args: dict[str, Any]) -> ToolResult:
    return await engine.invoke(name, args)


async def test_path_query_header_cookie(engine: ToolEngine, served: tuple[str, Seen]) -> None:
    result = await call(
        engine, "get_pet", {"pet_id": "7", "verbose": "yes", "x-trace": "t-1", "session": "abc"}
    )
    assert result.observation == '{"id": 7, "verbose": true, "trace": "t-1", "session": "abc"}'
    assert isinstance(result.outputs[0], JsonMessage) and isinstance(result.outputs[1], TextMessage)
    assert result.outputs[0].data == {"id": 7, "verbose": True, "trace": "t-1", "session": "abc"}
    last = served[1].requests[-1]
    assert last["path"] == "/pets/7" and last["query"] == "verbose=true"
    assert last["headers"]["x-trace"] == "t-1" and last["headers"]["cookie"] == "session=abc"


async def test_optional_parameters_are_left_out(engine: ToolEngine, served: tuple[str, Seen]) -> None:
    result = await call(engine, "get_pet", {"pet_id": 3})
    assert result.outputs[0].data == {"id": 3, "verbose": False, "trace": None, "session": None}  # type: ignore[union-attr]
    assert served[1].requests[-1]["query"] == ""


async def test_arrays_and_enums_in_the_query(engine: ToolEngine) -> None:
    result = await call(engine, "list_pets", {"kind": "dog", "tags": ["a", "b"], "limit": "5"})
    assert result.outputs[0].data == [{"kind": "dog", "limit": 5, "tags": ["a", "b"]}]  # type: ignore[union-attr]
    result = await call(engine, "list_pets", {"kind": "dog", "tags": '["x"]'})  # a JSON string is cast
    assert result.outputs[0].data == [{"kind": "dog", "limit": 10, "tags": ["x"]}]  # type: ignore[union-attr]


async def test_missing_required_parameter(engine: ToolEngine) -> None:
    result = await call(engine, "list_pets", {})
    assert result.observation == (
        "tool parameters validation error: missing required parameter 'kind', "
        "please check your tool parameters"
    )


async def test_json_body(engine: ToolEngine, served: tuple[str, Seen]) -> None:
    result = await call(engine, "create_pet", {"name": "Rex", "kind": "dog", "age": 3, "tags": ["good"]})
    assert result.outputs[0].data == {  # type: ignore[union-attr]
        "created": {"name": "Rex", "kind": "dog", "age": 3, "tags": ["good"]}
    }
    assert served[1].requests[-1]["headers"]["content-type"] == "application/json"


async def test_form_body(engine: ToolEngine, served: tuple[str, Seen]) -> None:
    result = await call(engine, "login", {"username": "ann", "password": "hunter22"})
    assert result.outputs[0].data == {"user": "ann", "password_length": 8}  # type: ignore[union-attr]
    assert served[1].requests[-1]["headers"]["content-type"] == "application/x-www-form-urlencoded"


async def test_multipart_body(engine: ToolEngine, served: tuple[str, Seen]) -> None:
    result = await call(engine, "upload", {"file": "hello file", "note": "n1"})
    assert result.outputs[0].data == {"filename": "file", "content": "hello file", "note": "n1"}  # type: ignore[union-attr]
    assert served[1].requests[-1]["headers"]["content-type"].startswith("multipart/form-data; boundary=")


async def test_status_error_has_status_and_bounded_excerpt(engine: ToolEngine) -> None:
    result = await call(engine, "get_pet", {"pet_id": 404})
    assert result.observation == (
        'tool invoke error: Request failed with status code 404 and {"detail":"no pet with id 404"}'
    )
    result = await call(engine, "fail", {})
    assert result.observation.startswith(
        "tool invoke error: Request failed with status code 500 and boom boom"
    )
    assert result.observation.endswith(" …") and len(result.observation) < 600


async def test_text_and_binary_responses(engine: ToolEngine) -> None:
    result = await call(engine, "get_text", {})
    assert result.observation == "just some text"
    result = await call(engine, "get_image", {})
    blob = result.outputs[0]
    assert (
        isinstance(blob, BlobMessage) and blob.mime_type == "image/png" and blob.data.startswith(b"\x89PNG")
    )
    assert blob.filename == "get_image.png"


async def test_timeout_is_a_tool_error(served: tuple[str, Seen]) -> None:
    toolset = OpenAPIToolset.from_file(f"{served[0]}/openapi.json", policy=LOCAL, timeout=httpx.Timeout(0.3))
    engine = ToolEngine(await toolset.get_tools())
    result = await engine.invoke("slow", {})
    assert result.observation == f"tool invoke error: GET {served[0]}/slow timed out (ReadTimeout)"


async def test_connection_refused_is_a_tool_error(served: tuple[str, Seen]) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    toolset = OpenAPIToolset.from_file(
        f"{served[0]}/openapi.json", policy=LOCAL, server_url=f"http://127.0.0.1:{port}"
    )
    engine = ToolEngine(await toolset.get_tools())
    result = await engine.invoke("get_text", {})
    assert result.observation.startswith(f"tool invoke error: GET http://127.0.0.1:{port}/text failed: ")


async def test_calls_go_through_the_guard(served: tuple[str, Seen], no_network: Any) -> None:
    url, seen = served
    toolset = OpenAPIToolset.from_file(f"{url}/openapi.json", policy=LOCAL)
    engine = ToolEngine(await toolset.get_tools())
    result = await engine.invoke("go_elsewhere", {"to": "http://169.254.169.254/latest/meta-data/"})
    assert result.observation.startswith(
        "tool invoke error: blocked request to 169.254.169.254: a cloud metadata"
    )
    result = await engine.invoke("go_elsewhere", {"to": "http://10.1.2.3/"})
    assert "a private address" in result.observation
    assert no_network.blocked == []
    other = OpenAPIToolset.from_file(f"{url}/openapi.json", policy=LOCAL, server_url="http://127.0.0.2:9")
    other_engine = ToolEngine(await other.get_tools())
    count = len(seen.requests)
    result = await other_engine.invoke("get_text", {})
    assert "blocked request to 127.0.0.2: a loopback address" in result.observation
    assert len(seen.requests) == count


def test_build_request_places_values() -> None:
    from loopwright.tools.base import ToolParameter
    from loopwright.tools.openapi.operations import Binding

    op = Operation(
        "op",
        "GET",
        "/items/{item id}/{kind}",
        "https://api.example/v1/",
        "",
        (
            ToolParameter("item id", required=True),
            ToolParameter("kind", required=True),
            ToolParameter("filter", "object"),
            ToolParameter("flag", "boolean"),
        ),
        {
            "item id": Binding("path", "item id"),
            "kind": Binding("path", "kind"),
            "filter": Binding("query", "filter"),
            "flag": Binding("header", "X-Flag"),
        },
    )
    parts = build_request(op, {"item id": "a/b c", "kind": "x", "filter": {"r": 1, "g": 2}, "flag": False})
    assert parts.url == "https://api.example/v1/items/a%2Fb%20c/x"
    assert parts.params == [("r", "1"), ("g", "2")]
    assert parts.headers == {"X-Flag": "false"}
    with pytest.raises(ToolParameterValidationError, match="'kind'"):
        build_request(op, {"item id": "1"})
