"""Speech through an OpenAI-compatible audio API: ``POST {base}/audio/transcriptions`` (speech to text)
and ``POST {base}/audio/speech`` (text to speech, streamed).

What Dify's speech2text and tts model types do through a provider plugin, for any server that speaks
OpenAI's audio API (OpenAI itself, LocalAI, vLLM, speaches, …). Failures are the provider errors of
:mod:`loopwright.model.errors`, with the server's own message when it sent one; never the API key.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

import httpx

from loopwright.model.errors import (
    ModelAuthError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequestError,
    ModelUnavailableError,
    ProviderError,
)

__all__ = ["AudioEndpoint", "SpeechStream"]

DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
ERROR_BODY_LIMIT = 64 * 1024  # read at most this much of an error answer for its message


@dataclass(slots=True)
class SpeechStream:
    """Audio being received: ``content_type`` as the server sent it; iterate ``chunks()`` once, and
    ``aclose()`` when done (also after a partial read)."""

    content_type: str
    _response: httpx.Response

    async def chunks(self) -> AsyncGenerator[bytes, None]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except httpx.HTTPError as exc:
            raise ModelUnavailableError(f"the audio stream broke off: {type(exc).__name__}") from None
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        await self._response.aclose()


class AudioEndpoint:
    """One model on an OpenAI-compatible audio API. ``transport`` is for tests only; one HTTP client
    (connection pool) per endpoint, closed with :meth:`aclose`."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            headers=headers, timeout=timeout, transport=transport, trust_env=False
        )

    async def transcribe(
        self, audio: bytes, *, filename: str, mime_type: str, user: str | None = None
    ) -> str:
        """The text spoken in ``audio``."""
        data = {"model": self.model, "response_format": "json"}
        if user:
            data["user"] = user
        files = {"file": (filename, audio, mime_type)}
        try:
            response = await self._client.post(
                f"{self.base_url}/audio/transcriptions", data=data, files=files
            )
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None
        if response.status_code >= 400:
            raise _status_error(response.status_code, response.text[:ERROR_BODY_LIMIT])
        try:
            body: Any = response.json()
        except ValueError:
            raise ModelRequestError("the transcription server did not answer JSON") from None
        text = body.get("text") if isinstance(body, dict) else None
        if not isinstance(text, str):
            raise ModelRequestError("the transcription server's answer has no text")
        return text

    async def speak(self, text: str, *, voice: str, response_format: str = "mp3") -> SpeechStream:
        """Start speaking ``text``: returns once the server has accepted the request (an error before
        any audio is raised here, not while streaming)."""
        body = {"model": self.model, "input": text, "voice": voice, "response_format": response_format}
        request = self._client.build_request("POST", f"{self.base_url}/audio/speech", json=body)
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from None
        if response.status_code >= 400:
            try:
                detail = (await response.aread())[:ERROR_BODY_LIMIT].decode("utf-8", "replace")
            except httpx.HTTPError:
                detail = ""
            finally:
                await response.aclose()
            raise _status_error(response.status_code, detail)
        return SpeechStream(response.headers.get("content-type", "audio/mpeg"), response)

    async def aclose(self) -> None:
        await self._client.aclose()


def _unreachable(exc: httpx.HTTPError) -> ProviderError:
    return ModelUnavailableError(f"the audio server could not be reached: {type(exc).__name__}")


def _status_error(status: int, body: str) -> ProviderError:
    """The provider error of an HTTP status, with the message of an OpenAI-style error body."""
    message = _server_message(body) or f"HTTP {status}"
    if status in (401, 403):
        return ModelAuthError(f"the audio server refused the API key: {message}", status_code=status)
    if status == 404:
        return ModelNotFoundError(f"the audio server does not know this model: {message}", status_code=status)
    if status == 429:
        return ModelRateLimitError(message, status_code=status)
    if status >= 500:
        return ModelUnavailableError(f"the audio server failed: {message}", status_code=status)
    return ModelRequestError(message, status_code=status)


def _server_message(body: str) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body.strip()[:500]
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return body.strip()[:500]
