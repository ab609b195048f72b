"""Loading an API description: OpenAPI 3.x, Swagger 2.0 or an OpenAI plugin manifest, JSON or YAML.

The document is validated with openapi-spec-validator (the error names the bad path), its local
``$ref``s are resolved with jsonref, and a Swagger 2.0 document is rewritten into the OpenAPI 3 shape so
one extractor serves both. Only local references (``#/...``) are followed: a reference to another file
or a URL would be a way around the network guard, so it is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
import jsonref  # type: ignore[import-untyped]
import yaml

# openapi-spec-validator's jsonschema backend, not jsonschema-rs (which another installed tool may bring,
# and which "auto" then picks): only jsonschema's errors carry the sub-errors of a oneOf, from which a
# bad spec's message names the deepest path. A choice made in the environment is kept.
os.environ.setdefault("OPENAPI_SPEC_VALIDATOR_SCHEMA_VALIDATOR_BACKEND", "jsonschema")

from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]  # noqa: E402
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError, ValidatorDetectError
from referencing.exceptions import Unresolvable

from loopwright._threads import run_sync
from loopwright.errors import ToolError
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy, guarded_client

SpecKind = Literal["openapi3", "swagger2"]
MAX_SPEC_BYTES = 10 * 1024 * 1024
_FETCH_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


class SpecError(ToolError, ValueError):
    """The API description cannot be used; the message says where and why."""


@dataclass(frozen=True, slots=True)
class LoadedSpec:
    """A validated description in the OpenAPI 3 shape, every ``$ref`` resolved.

    ``kind`` is what the source was; ``source_url`` the URL it came from (for relative server URLs);
    ``manifest`` the plugin manifest when the source was one.
    """

    document: dict[str, Any]
    kind: SpecKind
    source: str
    source_url: str | None = None
    manifest: dict[str, Any] | None = None

    @property
    def title(self) -> str:
        info = self.document.get("info") or {}
        return str(info.get("title") or "")


def is_url(path_or_url: str) -> bool:
    return path_or_url.startswith(("http://", "https://"))


async def load_spec(path_or_url: str | Path, policy: NetworkPolicy = DEFAULT_POLICY) -> LoadedSpec:
    """Read a description from a file or an http(s) URL (through the network guard) and parse it."""
    source = str(path_or_url)
    if is_url(source):
        text, url = await fetch_text(source, policy)
        return await parse_spec_async(text, source=source, source_url=url, policy=policy)
    try:
        text = await run_sync(_read_file, source)
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot read the spec file {source}: {exc}") from None
    return await parse_spec_async(text, source=source, policy=policy)


async def parse_spec_async(
    text: str,
    *,
    source: str = "<text>",
    source_url: str | None = None,
    policy: NetworkPolicy = DEFAULT_POLICY,
) -> LoadedSpec:
    """Like :func:`parse_spec`, but follows a plugin manifest to its spec (through the guard) and
    validates in a worker thread (large specs take a while)."""
    document = parse_document(text, source)
    manifest: dict[str, Any] | None = None
    if is_plugin_manifest(document):
        manifest = document
        spec_url = manifest_spec_url(manifest, source_url)
        text, source_url = await fetch_text(spec_url, policy)
        document = parse_document(text, spec_url)
        if is_plugin_manifest(document):
            raise SpecError(f"{spec_url}: the plugin manifest's api.url points at another manifest")
    loaded: LoadedSpec = await run_sync(_prepare, document, source, source_url)
    return LoadedSpec(loaded.document, loaded.kind, source, source_url, manifest)


def _read_file(path: str) -> str:
    return Path(path).expanduser().read_text(encoding="utf-8")


def parse_spec(text: str, *, source: str = "<text>", source_url: str | None = None) -> LoadedSpec:
    """Parse, validate and resolve a description given as text. A plugin manifest needs its spec
    fetched: use :func:`parse_spec_async` for those."""
    document = parse_document(text, source)
    if is_plugin_manifest(document):
        raise SpecError(f"{source}: a plugin manifest refers to its spec by URL; load it with from_file(url)")
    return _prepare(document, source, source_url)


def parse_document(text: str, source: str) -> dict[str, Any]:
    """JSON, else YAML (as Dify tries them); the top level must be a mapping."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"{source}: neither JSON nor YAML: {_first_line(str(exc))}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{source}: expected an OpenAPI/Swagger document (a mapping at the top level)")
    return data


