"""Loading descriptions: JSON/YAML, kinds, validation errors that name the path, references."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopwright.tools.net import BlockedAddressError, NetworkPolicy
from loopwright.tools.openapi.spec import (
    SpecError,
    load_spec,
    parse_document,
    parse_spec,
    parse_spec_async,
    swagger_to_openapi3,
)

FIXTURES = Path(__file__).parent / "fixtures"
LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])


def minimal(paths: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "paths": paths
        if paths is not None
        else {"/a": {"get": {"responses": {"200": {"description": "ok"}}}}},
        **extra,
    }


def test_json_and_yaml() -> None:
    doc = minimal()
    assert parse_spec(json.dumps(doc)).kind == "openapi3"
    yaml_text = "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths: {}\n"
    spec = parse_spec(yaml_text, source="api.yaml")
    assert spec.title == "T" and spec.document["paths"] == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "a mapping at the top level"),
        ("key: [unclosed", "neither JSON nor YAML"),
        ('{"openapi": "2.5", "info": {}}', "OpenAPI version '2.5' is not supported"),
        ('{"title": "nothing"}', "not an OpenAPI 3.x, Swagger 2.0 or plugin manifest"),
    ],
)
def test_not_a_spec(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as info:
        parse_spec(text, source="x.json")
    assert str(info.value).startswith("x.json: ")


def test_invalid_spec_names_the_path() -> None:
    doc = minimal({"/pets": {"get": {"responses": {"200": {}}}}})
    with pytest.raises(SpecError) as info:
        parse_spec(json.dumps(doc), source="pets.json")
    assert str(info.value) == (
        "pets.json: invalid spec at $.paths./pets.get.responses.200: 'description' is a required property"
    )


def test_invalid_parameter_names_the_deepest_path() -> None:
    bad = {"name": "a", "in": "query", "schema": {"type": "strin"}}
    doc = minimal({"/p": {"get": {"parameters": [bad], "responses": {"200": {"description": "ok"}}}}})
    with pytest.raises(
        SpecError, match=r"invalid spec at \$\.paths\./p\.get\.parameters\[0\]\.schema\.type: 'strin'"
    ):
        parse_spec(json.dumps(doc))


def test_missing_reference_is_named() -> None:
    doc = minimal(
        {
            "/p": {
                "get": {
                    "responses": {
                        "200": {
                            "description": "ok",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}
                            },
                        }
                    }
                }
            }
        }
    )
    with pytest.raises(SpecError, match="Nope"):
        parse_spec(json.dumps(doc))


@pytest.mark.parametrize(
    "ref", ["http://169.254.169.254/latest/schema.json", "other.yaml#/Pet", "file:///etc/passwd"]
)
def test_external_references_are_refused_before_anything_is_fetched(ref: str, no_network: Any) -> None:
    schema = {"$ref": ref}
    doc = minimal(
        {
            "/p": {
                "post": {
                    "requestBody": {"content": {"application/json": {"schema": schema}}},
                    "responses": {},
                }
            }
        }
    )
    with pytest.raises(SpecError, match=r"at \$\.paths\./p\.post\.requestBody.*points outside this document"):
        parse_spec(json.dumps(doc))
    assert no_network.blocked == []


def test_refs_and_recursion_are_resolved() -> None:
    spec = parse_spec((FIXTURES / "openapi30.yaml").read_text(), source="tree")
    body = spec.document["paths"]["/nodes/{id}/children"]["post"]["requestBody"]
    schema = body["content"]["application/json"]["schema"]
    assert "$ref" not in json.dumps(schema["allOf"][1])  # resolved in place
    node = schema["allOf"][0]
    assert node["properties"]["children"]["items"] is node  # a cycle, kept as shared objects


def test_swagger2_is_converted() -> None:
    spec = parse_spec((FIXTURES / "swagger2.yaml").read_text(), source="legacy")
    doc = spec.document
    assert spec.kind == "swagger2" and doc["openapi"].startswith("3.")
    assert doc["servers"] == [{"url": "https://api.example.com/v1"}]
    get = doc["paths"]["/pets/{petId}"]["get"]
    names = {(p["name"], p["in"]) for p in get["parameters"]}
    assert names == {("petId", "path"), ("fields", "query"), ("X-Client", "header")}
    assert next(p for p in get["parameters"] if p["name"] == "X-Client")["schema"]["enum"] == ["web", "cli"]
    post = doc["paths"]["/pets"]["post"]
    assert post["requestBody"]["required"] is True
    assert post["requestBody"]["content"]["application/json"]["schema"]["required"] == ["name"]
    photo = doc["paths"]["/pets/{petId}/photo"]["post"]["requestBody"]
    form = photo["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["photo"] == {"type": "string", "format": "binary"}
    assert form["required"] == ["photo"]


def test_swagger2_without_host_uses_base_path() -> None:
    doc = {"swagger": "2.0", "info": {"title": "t", "version": "1"}, "basePath": "/api", "paths": {}}
    assert swagger_to_openapi3(doc)["servers"] == [{"url": "/api"}]


def test_invalid_swagger2_names_the_path() -> None:
    text = (FIXTURES / "swagger2.yaml").read_text().replace("in: body", "in: bodyy")
    with pytest.raises(SpecError, match=r"invalid spec at \$\.paths\./pets\.post\.parameters\[0\]"):
        parse_spec(text, source="legacy")


def test_a_manifest_needs_the_async_loader() -> None:
    manifest = {"schema_version": "v1", "api": {"type": "openapi", "url": "https://x.example/openapi.json"}}
    with pytest.raises(SpecError, match="plugin manifest"):
        parse_spec(json.dumps(manifest))


async def test_load_from_file(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(minimal()))
    spec = await load_spec(path)
    assert spec.kind == "openapi3" and spec.source_url is None
    with pytest.raises(SpecError, match="cannot read the spec file"):
        await load_spec(tmp_path / "missing.yaml")


async def test_load_from_url_through_the_guard(api: str) -> None:
    spec = await load_spec(f"{api}/openapi.json", LOCAL)
    assert spec.title == "Pet Store" and spec.source_url == f"{api}/openapi.json"
    assert "/pets/{pet_id}" in spec.document["paths"]
    with pytest.raises(BlockedAddressError, match="127.0.0.1: a loopback"):
        await load_spec(f"{api}/openapi.json")  # the default policy refuses loopback


async def test_plugin_manifest_is_followed(api: str) -> None:
    spec = await load_spec(f"{api}/.well-known/ai-plugin.json", LOCAL)
    assert spec.manifest is not None and spec.manifest["name_for_model"] == "petstore"
    assert spec.source_url == f"{api}/openapi.json" and spec.kind == "openapi3"


async def test_manifest_pointing_at_a_blocked_address(no_network: Any) -> None:
    manifest = {
        "schema_version": "v1",
        "api": {"type": "openapi", "url": "http://169.254.169.254/openapi.json"},
    }
    with pytest.raises(BlockedAddressError, match="cloud metadata"):
        await parse_spec_async(json.dumps(manifest), policy=LOCAL)
    assert no_network.blocked == []


async def test_fetch_errors(api: str) -> None:
    with pytest.raises(SpecError, match="status 404"):
        await load_spec(f"{api}/nope.json", LOCAL)


def test_document_must_be_a_mapping() -> None:
    with pytest.raises(SpecError):
        parse_document("just a string", "s")
