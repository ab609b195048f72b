"""``/v1/audio-to-text`` and ``/v1/text-to-audio`` through a real HTTP server on 127.0.0.1 that answers
like OpenAI's ``/audio/transcriptions`` and ``/audio/speech``; loopwright is served by uvicorn too, so
the audio is seen to stream through. Error bodies are Dify's (``controllers/service_api/app/audio.py``,
``services/audio_service.py``)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from loopwright.app.files.speech import FILE_SIZE_LIMIT
from loopwright.config import Settings
from loopwright.server.app import create_app
from loopwright.store import repositories as repo
from loopwright.store.db import Database
from tests.live_server import serving
from tests.server.conftest import ServiceApp

MP3 = b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\xff\xfb\x90\x00" * 64


@dataclass
class FakeOpenAI:
    """What the fake audio server was asked, and a gate that holds the rest of a speech stream."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    def app(self) -> Starlette:
        async def transcriptions(request: Request) -> Response:
            async with request.form() as form:
                upload = form["file"]
                assert not isinstance(upload, str)
                audio = await upload.read()
                model, user, filename = form.get("model"), form.get("user"), upload.filename
                content_type = upload.content_type
            seen = {
                "path": "transcriptions",
                "auth": request.headers.get("authorization"),
                "model": model,
                "user": user,
                "filename": filename,
                "content_type": content_type,
                "size": len(audio),
            }
            self.requests.append(seen)
            if model == "missing-model":
                error = {
                    "message": "The model `missing-model` does not exist",
                    "type": "invalid_request_error",
                }
                return JSONResponse({"error": error}, status_code=404)
            return JSONResponse({"text": f"heard {len(audio)} bytes"})

        async def speech(request: Request) -> Response:
            body = await request.json()
            self.requests.append({"path": "speech", "auth": request.headers.get("authorization"), **body})
            if body["voice"] == "nobody":
                return JSONResponse({"error": {"message": "unknown voice 'nobody'"}}, status_code=400)

            async def audio() -> AsyncIterator[bytes]:
                yield MP3[:16]
                await self.gate.wait()  # the rest only once the client has the first part
                yield MP3[16:]

            return StreamingResponse(audio(), media_type="audio/mpeg")

        return Starlette(
            routes=[
                Route("/v1/audio/transcriptions", transcriptions, methods=["POST"]),
                Route("/v1/audio/speech", speech, methods=["POST"]),
            ]
        )


@pytest.fixture
async def openai() -> AsyncIterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    async with serving(fake.app()) as url:
        yield fake, f"{url}/v1"


