"""The import of a Dify app export (DSL YAML) — agent-chat, chat or completion: Dify's shapes in,
loopwright's configuration out.

:func:`translate_export` reads the parsed export and returns the app's configuration as plain data (the
fields of ``AppConfig``, which :func:`loopwright.app.config.import_dify_dsl` validates), with a warning
for each part it could not map. Unknown keys are ignored (Dify adds some in every release); ``null``
stands for a field's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic

from loopwright.app._validation import first_error
from loopwright.app.dify.dsl_version import DslVersionError, version_warnings
from loopwright.app.dify.tools import ImportOptions, ToolImport, map_tools
from loopwright.app.dify.trust_import import trust_fields
from loopwright.errors import UserInputError


class DifyImportError(UserInputError):
    """An export that cannot be read as a Dify agent-chat app; the message names the problem."""


@dataclass
class DifyTranslation:
    """What an export became: the app's name, its configuration as data, what was left out, and what
    each tool became."""

    name: str
    config: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    tools: list[ToolImport] = field(default_factory=list)


class DslPart(pydantic.BaseModel):
    """A part of a Dify export: unknown keys are kept (Dify adds some in every release), a ``null``
    value means the field's default, and numbers stand for strings where a string is expected."""

    model_config = pydantic.ConfigDict(extra="allow", coerce_numbers_to_str=True)

    @pydantic.field_validator("*", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        if value is None and info.field_name is not None:
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return value


class DifyApp(DslPart):
    name: str = ""
    mode: str | None = None


class DifyModel(DslPart):
    provider: str = ""
    name: str = ""
    completion_params: dict[str, Any] = {}


class DifyTool(DslPart):
    enabled: bool | None = None
    provider_id: str = ""
    provider_name: str = ""
    provider_type: str = "builtin"
    tool_name: str = ""
    tool_label: str = ""
    tool_parameters: dict[str, Any] = {}


class AgentMode(DslPart):
    enabled: bool = False
    strategy: str = ""
    max_iteration: int = 10
    tools: list[dict[str, Any]] = []


class DifyFormField(DslPart):
    variable: str = ""
    label: str = ""
    required: bool = False
    max_length: int | None = None
    options: list[str] = []
    default: Any = None
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    allowed_file_upload_methods: list[str] = []


class DifyImageUpload(DslPart):
    enabled: bool = False
    number_limits: int | None = None
    transfer_methods: list[str] = []


class DifyFileUpload(DslPart):
    enabled: bool = False
    image: DifyImageUpload = DifyImageUpload()
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    number_limits: int | None = None
    allowed_file_upload_methods: list[str] = []


class DifyFeature(DslPart):
    enabled: bool = False


class DifyTextToSpeech(DslPart):
    enabled: bool = False
    voice: str | None = None
    language: str | None = None
    autoPlay: str | None = None  # noqa: N815 (Dify's name)


class DifyModeration(DslPart):
    """``sensitive_word_avoidance``: ``{enabled, type, config}``, or the older ``{enabled, type,
    configs: []}`` (early exports), or a bare boolean."""

    enabled: bool = False
    type: str = ""

    @pydantic.model_validator(mode="before")
    @classmethod
    def _bare_flag(cls, value: Any) -> Any:
        return {"enabled": value} if isinstance(value, bool) else value


class DifyDatasetList(DslPart):
    datasets: list[Any] = []


class DifyDatasetConfigs(DslPart):
    datasets: DifyDatasetList = DifyDatasetList()


class DifyModelConfig(DslPart):
    model: DifyModel = DifyModel()
    agent_mode: AgentMode = AgentMode()
    pre_prompt: str = ""
    user_input_form: list[dict[str, Any]] = []
    file_upload: DifyFileUpload = DifyFileUpload()
    opening_statement: str = ""
    suggested_questions: list[str] = []
    dataset_configs: DifyDatasetConfigs = DifyDatasetConfigs()
    annotation_reply: DifyFeature = DifyFeature()
    sensitive_word_avoidance: DifyModeration = DifyModeration()
    speech_to_text: DifyFeature = DifyFeature()
    text_to_speech: DifyTextToSpeech = DifyTextToSpeech()
    more_like_this: DifyFeature = DifyFeature()


class DifyExport(DslPart):
    """A Dify app export (DSL YAML): the parts an agent-chat app import reads."""

    app: DifyApp = DifyApp()
    config: DifyModelConfig = pydantic.Field(DifyModelConfig(), alias="model_config")


# ``router`` and ``react_router`` are the names early (pre-0.6) agent assistants saved.
_STRATEGIES = {
    "function_call": "function-calling",
    "router": "function-calling",
    "react": "react",
    "react_router": "react",
    "cot": "react",
}
# The tools of early agent assistants (Dify 0.3–0.5), saved as ``{name: {enabled: …}}``: the provider
# and tool Dify migrated each to.
_EARLY_TOOLS = {
    "current_datetime": ("time", "current_time"),
    "web_reader": ("webscraper", "webscraper"),
    "wikipedia": ("wikipedia", "wikipedia_search"),
    "google_search": ("google", "google_search"),
}
_PARAMS = ("temperature", "top_p", "max_tokens", "presence_penalty", "frequency_penalty", "stop", "seed")
_UNSUPPORTED = {
    "more_like_this": "more like this",
}
# The speech models an import uses: Dify's exports name none (its workspace's default models answer).
SPEECH_TO_TEXT_MODEL = "openai:whisper-1"
TEXT_TO_SPEECH_MODEL = "openai:tts-1"
# Dify's input form field kinds, as its exports name them.
_FORM_TYPES = ("text-input", "paragraph", "select", "number", "checkbox", "file", "file-list", "json_object")


def translate_export(data: Mapping[str, Any], options: ImportOptions | None = None) -> DifyTranslation:
    """The app a parsed Dify export describes, as configuration data, with what each tool became and a
    warning for each part that could not be mapped; :class:`DifyImportError` when it is not an
    ``agent-chat``, ``chat`` or ``completion`` app's export (an ``agent`` export is
    :mod:`~loopwright.app.dify.dsl_agent`'s)."""
    warnings = checked_version(data)
    try:
        export = DifyExport.model_validate(dict(data))
    except pydantic.ValidationError as e:
        raise DifyImportError(f"not a usable Dify export: {first_error(e)}") from None
    mc, agent = export.config, export.config.agent_mode
    mode = _import_mode(export.app.mode, agent.enabled)
    if mode != "agent-chat":
        agent = _without_agent(mode, agent, warnings)
    tools = map_tools(_tool_entries(agent.tools, warnings), options or ImportOptions())
    warnings += [
        f"tool {t.tool!r} ({t.provider_type} {t.provider!r}) was {t.became}"
        for t in tools.report
        if not t.kept
    ]
    model, params = _model(mc.model, warnings)
    config: dict[str, Any] = {
        "mode": mode,
        "model": model,
        "model_params": params,
        "strategy": _STRATEGIES.get(agent.strategy, "auto"),
        "instruction": mc.pre_prompt,
        "user_input_form": [f for f in (_form_field(e, warnings) for e in mc.user_input_form) if f],
        "tools": tools.tools,
        "toolsets": tools.toolsets,
        "max_iterations": min(agent.max_iteration or 10, 99),
        "file_upload": _file_upload(mc.file_upload),
        "opening_statement": mc.opening_statement,
        "suggested_questions": mc.suggested_questions,
        **trust_fields(mc.model_dump(), warnings),
        "speech_to_text": {"enabled": mc.speech_to_text.enabled},
        "text_to_speech": _text_to_speech(mc.text_to_speech),
    }
    notes = warnings + _speech_notes(mc) + _unsupported(mc)
    return DifyTranslation(export.app.name or "imported app", config, notes, tools.report)


def checked_version(data: Mapping[str, Any]) -> list[str]:
    """The warnings the export's DSL version calls for (:mod:`loopwright.app.dify.dsl_version`);
    :class:`DifyImportError` when its ``version`` or ``kind`` cannot be read as an app export's."""
    try:
        return version_warnings(data)
    except DslVersionError as e:
        raise DifyImportError(str(e)) from None


def _text_to_speech(tts: DifyTextToSpeech) -> dict[str, Any]:
    return {
        "enabled": tts.enabled,
        "voice": tts.voice or "",
        "language": tts.language or "",
        "autoPlay": "enabled" if tts.autoPlay == "enabled" else "disabled",
    }


def _speech_notes(mc: DifyModelConfig) -> list[str]:
    """Where the speech features of an export go: Dify uses the workspace's default models."""
    notes = []
    if mc.speech_to_text.enabled:
        notes.append(f"speech to text uses {SPEECH_TO_TEXT_MODEL} (set speech_to_text.model for another)")
    if mc.text_to_speech.enabled:
        notes.append(f"text to speech uses {TEXT_TO_SPEECH_MODEL} (set text_to_speech.model for another)")
    return notes


def _unsupported(mc: DifyModelConfig) -> list[str]:
    """A warning for each feature the export enables that loopwright leaves out."""
    warnings = [
        f"{what} is enabled in the export but not supported; it was left out"
        for key, what in _UNSUPPORTED.items()
        if getattr(mc, key).enabled
    ]
    if mc.dataset_configs.datasets.datasets:
        warnings.append("knowledge bases (dataset_configs) are not imported; attach them to the app again")
    return warnings


def _model(model: DifyModel, warnings: list[str]) -> tuple[str, dict[str, Any]]:
    completion = model.completion_params
    params = {k: completion[k] for k in _PARAMS if k in completion and completion[k] not in (None, [], "")}
    if not model.name:
        warnings.append("the export names no model; the app uses the embedded local model")
        return "local", params
    if model.provider.rsplit("/", 1)[-1] == "openai":
        return f"openai:{model.name}", params
    warnings.append(
        f"model provider {model.provider!r} is mapped to an OpenAI-compatible server: set OPENAI_BASE_URL "
        f"(and OPENAI_API_KEY) for {model.name!r}"
    )
    return f"openai-compatible:{model.name}", params


def _form_field(entry: dict[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    ((kind, spec),) = entry.items() if len(entry) == 1 else ((None, None),)
    if kind not in _FORM_TYPES or not isinstance(spec, dict):
        warnings.append(f"input form entry {entry!r} is not supported; it was left out")
        return None
    field = DifyFormField.model_validate(spec)
    return {
        "variable": field.variable,
        "label": field.label or field.variable,
        "type": kind,
        "required": field.required,
        "max_length": field.max_length or None,
        "options": field.options,
        "default": field.default or None,
        "allowed_file_types": field.allowed_file_types,
        "allowed_file_extensions": field.allowed_file_extensions,
        "allowed_file_upload_methods": field.allowed_file_upload_methods,
    }


def _tool_entries(raw: list[dict[str, Any]], warnings: list[str]) -> list[dict[str, Any]]:
    """The export's tool entries in today's shape: an early ``{name: {enabled: …}}`` entry becomes the
    provider and tool Dify migrated it to; knowledge-base entries of early assistants are reported."""
    out = []
    for entry in raw:
        if len(entry) == 1:
            ((name, spec),) = entry.items()
            spec = spec if isinstance(spec, dict) else {}
            if name == "dataset":
                warnings.append(
                    "knowledge bases (agent_mode dataset tools) are not imported; attach them again"
                )
                continue
            if name in _EARLY_TOOLS:
                provider, tool = _EARLY_TOOLS[name]
                entry = {"enabled": spec.get("enabled", True), "provider_id": provider, "tool_name": tool}
        try:
            tool_entry = DifyTool.model_validate(entry)
        except pydantic.ValidationError as e:
            warnings.append(f"tool entry {entry!r} is not readable ({first_error(e)}); it was left out")
            continue
        out.append(tool_entry.model_dump())
    return out


def _file_upload(spec: DifyFileUpload) -> dict[str, Any]:
    image = spec.image
    return {
        "enabled": spec.enabled or image.enabled,
        "allowed_types": spec.allowed_file_types or ["image"],
        "allowed_file_extensions": spec.allowed_file_extensions,
        "number_limits": spec.number_limits or image.number_limits or 3,
        "transfer_methods": spec.allowed_file_upload_methods
        or image.transfer_methods
        or ["local_file", "remote_url"],
    }


def _import_mode(mode: str | None, agent_enabled: bool) -> str:
    """The kind of app an export becomes: ``agent-chat`` (also an early ``chat`` app with its agent mode
    on, Dify's first agent assistants), ``chat`` or ``completion``; :class:`DifyImportError` for a
    kind loopwright does not run."""
    if mode == "agent-chat" or (mode == "chat" and agent_enabled):
        return "agent-chat"
    if mode in ("chat", "completion"):
        return mode
    raise DifyImportError(_not_an_agent_app(mode))


def _without_agent(mode: str, agent: AgentMode, warnings: list[str]) -> AgentMode:
    """A chat or completion export's agent settings: none (the app is a model and an instruction).
    Tools an export keeps from when its agent mode was on are reported, not imported."""
    kept = [t for t in agent.tools if not (isinstance(t, dict) and t.get("enabled") is False)]
    if kept:
        warnings.append(
            f"this {mode} app's agent mode is off: its {len(kept)} tool(s) were left out "
            "(a chat or completion app runs no tools)"
        )
    return AgentMode()


def _not_an_agent_app(mode: str | None) -> str:
    """Why an export of another kind of Dify app does not import, in its own words."""
    if mode in ("workflow", "advanced-chat"):
        return f"this is a Dify {mode} app export: a graph of nodes, which loopwright does not run"
    return f"not an agent-chat app export (mode: {mode!r})"
