"""``POST /v1/audio-to-text`` and ``POST /v1/text-to-audio``: Dify's speech endpoints, through the
app's OpenAI-compatible audio model (:mod:`loopwright.app.files.speech`).

Speech to text takes a multipart ``file`` (and an optional ``user``) and answers ``{"text"}``; the body
is refused with Dify's 413 as soon as it grows past the audio limit, so no more than that is held.
Text to speech takes ``{message_id | text, voice, streaming, user}`` and streams the audio as it comes
(``audio/mpeg``), as Dify does; an unknown message gives Dify's ``null``.
"""

from __future__ import annotations

from typing import Annotated, Any

import pydantic
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.background import BackgroundTask
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Message

from loopwright.app.availability import current_config
from loopwright.app.files import speech
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.bodies import DifyUser, json_body
from loopwright.server.errors import invalid_param
from loopwright.server.state import get_state, user_or_default

router = APIRouter()

BODY_OVERHEAD = 1024 * 1024  # multipart boundaries and fields on top of the audio itself


def _capped(request: Request, limit: int) -> Request:
    """The request with a body that raises Dify's 413 once more than ``limit`` bytes came."""
    received = 0
    receive = request.receive

    async def capped_receive() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise speech.AudioTooLargeError()
        return message

    return Request(request.scope, capped_receive)


@router.post("/v1/audio-to-text")
async def audio_to_text(
    request: Request,
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    config = await current_config(state.lookup, app.id)
    capped = _capped(request, speech.FILE_SIZE_LIMIT + BODY_OVERHEAD)
    try:
        async with capped.form(max_files=1, max_fields=16) as form:
            upload = form.get("file")
            user = user_or_default(_text(form.get("user")))
            audio = mime_type = filename = None
            if isinstance(upload, UploadFile):
                audio = await upload.read()
                mime_type = (upload.content_type or "").split(";")[0].strip().lower()
                filename = upload.filename or ""
    except StarletteHTTPException as exc:  # a broken multipart body (Starlette's parser says why)
        raise invalid_param(f"malformed multipart body: {exc.detail}") from None
    text = await state.speech.transcribe(
        config, audio, filename=filename or "", mime_type=mime_type or "", user=user
    )
    return {"text": text}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class SpeakPayload(pydantic.BaseModel):
    message_id: str | None = None
    text: str | None = None
    voice: str | None = None
    streaming: bool | None = None  # Dify streams either way for a streaming model
    user: DifyUser | None = None


@router.post("/v1/text-to-audio", response_model=None)
async def text_to_audio(
    app: Annotated[AuthedApp, Depends(current_app)],
    payload: Annotated[SpeakPayload, Depends(json_body(SpeakPayload))],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> StreamingResponse | JSONResponse:
    config = await current_config(state.lookup, app.id)
    user = user_or_default(payload.user)
    # Dify's order: the message (or the text) first, then whether the feature is on
    if payload.message_id:
        text = await speech.message_answer(state.db, state.lookup, app.id, user, payload.message_id)
        if text is None:
            return JSONResponse(None)  # Dify's answer for an unknown message or an empty answer
    elif payload.text:
        text = payload.text
    else:
        raise invalid_param("Text is required")
    audio = await state.speech.speak(config, text, voice=payload.voice)
    # closed after the response, and by the stream itself when read to the end or broken off
    return StreamingResponse(audio.chunks(), media_type="audio/mpeg", background=BackgroundTask(audio.aclose))