@pytest.fixture
async def lw(
    db: Database, openai: tuple[FakeOpenAI, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(openai_base_url=openai[1], openai_api_key="sk-audio-test")
    app = create_app(db, settings, ping_interval=0.05)
    async with serving(app) as url, httpx.AsyncClient(base_url=url, trust_env=False) as client:
        yield client


async def make_app(db: Database, **config: Any) -> ServiceApp:
    async with db.transaction() as s:
        app, _ = await repo.create_app(s, "voice", {"model": "local", **config})
        key = await repo.create_api_key(s, app.id)
        return ServiceApp(app.id, key.token)


SPEECH = {
    "speech_to_text": {"enabled": True, "model": "openai-compatible:whisper-small"},
    "text_to_speech": {"enabled": True, "model": "openai-compatible:tts-1", "voice": "nova"},
}


def dify_error(status: int, code: str, message: str) -> tuple[int, dict[str, Any]]:
    return status, {"code": code, "message": message, "status": status}


async def test_audio_to_text_sends_the_file_to_the_audio_model(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str]
) -> None:
    app = await make_app(db, **SPEECH)
    files = {"file": ("hello.mp3", MP3, "audio/mpeg")}
    r = await lw.post("/v1/audio-to-text", data={"user": "alice"}, files=files, headers=app.headers)
    assert (r.status_code, r.json()) == (200, {"text": f"heard {len(MP3)} bytes"})
    [seen] = openai[0].requests
    assert seen == {
        "path": "transcriptions",
        "auth": "Bearer sk-audio-test",
        "model": "whisper-small",
        "user": "alice",
        "filename": "hello.mp3",
        "content_type": "audio/mpeg",
        "size": len(MP3),
    }


async def test_audio_to_text_errors_are_difys(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str]
) -> None:
    off = await make_app(db)
    on = await make_app(db, **SPEECH)
    no_model = await make_app(db, speech_to_text={"enabled": True, "model": "local"})
    missing = await make_app(db, speech_to_text={"enabled": True, "model": "openai-compatible:missing-model"})
    mp3 = {"file": ("a.mp3", MP3, "audio/mpeg")}

    async def post(app: ServiceApp, **kw: Any) -> tuple[int, Any]:
        r = await lw.post("/v1/audio-to-text", headers=app.headers, **kw)
        return r.status_code, r.json()

    assert await post(off, files=mp3) == dify_error(400, "invalid_param", "Speech to text is not enabled")
    assert await post(on, data={"user": "a"}) == dify_error(
        400, "no_audio_uploaded", "Please upload your audio."
    )
    assert await post(on, files={"file": ("a.txt", b"words", "text/plain")}) == dify_error(
        415, "unsupported_audio_type", "Audio type not allowed."
    )
    big = {"file": ("big.wav", b"\0" * (FILE_SIZE_LIMIT + 1), "audio/wav")}
    assert await post(on, files=big) == dify_error(413, "audio_too_large", "Audio size larger than 30 mb")
    huge = {"file": ("huge.wav", b"\0" * (FILE_SIZE_LIMIT + 2 * 1024 * 1024), "audio/wav")}
    assert await post(on, files=huge) == dify_error(413, "audio_too_large", "Audio size larger than 30 mb")
    assert await post(no_model, files=mp3) == dify_error(
        400, "provider_not_support_speech_to_text", "Provider not support speech to text."
    )
    status, body = await post(missing, files=mp3)
    assert (status, body["code"]) == (400, "completion_request_error")
    assert "The model `missing-model` does not exist" in body["message"]
    assert "sk-audio-test" not in json.dumps(body)
    r = await lw.post("/v1/audio-to-text", files=mp3, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    assert [r["path"] for r in openai[0].requests] == ["transcriptions"]  # only the last app got so far


async def test_text_to_audio_streams_the_answer_as_it_comes(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str]
) -> None:
    fake = openai[0]
    app = await make_app(db, **SPEECH)
    body = {"text": "  Hello there.  ", "user": "alice", "streaming": True}
    async with lw.stream("POST", "/v1/text-to-audio", json=body, headers=app.headers) as r:
        assert r.status_code == 200 and r.headers["content-type"] == "audio/mpeg"
        chunks = r.aiter_bytes()
        first = await asyncio.wait_for(chunks.__anext__(), 10)  # before the server sent the rest
        assert MP3.startswith(first) and len(first) < len(MP3)
        fake.gate.set()
        rest = b"".join([c async for c in chunks])
    assert first + rest == MP3
    [seen] = fake.requests
    assert seen == {
        "path": "speech",
        "auth": "Bearer sk-audio-test",
        "model": "tts-1",
        "input": "Hello there.",
        "voice": "nova",  # the app's voice
        "response_format": "mp3",
    }


async def test_text_to_audio_reads_a_message_answer_and_answers_null_for_an_unknown_one(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str], tmp_path: Path
) -> None:
    fake = openai[0]
    fake.gate.set()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": ["The answer is 5."], "features": []}), encoding="utf-8")
    app = await make_app(db, **SPEECH, model=f"scripted:{script}")
    chat = {"inputs": {}, "query": "2+3?", "user": "alice", "response_mode": "blocking"}
    message_id = (await lw.post("/v1/chat-messages", json=chat, headers=app.headers)).json()["message_id"]
    r = await lw.post(
        "/v1/text-to-audio",
        json={"message_id": message_id, "user": "alice", "voice": "echo"},
        headers=app.headers,
    )
    assert (r.status_code, r.content) == (200, MP3)
    assert fake.requests[-1]["input"] == "The answer is 5." and fake.requests[-1]["voice"] == "echo"
    for who in ("mallory", None):  # another end user's message is not theirs to hear
        body = {"message_id": message_id, **({"user": who} if who else {})}
        r = await lw.post("/v1/text-to-audio", json=body, headers=app.headers)
        assert (r.status_code, r.json()) == (200, None)
    r = await lw.post("/v1/text-to-audio", json={"message_id": "nope", "user": "a"}, headers=app.headers)
    assert (r.status_code, r.json()) == (200, None)
    assert len(fake.requests) == 1


