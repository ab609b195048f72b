"""Calling one operation: the tool's arguments placed into path, query, headers, cookies and body, the
request sent through the network guard, the response turned into tool outputs."""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from loopwright.tools.base import (
    BlobMessage,
    JsonMessage,
    TextMessage,
    ToolInvokeError,
    ToolOutput,
    ToolParameterValidationError,
)
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy, guarded_transport, read_limited
from loopwright.tools.openapi.auth import APIAuth, AuthTransport
from loopwright.tools.openapi.operations import Binding, Operation

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)  # Dify's API_TOOL_DEFAULT_{CONNECT,READ}_TIMEOUT
MAX_RESPONSE_BYTES = 5 * 1024 * 1024
ERROR_EXCERPT = 500
USER_AGENT = "loopwright-openapi-tool/1"


@dataclass(frozen=True, slots=True)
class CallSettings:
    auth: APIAuth = field(default_factory=APIAuth)
    policy: NetworkPolicy = DEFAULT_POLICY
    timeout: httpx.Timeout = field(default_factory=lambda: DEFAULT_TIMEOUT)
    max_response_bytes: int = MAX_RESPONSE_BYTES


@dataclass(slots=True)
class RequestParts:
    url: str
    params: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    whole_body: Any = None
    files: list[tuple[str, tuple[str | None, bytes | str, str | None]]] = field(default_factory=list)


def build_request(op: Operation, args: Mapping[str, Any]) -> RequestParts:
    """Place each argument where its binding says; a missing required one is a validation error."""
    path = op.path
    parts = RequestParts("")
    for param in op.parameters:
        binding = op.bindings[param.name]
        if param.name not in args or args[param.name] is None:
            if param.required:
                raise ToolParameterValidationError(f"missing required parameter {param.name!r}")
            continue
        value = args[param.name]
        if binding.location == "path":
            path = path.replace("{" + binding.name + "}", quote(_text(value), safe=""))
        elif binding.location == "query":
            parts.params.extend(_query_pairs(binding.name, value))
        elif binding.location == "header":
            parts.headers[binding.name] = _text(value)
        elif binding.location == "cookie":
            parts.cookies[binding.name] = _text(value)
        else:
            _place_body(parts, binding, value)
    leftover = re.search(r"\{([^}]+)\}", path)
    if leftover:
        raise ToolParameterValidationError(f"missing required path parameter {leftover.group(1)!r}")
    parts.url = op.server_url.rstrip("/") + "/" + path.lstrip("/")
    return parts


def _place_body(parts: RequestParts, binding: Binding, value: Any) -> None:
    if binding.whole_body:
        parts.whole_body = value
    elif binding.binary:
        content = value.encode() if isinstance(value, str) else json.dumps(value).encode()
        guessed = mimetypes.guess_type(binding.name)[0]
        parts.files.append((binding.name, (binding.name, content, guessed or "application/octet-stream")))
    else:
        parts.body[binding.name] = value


async def call_operation(op: Operation, args: Mapping[str, Any], settings: CallSettings) -> list[ToolOutput]:
    """Send the operation's request and turn the response into outputs (Dify's rules, §6.5)."""
    parts = build_request(op, args)
    auth = settings.auth
    shown = auth.redact(parts.url)
    transport = AuthTransport(guarded_transport(settings.policy), auth, op.server_url)
    try:
        async with (
            httpx.AsyncClient(
                transport=transport, timeout=settings.timeout, follow_redirects=True, trust_env=False
            ) as client,
            client.stream(op.method, parts.url, **_send_options(op, parts)) as response,
        ):
            body, truncated = await read_limited(response, settings.max_response_bytes)
            return _outputs(op, response, body, truncated, auth)
    except httpx.TimeoutException as exc:
        raise ToolInvokeError(f"{op.method} {shown} timed out ({type(exc).__name__})") from None
    except httpx.HTTPError as exc:
        raise ToolInvokeError(
            auth.redact(f"{op.method} {shown} failed: {exc or type(exc).__name__}")
        ) from None


