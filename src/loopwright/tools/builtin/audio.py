"""Dify's ``audio`` tools: ``tts`` (text to speech) and ``asr`` (speech to text), through an
OpenAI-compatible audio endpoint (``POST {base}/audio/speech`` and ``{base}/audio/transcriptions``).

The endpoint is the operator's (the settings' OpenAI base URL and key), so it is called directly; the
audio file ``asr`` transcribes comes from the model, so it is fetched through the SSRF guard. The model
and voice a Dify app preset (``model``, ``voice``) are ``form`` parameters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from loopwright.tools.base import (
    BlobMessage,
    TextMessage,
    Tool,
    ToolContext,
    ToolInvokeError,
    ToolOutput,
    ToolParameter,
)
from loopwright.tools.net import DEFAULT_POLICY, NetworkPolicy, guarded_client, read_limited

MAX_AUDIO_BYTES = 25 * 1024 * 1024  # OpenAI's own upload limit for transcriptions
MAX_TEXT_CHARS = 4096  # OpenAI's limit for one speech request
TIMEOUT = httpx.Timeout(60.0, connect=10.0)
_SPEECH_TYPES = {
    "mp3": "audio/mpeg",
    "opus": "audio/opus",
    "aac": "audio/aac",
    "flac": "audio/flac",
    "wav": "audio/wav",
}


@dataclass(frozen=True)
class AudioEndpoint:
    """Where speech is made and transcribed: an OpenAI-compatible base URL (``…/v1``) and its key."""

    base_url: str | None = None
    api_key: str | None = None
    tts_model: str = "tts-1"
    voice: str = "alloy"
    asr_model: str = "whisper-1"

    def url(self, path: str) -> str:
        if not self.base_url:
            raise ToolInvokeError(
                "the audio tools need an OpenAI-compatible endpoint: set OPENAI_BASE_URL and OPENAI_API_KEY"
            )
        return f"{self.base_url.rstrip('/')}/{path}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


def tts_tool(endpoint: AudioEndpoint, *, transport: httpx.AsyncBaseTransport | None = None) -> Tool:
    """``tts``: the text as an MP3 file (a ``blob`` the server stores and sends as a ``message_file``)."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        text = str(args.get("text") or "").strip()
        if not text:
            raise ToolInvokeError("there is no text to speak")
        if len(text) > MAX_TEXT_CHARS:
            raise ToolInvokeError(f"the text is longer than {MAX_TEXT_CHARS} characters")
        body = {
            "model": str(args.get("model") or endpoint.tts_model),
            "voice": str(args.get("voice") or endpoint.voice),
            "input": text,
            "response_format": "mp3",
        }
        async with httpx.AsyncClient(timeout=TIMEOUT, transport=transport) as client:
            response = await _post(client, endpoint.url("audio/speech"), endpoint, json=body)
        yield BlobMessage(response.content, _SPEECH_TYPES["mp3"], "speech.mp3")

    return Tool(
        name="tts",
        label="Text To Speech",
        description="Convert text to audio file.",
        parameters=(
            ToolParameter("text", "string", required=True, description="The text to be converted."),
            ToolParameter("model", "string", form="form"),
            ToolParameter("voice", "string", form="form"),
        ),
        invoke=invoke,
    )


def asr_tool(
    endpoint: AudioEndpoint,
    policy: NetworkPolicy = DEFAULT_POLICY,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
) -> Tool:
    """``asr``: the text spoken in an audio file given by its URL (a file of the conversation, or any
    public URL the network policy allows)."""

    async def invoke(args: dict[str, Any], ctx: ToolContext) -> AsyncIterator[ToolOutput]:
        url = str(args.get("audio_file") or "").strip()
        if not url.startswith(("http://", "https://")):
            raise ToolInvokeError(f"audio_file must be the audio file's http(s) URL, got {url!r}")
        audio, mime = await _download(url, policy)
        name = url.rsplit("/", 1)[-1].split("?", 1)[0] or "audio"
        files = {"file": (name, audio, mime)}
        data = {"model": str(args.get("model") or endpoint.asr_model)}
        async with httpx.AsyncClient(timeout=TIMEOUT, transport=transport) as client:
            response = await _post(
                client, endpoint.url("audio/transcriptions"), endpoint, data=data, files=files
            )
        try:
            text = response.json().get("text", "")
        except ValueError:
            text = response.text
        yield TextMessage(str(text))

    return Tool(
        name="asr",
        label="Speech To Text",
        description="Convert audio file to text.",
        parameters=(
            ToolParameter(
                "audio_file",
                "string",
                required=True,
                description="The URL of the audio file to be converted.",
            ),
            ToolParameter("model", "string", form="form"),
        ),
        invoke=invoke,
    )


async def _post(
    client: httpx.AsyncClient, url: str, endpoint: AudioEndpoint, **kwargs: Any
) -> httpx.Response:
    try:
        response = await client.post(url, headers=endpoint.headers(), **kwargs)
    except httpx.HTTPError as exc:
        raise ToolInvokeError(f"the audio endpoint failed: {exc or type(exc).__name__}") from None
    if response.status_code >= 400:
        raise ToolInvokeError(f"the audio endpoint answered {response.status_code}: {response.text[:300]}")
    return response


async def _download(url: str, policy: NetworkPolicy) -> tuple[bytes, str]:
    try:
        async with guarded_client(policy, timeout=TIMEOUT) as client, client.stream("GET", url) as response:
            if response.status_code >= 400:
                raise ToolInvokeError(f"fetching {url} failed with status {response.status_code}")
            body, truncated = await read_limited(response, MAX_AUDIO_BYTES)
            mime = response.headers.get("content-type", "application/octet-stream").split(";")[0]
    except httpx.HTTPError as exc:
        raise ToolInvokeError(f"fetching {url} failed: {exc or type(exc).__name__}") from None
    if truncated:
        raise ToolInvokeError(f"the audio file is larger than {MAX_AUDIO_BYTES // (1024 * 1024)} MB")
    return body, mime