async def test_text_to_audio_errors_are_difys(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str]
) -> None:
    openai[0].gate.set()
    off = await make_app(db)
    on = await make_app(db, **SPEECH)
    no_model = await make_app(db, text_to_speech={"enabled": True, "model": "local"})

    async def post(app: ServiceApp, body: Any) -> tuple[int, Any]:
        r = await lw.post("/v1/text-to-audio", json=body, headers=app.headers)
        return r.status_code, r.json()

    assert await post(off, {"text": "hi"}) == dify_error(400, "invalid_param", "TTS is not enabled")
    assert await post(on, {"user": "a"}) == dify_error(400, "invalid_param", "Text is required")
    assert await post(on, {"text": ""}) == dify_error(400, "invalid_param", "Text is required")
    assert await post(no_model, {"text": "hi"}) == dify_error(
        400, "provider_not_support_text_to_speech", "Provider not support text to speech."
    )
    status, body = await post(on, {"text": "hi", "voice": "nobody"})
    assert (status, body["code"]) == (400, "completion_request_error") and "unknown voice" in body["message"]
    r = await lw.post("/v1/text-to-audio", content=b"{bad", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401  # the key before the body, as Dify


async def test_parameters_report_the_speech_features(lw: httpx.AsyncClient, db: Database) -> None:
    app = await make_app(db, **SPEECH)
    body = (await lw.get("/v1/parameters", headers=app.headers)).json()
    assert body["speech_to_text"] == {"enabled": True}
    assert body["text_to_speech"] == {
        "enabled": True,
        "voice": "nova",
        "language": "",
        "autoPlay": "disabled",
    }
    off = (await lw.get("/v1/parameters", headers=(await make_app(db)).headers)).json()
    assert off["speech_to_text"] == {"enabled": False}
    assert off["text_to_speech"] == {"enabled": False, "voice": "", "language": ""}


async def test_auto_play_speaks_a_streamed_answer_after_message_end(
    lw: httpx.AsyncClient, db: Database, openai: tuple[FakeOpenAI, str], tmp_path: Path
) -> None:
    from tests.sse import parse_sse

    fake = openai[0]
    fake.gate.set()
    script = tmp_path / "answers.json"
    script.write_text(
        json.dumps({"replies": ["Hello there.", "Again.", "Quiet."], "features": []}), encoding="utf-8"
    )
    tts = {"enabled": True, "model": "openai-compatible:tts-1", "voice": "nova", "autoPlay": "enabled"}
    app = await make_app(db, model=f"scripted:{script}", text_to_speech=tts)
    body = {"inputs": {}, "query": "hi", "user": "alice", "response_mode": "streaming"}

    events = parse_sse((await lw.post("/v1/chat-messages", json=body, headers=app.headers)).text, pings=False)
    names = [e["event"] for e in events]
    end = names.index("message_end")
    assert set(names[end + 1 : -1]) == {"tts_message"} and names[-1] == "tts_message_end"
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[end + 1 : -1])
    assert audio == MP3 and events[-1]["audio"] == ""
    assert {e["message_id"] for e in events} == {events[0]["message_id"]} and events[-1]["task_id"]
    assert fake.requests[-1]["input"] == "Hello there." and fake.requests[-1]["voice"] == "nova"

    blocking = await lw.post(
        "/v1/chat-messages", json={**body, "response_mode": "blocking"}, headers=app.headers
    )
    assert blocking.json()["answer"] == "Again." and len(fake.requests) == 1  # nobody listens: no speech

    broken = {**tts, "voice": "nobody"}  # the audio server refuses: the stream still ends well
    quiet = await make_app(db, model=f"scripted:{script}", text_to_speech=broken)
    events = parse_sse(
        (await lw.post("/v1/chat-messages", json=body, headers=quiet.headers)).text, pings=False
    )
    assert [e["event"] for e in events][-2:] == ["message_end", "tts_message_end"]