def is_plugin_manifest(document: Mapping[str, Any]) -> bool:
    api = document.get("api")
    return "schema_version" in document and isinstance(api, Mapping) and "url" in api


def manifest_spec_url(manifest: Mapping[str, Any], manifest_url: str | None) -> str:
    api = manifest["api"]
    kind = str(api.get("type", "openapi")).lower()
    if kind != "openapi":
        raise SpecError(f"the plugin manifest's api.type is {kind!r}; only 'openapi' is supported")
    url = str(api["url"])
    if manifest_url:
        url = str(httpx.URL(manifest_url).join(url))
    if not is_url(url):
        raise SpecError(f"the plugin manifest's api.url {url!r} is not an http(s) URL")
    return url


async def fetch_text(url: str, policy: NetworkPolicy) -> tuple[str, str]:
    """The body of ``url`` as text and the final URL after redirects, through the guard."""
    try:
        async with guarded_client(policy, timeout=_FETCH_TIMEOUT) as client, client.stream("GET", url) as r:
            if r.status_code >= 400:
                raise SpecError(f"cannot fetch {url}: status {r.status_code}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in r.aiter_bytes():
                size += len(chunk)
                if size > MAX_SPEC_BYTES:
                    raise SpecError(f"{url}: the spec is larger than {MAX_SPEC_BYTES // (1024 * 1024)} MB")
                chunks.append(chunk)
            return b"".join(chunks).decode(r.charset_encoding or "utf-8", errors="replace"), str(r.url)
    except httpx.HTTPError as exc:
        raise SpecError(f"cannot fetch {url}: {exc or type(exc).__name__}") from None


# --- validation and resolution --------------------------------------------------------------------


def _prepare(document: dict[str, Any], source: str, source_url: str | None) -> LoadedSpec:
    kind = detect_kind(document, source)
    reject_external_refs(document, source)
    validate_document(document, source)
    resolved = resolve_refs(document, source)
    if kind == "swagger2":
        resolved = swagger_to_openapi3(resolved)
    return LoadedSpec(resolved, kind, source, source_url)


def detect_kind(document: Mapping[str, Any], source: str) -> SpecKind:
    version = str(document.get("openapi") or "")
    if version.startswith("3."):
        return "openapi3"
    if str(document.get("swagger") or "") == "2.0":
        return "swagger2"
    if version:
        raise SpecError(f"{source}: OpenAPI version {version!r} is not supported (3.x or Swagger 2.0)")
    raise SpecError(
        f"{source}: not an OpenAPI 3.x, Swagger 2.0 or plugin manifest document "
        "(no 'openapi', 'swagger' or 'schema_version' + 'api.url' key)"
    )


def reject_external_refs(document: Any, source: str) -> None:
    for path, ref in _refs(document, "$"):
        if not ref.startswith("#"):
            raise SpecError(
                f"{source}: at {path}: the reference {ref!r} points outside this document; "
                "only local references ('#/...') are supported"
            )


def validate_document(document: Mapping[str, Any], source: str) -> None:
    try:
        validate(document)
    except OpenAPIValidationError as exc:
        error = _deepest(exc)
        raise SpecError(
            f"{source}: invalid spec at {_json_path(error.absolute_path)}: {_first_line(error.message)}"
        ) from None
    except Unresolvable as exc:
        raise SpecError(f"{source}: the reference {exc.ref!r} points at nothing in this document") from None
    except ValidatorDetectError:
        raise SpecError(f"{source}: the document's version could not be detected") from None
    except (ValueError, TypeError, KeyError, RecursionError) as exc:  # malformed beyond the schema
        raise SpecError(f"{source}: invalid spec: {_first_line(str(exc))}") from None


def resolve_refs(document: dict[str, Any], source: str) -> dict[str, Any]:
    """``document`` with every local ``$ref`` replaced by its target (shared, possibly cyclic objects)."""

    def refuse(uri: str) -> Any:
        raise SpecError(f"{source}: external reference {uri!r} is not supported")

    try:
        resolved = jsonref.replace_refs(document, loader=refuse, proxies=False, lazy_load=False)
    except jsonref.JsonRefError as exc:
        raise SpecError(f"{source}: {_first_line(str(exc))}") from None
    assert isinstance(resolved, dict)
    return resolved


def _refs(node: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield path, ref
        for key, value in node.items():
            yield from _refs(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _refs(value, f"{path}[{i}]")


def _deepest(error: ValidationError) -> ValidationError:
    """The most specific error under a ``oneOf``/``anyOf`` failure (the longest path wins)."""
    best = error
    for sub in error.context or ():
        if sub.validator == "required" and "'$ref'" in sub.message:
            continue  # the "or a $ref" alternative every object has: never the helpful message
        candidate = _deepest(sub)
        deeper = len(candidate.absolute_path) - len(best.absolute_path)
        if deeper > 0 or (deeper == 0 and best is error):
            best = candidate
    return best


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


# --- Swagger 2.0 → OpenAPI 3 ----------------------------------------------------------------------

_SWAGGER_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
)
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def swagger_to_openapi3(doc: dict[str, Any]) -> dict[str, Any]:
    """The parts of a (resolved) Swagger 2.0 document that tools need, in the OpenAPI 3 shape."""
    scheme = (doc.get("schemes") or ["https"])[0]
    base = str(doc.get("basePath") or "")
    host = doc.get("host")
    url = f"{scheme}://{host}{base}" if host else (base or "/")
    consumes = list(doc.get("consumes") or ["application/json"])
    paths: dict[str, Any] = {}
    for path, item in (doc.get("paths") or {}).items():
        shared = list(item.get("parameters") or [])
        new_item: dict[str, Any] = {}
        for method in _METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                params = merge_params(shared, op.get("parameters") or [])
                new_item[method] = _swagger_operation(op, params, list(op.get("consumes") or consumes))
        paths[path] = new_item
    return {"openapi": "3.0.3", "info": doc.get("info") or {}, "servers": [{"url": url}], "paths": paths}


def _swagger_operation(
    op: dict[str, Any], params: list[dict[str, Any]], consumes: list[str]
) -> dict[str, Any]:
    out = {k: v for k, v in op.items() if k in ("operationId", "summary", "description", "deprecated")}
    plain: list[dict[str, Any]] = []
    form: list[dict[str, Any]] = []
    for p in params:
        where = p.get("in")
        if where == "body":
            out["requestBody"] = _swagger_body(p, consumes)
        elif where == "formData":
            form.append(p)
        else:
            entry: dict[str, Any] = {k: p[k] for k in ("name", "in", "required", "description") if k in p}
            entry["schema"] = _swagger_param_schema(p)
            plain.append(entry)
    if form:
        out["requestBody"] = _swagger_form_body(form, consumes)
    out["parameters"] = plain
    return out


def _swagger_body(p: Mapping[str, Any], consumes: list[str]) -> dict[str, Any]:
    """An ``in: body`` parameter as a request body, under the first JSON media type consumed."""
    media = next((c for c in consumes if "json" in c), consumes[0] if consumes else "application/json")
    return {
        "required": bool(p.get("required")),
        "description": p.get("description", ""),
        "content": {media: {"schema": p.get("schema") or {}}},
    }


def _swagger_form_body(form: list[dict[str, Any]], consumes: list[str]) -> dict[str, Any]:
    """``in: formData`` parameters as one object body: multipart if a file is among them (or the
    operation consumes multipart), else URL-encoded."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for p in form:
        file = p.get("type") == "file"
        props[p["name"]] = {"type": "string", "format": "binary"} if file else _swagger_param_schema(p)
        if p.get("required"):
            required.append(p["name"])
    has_file = any(s.get("format") == "binary" for s in props.values())
    multipart = has_file or "multipart/form-data" in consumes
    media = "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
    schema = {"type": "object", "properties": props, "required": required}
    return {"required": bool(required), "content": {media: {"schema": schema}}}


def _swagger_param_schema(p: Mapping[str, Any]) -> dict[str, Any]:
    schema = {k: p[k] for k in _SWAGGER_SCHEMA_KEYS if k in p}
    if "description" in p:
        schema["description"] = p["description"]
    return schema


def merge_params(shared: list[Any], own: list[Any]) -> list[dict[str, Any]]:
    """Path-level parameters overridden by the operation's own, matched by (name, in)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for p in [*shared, *own]:
        if isinstance(p, dict) and "name" in p:
            merged[(str(p["name"]), str(p.get("in", "")))] = p
    return list(merged.values())
