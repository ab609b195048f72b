"""AG-UI over an app: ``POST /ag-ui`` takes AG-UI's ``RunAgentInput`` and streams AG-UI's events.

The app's key is the bearer token; the app's agent answers through the same run pipeline as Dify's
Service API — only the request's mapping and the stream's encoder differ (``app.wires.ag_ui``; the
mapping is in docs/protocols.md). A request refused before its run starts — a body that is not a
``RunAgentInput``, messages without a user's text, inputs the app's form refuses — is answered with
its 4xx status and an AG-UI ``RUN_ERROR`` event as the JSON body; a key that opens no app is Dify's
401, as on every route.
"""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

import pydantic
from ag_ui.core import RunAgentInput
from fastapi import APIRouter, Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import Send

from loopwright.app.run.plan import MessageRequest
from loopwright.app.run.runs import Run
from loopwright.app.run.runtime import AppRuntime
from loopwright.app.wires.ag_ui import (
    AgUiEncoder,
    ag_ui_run,
    conversation_of_thread,
    refusal,
    run_error,
    run_started,
)
from loopwright.errors import LoopwrightError
from loopwright.server.auth import AuthedApp, current_app
from loopwright.server.errors import ApiError, retry_after, validation_message
from loopwright.server.event_stream import EventStream
from loopwright.server.routes_chat import SSE_HEADERS
from loopwright.server.sse import stream_to
from loopwright.server.state import get_state, require_user

router = APIRouter()


@router.post("/ag-ui", response_model=None)
async def ag_ui(
    app: Annotated[AuthedApp, Depends(current_app)],
    request: Request,
    runtime: Annotated[AppRuntime, Depends(get_state)],
) -> EventStream | JSONResponse:
    try:
        body = RunAgentInput.model_validate_json(await request.body())
        messages = [m.model_dump(mode="json", by_alias=True) for m in body.messages]
        asked = ag_ui_run(body.thread_id, body.run_id, messages, body.forwarded_props)
        run = await runtime.start(
            MessageRequest(
                app_id=app.id,
                user=require_user(asked.user),
                query=asked.query.replace("\x00", ""),
                inputs=asked.inputs,
                conversation_id=conversation_of_thread(app.id, asked.thread_id),
                names_conversation=True,
                history=asked.history,
                encoder=partial(AgUiEncoder, asked),
            )
        )
    except pydantic.ValidationError as exc:
        errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        return _refused(400, "invalid_param", validation_message(RequestValidationError(errors)))
    except ApiError as exc:
        return _refused(exc.status, exc.code, exc.message)
    except LoopwrightError as exc:
        status, error = run_error(exc)
        return JSONResponse(error, status_code=status, headers=retry_after(exc))
    return EventStream(partial(_stream, run, run_started(asked)), headers=SSE_HEADERS)


def _refused(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(refusal(code, message), status_code=status)


async def _stream(run: Run, started: str, send: Send, writable: Any) -> None:
    """``RUN_STARTED``, then the run's events (the last one ends the run: ``RUN_FINISHED`` or
    ``RUN_ERROR``)."""
    await send({"type": "http.response.body", "body": started.encode(), "more_body": True})
    await stream_to(run, send, writable)
