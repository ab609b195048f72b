"""The OpenAPI document the server serves at ``GET /openapi.json`` (no key needed: it describes the
wire, not anyone's data; with the admin API on, its routes are in it too).

FastAPI's generated document is the start; what it does not know is added here so that a client
generated from it, or a fuzzer, meets what the server really does:

- every error is Dify's body ``{"code", "message", "status"}`` (the ``Error`` component), answered
  with a 4xx status (FastAPI's 422 never happens: a request that does not validate is a 400) — save
  on the other wires, which answer in their own shape (``WIRE_ERRORS``: OpenAI's error object, a
  JSON-RPC error, AG-UI's ``RUN_ERROR``);
- each route says which credential opens it (``securitySchemes``: an app's Service API key, a
  dataset API key, the admin token), read from the route's own dependencies;
- a route that reads its JSON body after authentication (``server.bodies``) has that body's schema;
- every ``{name}`` of a path is a path parameter, even where the route's function does not take it
  (the routes of Dify's that an agent-chat app does not serve);
- a route that may answer a stream says ``text/event-stream`` beside its JSON.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute, iter_route_contexts
from pydantic import BaseModel

OPENAPI_PATH = "/openapi.json"

ERROR_SCHEMA: dict[str, Any] = {
    "title": "Error",
    "description": "Dify's error body, on every 4xx and 5xx answer",
    "type": "object",
    "required": ["code", "message", "status"],
    "properties": {
        "code": {"type": "string", "description": "Dify's error code, e.g. invalid_param, unauthorized"},
        "message": {"type": "string"},
        "status": {"type": "integer", "description": "the HTTP status, again"},
    },
}
ERROR_RESPONSE: dict[str, Any] = {
    "description": "Dify's error body",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}

# The other wires' error bodies (docs/protocols.md), by the paths that answer them.
OPENAI_ERROR_SCHEMA: dict[str, Any] = {
    "title": "OpenAIError",
    "description": "OpenAI's error object: every error of the OpenAI paths (docs/openai-api.md)",
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": "string", "description": "Dify's error code"},
                "param": {"type": ["string", "null"]},
            },
        }
    },
}
JSON_RPC_ERROR_SCHEMA: dict[str, Any] = {
    "title": "JsonRpcError",
    "description": "a JSON-RPC 2.0 error response: every error of an A2A path",
    "type": "object",
    "required": ["jsonrpc", "error"],
    "properties": {
        "jsonrpc": {"const": "2.0"},
        "id": {"type": ["string", "integer", "null"]},
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}},
        },
    },
}
AG_UI_ERROR_SCHEMA: dict[str, Any] = {
    "title": "AgUiRunError",
    "description": "AG-UI's RUN_ERROR event: a run input refused before its run (a bad key is Dify's Error)",
    "type": "object",
    "required": ["type", "message"],
    "properties": {"type": {"const": "RUN_ERROR"}, "message": {"type": "string"}, "code": {"type": "string"}},
}
WIRE_ERRORS: tuple[tuple[tuple[str, ...], dict[str, Any], dict[str, Any]], ...] = (
    (
        ("/v1/chat/completions", "/v1/responses", "/v1/models"),
        OPENAI_ERROR_SCHEMA,
        {"$ref": "#/components/schemas/OpenAIError"},
    ),
    (("/a2a/",), JSON_RPC_ERROR_SCHEMA, {"$ref": "#/components/schemas/JsonRpcError"}),
    (
        ("/ag-ui",),
        AG_UI_ERROR_SCHEMA,
        {"oneOf": [{"$ref": "#/components/schemas/AgUiRunError"}, {"$ref": "#/components/schemas/Error"}]},
    ),
)

# The dependency that checks a route's credential → its security scheme.
SCHEMES: dict[str, tuple[str, dict[str, Any]]] = {
    "current_app": (
        "AppKey",
        {"type": "http", "scheme": "bearer", "description": "an app's Service API key (app-…)"},
    ),
    "dataset_key": (
        "DatasetKey",
        {"type": "http", "scheme": "bearer", "description": "a dataset API key (dataset-…)"},
    ),
    "require_admin": (
        "AdminToken",
        {"type": "http", "scheme": "bearer", "description": "the admin token (admin_token)"},
    ),
}

# Routes whose answer is a stream (``response_mode: streaming``, a re-attach)
STREAMING = {
    ("post", "/v1/chat-messages"),
    ("post", "/v1/chat/completions"),
    ("post", "/v1/responses"),
    ("post", "/a2a/{app_id}"),
    ("post", "/ag-ui"),
    ("get", "/v1/chat-messages/{task_id}/events"),
    ("post", "/v1/chat-messages/{task_id}/approvals"),
    ("get", "/v1/workflow/{task_id}/events"),
}
EVENT_STREAM: dict[str, Any] = {"schema": {"type": "string", "description": "Server-Sent Events"}}


def install(app: FastAPI) -> None:
    """Make ``app`` (built with ``openapi_url=OPENAPI_PATH``) serve this document, built once at its
    first request."""
    build: Callable[[], dict[str, Any]] = lambda: document(app)  # noqa: E731
    app.openapi = build  # type: ignore[method-assign]


def document(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema is None:
        doc = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version=app.openapi_version,
            description=app.description,
            routes=app.routes,
        )
        routes = list(_routes(app))
        _add_errors_and_security(doc, {key: scheme for key, scheme, _ in routes if scheme is not None})
        _add_bodies(doc, {key: body for key, _, body in routes if body is not None})
        _add_path_parameters(doc)
        app.openapi_schema = doc
    return app.openapi_schema


Body = tuple[type[BaseModel], bool]  # a route's JSON body model, and whether it is optional


def _routes(app: FastAPI) -> Iterator[tuple[tuple[str, str], str | None, Body | None]]:
    """((method, path), security scheme, JSON body) of every API route."""
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if not isinstance(route, APIRoute) or context.path is None:
            continue
        calls: list[Any] = [d.call for d in _dependencies(route.dependant)]
        names = [getattr(call, "__name__", "") for call in calls]
        scheme = next((SCHEMES[name][0] for name in names if name in SCHEMES), None)
        bodies = [call for call in calls if hasattr(call, "body_model")]
        body = (bodies[0].body_model, getattr(bodies[0], "body_optional", False)) if bodies else None
        for method in route.methods or ():
            yield (method.lower(), context.path), scheme, body


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dependency in dependant.dependencies:
        yield dependency
        yield from _dependencies(dependency)


def _add_bodies(doc: dict[str, Any], bodies: dict[tuple[str, str], Body]) -> None:
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for (method, path), (model, optional) in bodies.items():
        operation = doc.get("paths", {}).get(path, {}).get(method)
        if operation is None or "requestBody" in operation:
            continue
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas.setdefault(model.__name__, schema)
        ref = {"$ref": f"#/components/schemas/{model.__name__}"}
        operation["requestBody"] = {
            "required": not optional,
            "content": {"application/json": {"schema": ref}},
        }


def _add_path_parameters(doc: dict[str, Any]) -> None:
    for path, operations in doc.get("paths", {}).items():
        for operation in operations.values():
            parameters = operation.setdefault("parameters", [])
            declared = {p.get("name") for p in parameters if p.get("in") == "path"}
            for name in re.findall(r"{(\w+)}", path):
                if name not in declared:
                    parameters.append(
                        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                    )


def _add_errors_and_security(doc: dict[str, Any], schemes: dict[tuple[str, str], str]) -> None:
    components = doc.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    for _, schema, _ in WIRE_ERRORS:
        schemas[schema["title"]] = schema
    for name in ("HTTPValidationError", "ValidationError"):  # FastAPI's 422, never answered
        schemas.pop(name, None)
    components["securitySchemes"] = dict(SCHEMES.values())
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            responses["4XX"] = _error_response(path)
            scheme = schemes.get((method, path))
            if scheme is not None:
                operation["security"] = [{scheme: []}]
            if (method, path) in STREAMING:
                ok = responses.setdefault("200", {"description": "Successful Response"})
                ok.setdefault("content", {})["text/event-stream"] = EVENT_STREAM


def _error_response(path: str) -> dict[str, Any]:
    """The error body a path answers: its wire's, else Dify's."""
    for prefixes, schema, ref in WIRE_ERRORS:
        if path.startswith(prefixes):
            content = {"application/json": {"schema": ref}}
            return {"description": schema["description"], "content": content}
    return ERROR_RESPONSE