def _send_options(op: Operation, parts: RequestParts) -> dict[str, Any]:
    headers = {"User-Agent": USER_AGENT, **parts.headers}
    if parts.cookies:
        # httpx deprecates per-request cookies; one header says the same thing.
        headers["Cookie"] = "; ".join(f"{k}={quote(v, safe='')}" for k, v in parts.cookies.items())
    options: dict[str, Any] = {"params": parts.params, "headers": headers}
    has_body = bool(parts.body or parts.files) or parts.whole_body is not None
    if not has_body or op.body_kind is None:
        return options
    payload = parts.whole_body if parts.whole_body is not None else parts.body
    if op.body_kind == "json":
        options["content"] = json.dumps(payload, ensure_ascii=False).encode()
        headers["Content-Type"] = op.body_media_type or "application/json"
    elif op.body_kind == "form":
        options["data"] = _form_fields(payload)
    elif op.body_kind == "multipart":
        fields = [(k, (None, v, None)) for k, vs in _form_fields(payload).items() for v in _listed(vs)]
        options["files"] = [*fields, *parts.files]  # in files= so httpx always sends multipart
    else:
        options["content"] = payload if isinstance(payload, str | bytes) else json.dumps(payload)
        headers["Content-Type"] = op.body_media_type or "text/plain"
    return options


def _form_fields(payload: Any) -> dict[str, str | list[str]]:
    if not isinstance(payload, Mapping):
        return {"body": _text(payload)}
    return {str(k): [_text(x) for x in v] if isinstance(v, list) else _text(v) for k, v in payload.items()}


def _listed(value: str | list[str]) -> list[str]:
    return value if isinstance(value, list) else [value]


def _query_pairs(name: str, value: Any) -> list[tuple[str, str]]:
    """OpenAPI's default query style (form, exploded): a list repeats the name, an object spreads its
    keys."""
    if isinstance(value, list):
        return [(name, _text(v)) for v in value]
    if isinstance(value, Mapping):
        return [(str(k), _text(v)) for k, v in value.items()]
    return [(name, _text(value))]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _outputs(
    op: Operation, response: httpx.Response, body: bytes, truncated: bool, auth: APIAuth
) -> list[ToolOutput]:
    mime = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    text = body.decode(response.charset_encoding or "utf-8", errors="replace")
    if response.status_code >= 400:
        excerpt = " ".join(auth.redact(text).split())
        if len(excerpt) > ERROR_EXCERPT:
            excerpt = excerpt[:ERROR_EXCERPT] + " …"
        # Dify's wording, so prompts written for Dify read the same.
        raise ToolInvokeError(f"Request failed with status code {response.status_code} and {excerpt}")
    note = f"\n[truncated: the response is larger than {len(body)} bytes]" if truncated else ""
    if ("json" in mime or not mime) and not truncated:
        try:
            data = json.loads(text) if text.strip() else None
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict | list):
            data = auth.redact_data(data)
            # The text is the JSON itself, so the engine shows it once (Dify shows the raw body too).
            return [JsonMessage(data), TextMessage(json.dumps(data, ensure_ascii=False))]
    if mime and not _is_text(mime):
        return [BlobMessage(body, mime, _filename(response, op, mime))]
    if not text.strip():
        return [TextMessage(f"Request succeeded with status code {response.status_code} and an empty body.")]
    return [TextMessage(auth.redact(text) + note)]


def _is_text(mime: str) -> bool:
    return mime.startswith("text/") or any(k in mime for k in ("json", "xml", "javascript", "yaml"))


def _filename(response: httpx.Response, op: Operation, mime: str) -> str:
    disposition = response.headers.get("content-disposition", "")
    match = re.search(r'filename="?([^";]+)"?', disposition)
    if match:
        return match.group(1).strip().split("/")[-1]
    return f"{op.name}{mimetypes.guess_extension(mime) or '.bin'}"
