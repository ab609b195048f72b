"""What a client needs to show the app: ``GET /v1/`` (health), ``/v1/parameters``, ``/v1/info``,
``/v1/meta`` and ``/v1/site``, in Dify's shapes."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from loopwright import __version__
from loopwright.app.availability import current_config
from loopwright.app.config import AppConfig, FileUpload, InputField, TextToSpeech
from loopwright.app.run.runtime import AppRuntime
from loopwright.server.auth import AuthedApp, app_with_mode, current_app
from loopwright.server.state import get_state

router = APIRouter()

SYSTEM_PARAMETERS = {
    "file_size_limit": 15,
    "image_file_size_limit": 10,
    "audio_file_size_limit": 50,
    "video_file_size_limit": 100,
    "workflow_file_upload_limit": 10,
}
_DISABLED = {"enabled": False}
_NO_MODERATION = {"enabled": False, "type": "", "configs": []}  # Dify's default


def form_entry(f: InputField) -> dict[str, Any]:
    """One ``user_input_form`` entry in Dify's shape: ``{type: {label, variable, required, …}}``."""
    spec: dict[str, Any] = {"label": f.label or f.variable, "variable": f.variable, "required": f.required}
    if f.type in ("text-input", "paragraph"):
        if f.max_length is not None:
            spec["max_length"] = f.max_length
        spec["default"] = "" if f.default is None else f.default
    elif f.type == "select":
        spec["options"] = list(f.options)
        spec["default"] = "" if f.default is None else f.default
    elif f.type in ("file", "file-list"):
        spec["allowed_file_types"] = list(f.allowed_file_types)
        spec["allowed_file_extensions"] = list(f.allowed_file_extensions)
        spec["allowed_file_upload_methods"] = list(f.allowed_file_upload_methods)
        if f.type == "file-list" and f.max_length is not None:
            spec["max_length"] = f.max_length
    else:
        spec["default"] = f.default
    return {f.type: spec}


def file_upload_body(fu: FileUpload) -> dict[str, Any]:
    return {
        "enabled": fu.enabled,
        "allowed_file_types": list(fu.allowed_types),
        "allowed_file_extensions": list(fu.allowed_file_extensions),
        "allowed_file_upload_methods": list(fu.transfer_methods),
        "number_limits": fu.number_limits,
        "image": {
            "enabled": fu.enabled and "image" in fu.allowed_types,
            "number_limits": fu.number_limits,
            "detail": "high",
            "transfer_methods": list(fu.transfer_methods),
        },
    }


def moderation_body(config: AppConfig) -> dict[str, Any]:
    """Dify's ``sensitive_word_avoidance``: on or off and the first rule's type; the rules themselves
    (keywords, patterns, endpoints) are not shown to clients."""
    if not config.moderation:
        return dict(_NO_MODERATION)
    return {"enabled": True, "type": config.moderation[0].type, "configs": []}


def text_to_speech_body(tts: TextToSpeech) -> dict[str, Any]:
    """Dify's ``text_to_speech`` object: its default (no ``autoPlay``) while the feature is off."""
    body: dict[str, Any] = {"enabled": tts.enabled, "voice": tts.voice, "language": tts.language}
    if tts.enabled:
        body["autoPlay"] = tts.autoPlay
    return body


def parameters_body(config: AppConfig) -> dict[str, Any]:
    return {
        "opening_statement": config.opening_statement,
        "suggested_questions": list(config.suggested_questions),
        "suggested_questions_after_answer": {"enabled": config.suggested_questions_after_answer},
        "speech_to_text": {"enabled": config.speech_to_text.enabled},
        "text_to_speech": text_to_speech_body(config.text_to_speech),
        # Citations are sent whenever the app retrieves from a knowledge base.
        "retriever_resource": {"enabled": any(t.get("type") == "knowledge" for t in config.toolsets)},
        "annotation_reply": {"enabled": bool(config.annotation_reply and config.annotation_reply.enabled)},
        "more_like_this": dict(_DISABLED),
        "sensitive_word_avoidance": moderation_body(config),
        "user_input_form": [form_entry(f) for f in config.user_input_form],
        "file_upload": file_upload_body(config.file_upload),
        "system_parameters": dict(SYSTEM_PARAMETERS),
    }


@router.get("/v1/parameters")
async def parameters(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    config = await current_config(state.lookup, app.id)
    return parameters_body(config)


@router.get("/v1/info")
async def info(app: Annotated[AuthedApp, Depends(app_with_mode)]) -> dict[str, Any]:
    # Dify's author is the account that made the app; loopwright apps have no accounts (null). The id
    # is ours, beside Dify's keys: the chat page checks that its link's key is the app it names.
    return {
        "id": app.id,
        "name": app.name,
        "description": app.description,
        "tags": [],
        "mode": app.mode,  # the app's kind, as its configuration says (fixed at creation)
        "author_name": None,
    }


@router.get("/v1/")
async def index() -> dict[str, str]:
    """Dify's health answer (no key needed)."""
    return {"welcome": "Dify OpenAPI", "api_version": "v1", "server_version": __version__}


@router.get("/v1/meta")
async def meta(
    app: Annotated[AuthedApp, Depends(current_app)], state: Annotated[AppRuntime, Depends(get_state)]
) -> dict[str, Any]:
    """Dify's tool icons by tool name: the icons of the app's plugin tools (built-in tools have none)."""
    return {"tool_icons": await state.tool_icons(app.id)}


@router.get("/v1/site")
async def site(
    app: Annotated[AuthedApp, Depends(current_app)],
    state: Annotated[AppRuntime, Depends(get_state)],
) -> dict[str, Any]:
    """Dify's web-app settings: every app has a site here, made of its name and description and the
    configuration's ``site`` (an emoji icon, a footer line as Dify's ``custom_disclaimer``), with Dify's
    defaults for the rest."""
    config = await current_config(state.lookup, app.id)
    shown = config.site
    return {
        "title": app.name,
        "chat_color_theme": None,
        "chat_color_theme_inverted": False,
        "icon_type": "emoji" if shown.icon else None,
        "icon": shown.icon or None,
        "icon_background": shown.icon_background or None,
        "icon_url": None,
        "description": app.description,
        "copyright": None,
        "privacy_policy": None,
        "custom_disclaimer": shown.footer,
        "default_language": "en-US",
        "show_workflow_steps": True,
        "use_icon_as_answer_icon": False,
    }
