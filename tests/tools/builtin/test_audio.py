"""``tts`` and ``asr`` against a real OpenAI-compatible audio server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from loopwright.tools.base import BlobMessage
from loopwright.tools.builtin.audio import AudioEndpoint, asr_tool, tts_tool
from loopwright.tools.engine import ToolEngine
from loopwright.tools.net import NetworkPolicy
from tests.live_server import serving

LOCAL = NetworkPolicy.from_strings(["127.0.0.1"])
SPEECH = b"ID3\x04fake-mp3-frames"
seen: list[dict[str, Any]] = []


async def speech(request: Request) -> Response:
    seen.append({"path": "speech", "auth": request.headers.get("authorization"), **(await request.json())})
    return Response(SPEECH, media_type="audio/mpeg")


async def transcriptions(request: Request) -> Response:
    async with request.form() as form:
        upload = form["file"]
        assert not isinstance(upload, str)
        seen.append({"path": "transcriptions", "model": form["model"], "bytes": await upload.read()})
    return JSONResponse({"text": "hello from the recording"})


async def recording(_: Request) -> Response:
    return Response(b"RIFF....WAVEfmt ", media_type="audio/wav")


async def broken(_: Request) -> Response:
    return JSONResponse({"error": {"message": "model not found"}}, status_code=404)


APP = Starlette(
    routes=[
        Route("/v1/audio/speech", speech, methods=["POST"]),
        Route("/v1/audio/transcriptions", transcriptions, methods=["POST"]),
        Route("/broken/v1/audio/speech", broken, methods=["POST"]),
        Route("/files/recording.wav", recording),
    ]
)


async def test_tts_makes_an_mp3_with_the_preset_model_and_voice() -> None:
    seen.clear()
    async with serving(APP) as url:
        tool = tts_tool(AudioEndpoint(f"{url}/v1", "sk-test")).configure(model="tts-1-hd", voice="nova")
        result = await ToolEngine([tool]).invoke("tts", {"text": "Good morning"})
    assert seen == [
        {
            "path": "speech",
            "auth": "Bearer sk-test",
            "model": "tts-1-hd",
            "voice": "nova",
            "input": "Good morning",
            "response_format": "mp3",
        }
    ]
    blobs = [o for o in result.outputs if isinstance(o, BlobMessage)]
    assert [(b.data, b.mime_type) for b in blobs] == [(SPEECH, "audio/mpeg")]


async def test_asr_transcribes_a_file_fetched_through_the_guard() -> None:
    seen.clear()
    async with serving(APP) as url:
        tool = asr_tool(AudioEndpoint(f"{url}/v1"), LOCAL)
        result = await ToolEngine([tool]).invoke("asr", {"audio_file": f"{url}/files/recording.wav"})
    assert result.observation == "hello from the recording"
    assert seen == [{"path": "transcriptions", "model": "whisper-1", "bytes": b"RIFF....WAVEfmt "}]


async def test_asr_refuses_a_private_address_the_policy_does_not_allow() -> None:
    async with serving(APP) as url:
        tool = asr_tool(AudioEndpoint(f"{url}/v1"))  # default policy: loopback refused
        result = await ToolEngine([tool]).invoke("asr", {"audio_file": f"{url}/files/recording.wav"})
    assert result.observation.startswith("tool invoke error") and "blocked request" in result.observation


async def test_endpoint_errors_and_missing_configuration_are_observations() -> None:
    async with serving(APP) as url:
        failing = await ToolEngine([tts_tool(AudioEndpoint(f"{url}/broken/v1"))]).invoke(
            "tts", {"text": "hi"}
        )
    assert "answered 404" in failing.observation and "model not found" in failing.observation
    unset = await ToolEngine([tts_tool(AudioEndpoint())]).invoke("tts", {"text": "hi"})
    assert "set OPENAI_BASE_URL" in unset.observation
