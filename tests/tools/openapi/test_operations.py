"""Operations and the schemas the model sees: names, parameters, bodies, servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright.tools.openapi.operations import (
    Operation,
    extract_operations,
    merge_all_of,
    model_schema,
    select_server,
    tool_name,
)
from loopwright.tools.openapi.spec import SpecError, parse_spec
from tests.tools.openapi.api_app import make_app

FIXTURES = Path(__file__).parent / "fixtures"


def ops_of(text: str, **options: Any) -> dict[str, Operation]:
    spec = parse_spec(text)
    return {op.name: op for op in extract_operations(spec.document, **options)}


def fastapi_ops() -> dict[str, Operation]:
    return ops_of(json.dumps(make_app().openapi()), server_url="http://127.0.0.1:9")


def props(op: Operation) -> dict[str, Any]:
    return {p.name: p.json_schema() for p in op.parameters}


def test_one_operation_per_path_and_method() -> None:
    ops = fastapi_ops()
    assert {"get_pet", "list_pets", "create_pet", "login", "upload", "secure", "get_text"} <= set(ops)
    assert ops["get_pet"].method == "GET" and ops["get_pet"].path == "/pets/{pet_id}"
    assert ops["create_pet"].method == "POST"


def test_path_query_header_cookie_parameters() -> None:
    op = fastapi_ops()["get_pet"]
    assert op.description == "Get one pet by id."
    where = {name: (b.location, b.name) for name, b in op.bindings.items()}
    assert where == {
        "pet_id": ("path", "pet_id"),
        "verbose": ("query", "verbose"),
        "x-trace": ("header", "x-trace"),
        "session": ("cookie", "session"),
    }
    schema = props(op)
    assert schema["pet_id"] == {"type": "integer"}
    assert schema["verbose"] == {"type": "boolean", "description": "Include details.", "default": False}
    assert schema["x-trace"] == {"type": "string", "description": "A trace id."}  # anyOf [string, null]
    required = {p.name for p in op.parameters if p.required}
    assert required == {"pet_id"}


def test_enums_required_and_arrays() -> None:
    op = fastapi_ops()["list_pets"]
    schema = props(op)
    assert (
        schema["kind"]["enum"] == ["cat", "dog", "bird"]
        and schema["kind"]["description"] == "Only this kind."
    )
    assert schema["limit"] == {"type": "integer", "maximum": 100, "minimum": 1, "default": 10}
    assert schema["tags"] == {"type": "array", "items": {"type": "string"}}
    assert [p.name for p in op.parameters if p.required] == ["kind"]
    assert op.description == "List pets, filtered by kind and tags."


def test_json_body_properties_become_parameters() -> None:
    op = fastapi_ops()["create_pet"]
    assert op.body_kind == "json" and op.body_required
    schema = props(op)
    assert set(schema) == {"name", "kind", "age", "tags"}
    assert schema["name"] == {"type": "string", "description": "The pet's name."}
    assert schema["kind"]["enum"] == ["cat", "dog", "bird"]
    assert {p.name for p in op.parameters if p.required} == {"name", "kind"}
    tool_schema = {"type": "object", "properties": schema, "required": ["name", "kind"]}
    json.dumps(tool_schema)  # plain JSON, no shared objects left


def test_form_and_multipart_bodies() -> None:
    ops = fastapi_ops()
    assert ops["login"].body_kind == "form" and set(props(ops["login"])) == {"username", "password"}
    upload = ops["upload"]
    assert upload.body_kind == "multipart"
    assert upload.bindings["file"].binary and not upload.bindings["note"].binary
    assert (
        props(upload)["file"]["type"] == "string"
        and "uploaded as a file" in props(upload)["file"]["description"]
    )


def test_operation_id_else_difys_path_rule() -> None:
    assert tool_name({"operationId": "getPet"}, "/pets/{id}", "get") == "getPet"
    assert tool_name({}, "/pets/{id}/photo", "post") == "petsidphoto_post"  # Dify strips, not replaces
    assert tool_name({}, "/", "get") == "root_get"  # Dify writes <root>, not a valid function name
    assert tool_name({"operationId": "search.nodes v2"}, "/s", "get") == "search_nodes_v2"
    assert len(tool_name({"operationId": "x" * 100}, "/", "get")) == 64


def test_duplicate_names_get_a_suffix(caplog: pytest.LogCaptureFixture) -> None:
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": "https://api.example"}],
        "paths": {
            "/a": {"get": {"operationId": "get.thing", "responses": {"200": {"description": "ok"}}}},
            "/b": {"get": {"operationId": "get_thing", "responses": {"200": {"description": "ok"}}}},
        },
    }
    ops = ops_of(json.dumps(doc))
    assert list(ops) == ["get_thing", "get_thing_2"]  # "get.thing" sanitised collides with "get_thing"
    assert "two operations are named 'get_thing'" in caplog.text


def test_openapi30_fixture() -> None:
    ops = ops_of((FIXTURES / "openapi30.yaml").read_text())
    assert set(ops) == {"root_get", "nodesidchildren_post", "search_nodes_v2", "putRaw"}
    assert ops["root_get"].server_url == "https://eu.tree.example/api"  # variables filled
    assert ops["search_nodes_v2"].server_url == "https://search.tree.example"  # operation servers
    search = props(ops["search_nodes_v2"])
    assert set(search) == {"q", "opts"}  # an Accept header parameter is ignored (OpenAPI says so)
    assert search["q"] == {"type": "string", "minLength": 1, "description": "Words."}
    assert search["opts"] == {"type": "object"}


def test_allof_recursion_readonly_and_openapi_keys() -> None:
    op = ops_of((FIXTURES / "openapi30.yaml").read_text())["nodesidchildren_post"]
    assert op.description == "Add a child node."
    schema = props(op)
    assert set(schema) == {"id", "name", "children", "weight"}  # path id + body, read-only id dropped
    assert op.bindings["id"].location == "path"
    assert schema["weight"] == {"type": "number", "default": 1.0}  # nullable and x-* dropped
    children = schema["children"]
    assert children["type"] == "array" and children["items"]["properties"]["children"]["items"] == {
        "type": "object"
    }  # the cycle is cut at the repeat
    assert {p.name for p in op.parameters if p.required} == {"id", "name"}


def test_non_object_body_is_one_parameter() -> None:
    op = ops_of((FIXTURES / "openapi30.yaml").read_text())["putRaw"]
    assert op.body_kind == "raw" and op.body_media_type == "text/plain"
    assert op.bindings["body"].whole_body
    assert props(op)["body"] == {"type": "string", "description": "Raw text."}


def test_swagger2_operations() -> None:
    ops = ops_of((FIXTURES / "swagger2.yaml").read_text())
    assert set(ops) == {"getPet", "pets_post", "uploadPhoto"}
    get = ops["getPet"]
    assert get.server_url == "https://api.example.com/v1"
    assert props(get)["X-Client"] == {"type": "string", "enum": ["web", "cli"]}
    assert props(get)["petId"]["description"] == "The pet's id."
    assert set(props(ops["pets_post"])) == {"name", "kind"}
    upload = ops["uploadPhoto"]
    assert upload.body_kind == "multipart" and upload.bindings["photo"].binary


def test_server_selection() -> None:
    assert select_server([{"url": "https://a.example/v1/"}, {"url": "https://b.example"}], None) == (
        "https://a.example/v1"
    )
    assert (
        select_server([{"url": "/api"}], "http://127.0.0.1:8000/spec/openapi.json")
        == "http://127.0.0.1:8000/api"
    )
    assert select_server([], "http://127.0.0.1:8000/openapi.json") == "http://127.0.0.1:8000"
    with pytest.raises(SpecError, match="relative.*server_url"):
        select_server([{"url": "/api"}], None)
    doc = json.dumps(make_app().openapi())
    with pytest.raises(SpecError, match="relative"):
        ops_of(doc)
    assert (
        ops_of(doc, server_url="https://override.example/")["get_pet"].server_url
        == "https://override.example"
    )


def test_merge_all_of() -> None:
    merged = merge_all_of(
        {
            "description": "mine",
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer"}}, "required": ["b"], "description": "theirs"},
            ],
        }
    )
    assert merged == {
        "description": "mine",
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_model_schema_drops_read_only_from_required() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "readOnly": True}, "x": {"type": "string"}},
        "required": ["id"],
        "xml": {"name": "thing"},
    }
    assert model_schema(schema) == {"type": "object", "properties": {"x": {"type": "string"}}}
