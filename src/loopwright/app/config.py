"""Agent-chat app configuration: what an app is, from loopwright YAML or a Dify DSL export.

``AppConfig`` is stored (versioned) with the app; a conversation stays pinned to the version it
started with. ``load_app_yaml`` reads loopwright's own YAML; ``import_dify_dsl`` maps a Dify
agent-chat app export and reports plainly what it could not map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import pydantic
import yaml

from loopwright.app.annotation_setting import AnnotationReply
from loopwright.app.external_data import ExternalDataTool
from loopwright.app.moderation import ModerationRule
from loopwright.app.toolset_sources import check_source
from loopwright.app.trust_import import trust_fields

FieldType = Literal[
    "text-input", "paragraph", "select", "number", "checkbox", "file", "file-list", "json_object"
]


class InputField(pydantic.BaseModel):
    """One field of the app's user input form (Dify's ``user_input_form`` entry)."""

    variable: str
    label: str = ""
    type: FieldType = "text-input"
    required: bool = False
    max_length: int | None = None
    options: list[str] = []
    default: Any = None
    # ``file`` and ``file-list`` fields only (Dify's names); empty: no restriction.
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    allowed_file_upload_methods: list[str] = []


class ToolConfig(pydantic.BaseModel):
    """A tool the app offers, by name, with configured values for its ``form`` parameters."""

    name: str
    form_values: dict[str, Any] = {}


class FileUpload(pydantic.BaseModel):
    enabled: bool = False
    allowed_types: list[str] = ["image"]
    # for ``custom`` files (Dify's): their extensions, e.g. [".csv", ".json"]; empty: any
    allowed_file_extensions: list[str] = []
    number_limits: int = 3
    transfer_methods: list[Literal["local_file", "remote_url"]] = ["local_file", "remote_url"]


class ApprovalSettings(pydantic.BaseModel):
    """Tools whose calls wait for a person's approval (by name: built-ins, OpenAPI operations, MCP
    tools, …), and how long a decision may take before the calls count as denied (seconds)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    tools: list[str] = []
    timeout: float = pydantic.Field(default=3600.0, gt=0)


class EvidenceSettings(pydantic.BaseModel):
    """Evidence-backed answers: with knowledge bases attached, an answer must rest on a retrieved
    segment scoring ``min_score`` or more, else the app answers ``no_evidence_reply``."""

    model_config = pydantic.ConfigDict(extra="forbid")

    required: bool = False
    no_evidence_reply: str = "I could not find this in the knowledge base, so I cannot answer it."
    min_score: float = pydantic.Field(default=0.0, ge=0, le=1)


class SpeechToText(pydantic.BaseModel):
    """``POST /v1/audio-to-text`` (Dify's ``speech_to_text`` feature): ``model`` is a spec of a model on
    an OpenAI-compatible audio API, ``openai:<name>`` or ``openai-compatible:<name>`` (its server and
    key are the chat models', ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = False
    model: str = "openai:whisper-1"


class TextToSpeech(pydantic.BaseModel):
    """``POST /v1/text-to-audio`` (Dify's ``text_to_speech`` feature), streamed as MP3. ``voice`` is
    used when the request names none (empty: ``alloy``, the first of OpenAI's voices); ``language``
    and ``autoPlay`` are reported by ``/v1/parameters`` for clients, as Dify does."""

    model_config = pydantic.ConfigDict(extra="forbid")

    enabled: bool = False
    model: str = "openai:tts-1"
    voice: str = ""
    language: str = ""
    autoPlay: Literal["enabled", "disabled"] = "disabled"  # noqa: N815 (Dify's name)


class AppConfig(pydantic.BaseModel):
    """Everything that defines how an agent-chat app answers."""

    model_config = pydantic.ConfigDict(extra="forbid")

    model: str = "local"
    model_params: dict[str, Any] = {}
    strategy: Literal["auto", "function-calling", "react"] = "auto"
    instruction: str = ""
    user_input_form: list[InputField] = []
    tools: list[ToolConfig] = []
    # OpenAPI specs, MCP servers, other apps, knowledge bases: see loopwright.app.toolset_sources.
    toolsets: list[dict[str, Any]] = []
    max_iterations: int = pydantic.Field(10, ge=0, le=99)
    file_upload: FileUpload = FileUpload()
    opening_statement: str = ""
    suggested_questions: list[str] = []
    history_message_limit: int | None = None  # an optional window on top of the token budget
    max_active_requests: int | None = None  # messages of the app running at once (Dify's); none: no limit
    # Name new conversations with the app's model after their first answer (Dify always does).
    generate_conversation_names: bool = False
    # ``GET /v1/messages/{id}/suggested`` answers with questions made by the app's model (Dify's feature).
    suggested_questions_after_answer: bool = False
    speech_to_text: SpeechToText = SpeechToText()
    text_to_speech: TextToSpeech = TextToSpeech()
    # AgentCallback subclasses by import path ("package.module:Class"), told of every run (app.callbacks)
    callbacks: list[str] = []
    # Trust and control (docs/trust.md): moderation rules, answers from annotations, variables from APIs
    moderation: list[ModerationRule] = []
    annotation_reply: AnnotationReply | None = None
    external_data_tools: list[ExternalDataTool] = []
    # Structured output: the answer is JSON following this JSON Schema (agent.output)
    output_schema: dict[str, Any] | None = None
    approval: ApprovalSettings = ApprovalSettings()
    evidence: EvidenceSettings = EvidenceSettings()

    @pydantic.field_validator("output_schema")
    @classmethod
    def _check_output_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            from loopwright.agent.output import output_spec

            output_spec(value)  # raises ValueError for a schema that is not valid
        return value

    @pydantic.field_validator("toolsets")
    @classmethod
    def _check_toolsets(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [check_source(entry) for entry in value]


class ConfigImportError(ValueError):
    """A file that is not a usable app definition; the message names the problem."""


def load_app_yaml(text: str) -> tuple[str, AppConfig]:
    """``(name, config)`` from loopwright's app YAML (``name:`` plus the AppConfig fields), or from a
    Dify DSL export (recognised by its ``app:`` section) — warnings of the latter are dropped here;
    use :func:`import_dify_dsl` to see them."""
    data = _yaml(text)
    if "app" in data and "model_config" in data:
        report = import_dify_dsl(text)
        return report.name, report.config
    name = str(data.pop("name", "") or "")
    if not name:
        raise ConfigImportError("the app YAML has no name")
    try:
        return name, AppConfig.model_validate(data)
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None


@dataclass
class ImportReport:
    name: str
    config: AppConfig
    warnings: list[str] = field(default_factory=list)


# --- the Dify DSL export ---------------------------------------------------------------------------------


class _DslPart(pydantic.BaseModel):
    """A part of a Dify export: unknown keys are kept (Dify adds some in every release), a ``null``
    value means the field's default, and numbers stand for strings where a string is expected."""

    model_config = pydantic.ConfigDict(extra="allow", coerce_numbers_to_str=True)

    @pydantic.field_validator("*", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: pydantic.ValidationInfo) -> Any:
        if value is None and info.field_name is not None:
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return value


class DifyApp(_DslPart):
    name: str = ""
    mode: str | None = None


class DifyModel(_DslPart):
    provider: str = ""
    name: str = ""
    completion_params: dict[str, Any] = {}


class DifyTool(_DslPart):
    enabled: bool | None = None
    provider_id: str = ""
    provider_name: str = ""
    provider_type: str = "?"
    tool_name: str = ""
    tool_parameters: dict[str, Any] = {}


class AgentMode(_DslPart):
    strategy: str = ""
    max_iteration: int = 10
    tools: list[DifyTool] = []


class DifyFormField(_DslPart):
    variable: str = ""
    label: str = ""
    required: bool = False
    max_length: int | None = None
    options: list[str] = []
    default: Any = None
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    allowed_file_upload_methods: list[str] = []


class DifyImageUpload(_DslPart):
    enabled: bool = False
    number_limits: int | None = None
    transfer_methods: list[str] = []


class DifyFileUpload(_DslPart):
    enabled: bool = False
    image: DifyImageUpload = DifyImageUpload()
    allowed_file_types: list[str] = []
    allowed_file_extensions: list[str] = []
    number_limits: int | None = None
    allowed_file_upload_methods: list[str] = []


class DifyFeature(_DslPart):
    enabled: bool = False


class DifyTextToSpeech(_DslPart):
    enabled: bool = False
    voice: str | None = None
    language: str | None = None
    autoPlay: str | None = None  # noqa: N815 (Dify's name)


class DifyDatasetList(_DslPart):
    datasets: list[Any] = []


class DifyDatasetConfigs(_DslPart):
    datasets: DifyDatasetList = DifyDatasetList()


class DifyModelConfig(_DslPart):
    model: DifyModel = DifyModel()
    agent_mode: AgentMode = AgentMode()
    pre_prompt: str = ""
    user_input_form: list[dict[str, Any]] = []
    file_upload: DifyFileUpload = DifyFileUpload()
    opening_statement: str = ""
    suggested_questions: list[str] = []
    dataset_configs: DifyDatasetConfigs = DifyDatasetConfigs()
    annotation_reply: DifyFeature = DifyFeature()
    sensitive_word_avoidance: DifyFeature = DifyFeature()
    speech_to_text: DifyFeature = DifyFeature()
    text_to_speech: DifyTextToSpeech = DifyTextToSpeech()
    more_like_this: DifyFeature = DifyFeature()


class DifyExport(_DslPart):
    """A Dify app export (DSL YAML): the parts an agent-chat app import reads."""

    app: DifyApp = DifyApp()
    config: DifyModelConfig = pydantic.Field(DifyModelConfig(), alias="model_config")


# Dify tools that have a loopwright built-in equivalent: (provider, tool) → built-in name.
_BUILTIN_EQUIVALENTS = {
    ("time", "current_time"): "current_time",
    ("langgenius/time/time", "current_time"): "current_time",
    ("math", "eval_expression"): "calculator",
    ("maths", "eval_expression"): "calculator",
}
_STRATEGIES = {"function_call": "function-calling", "react": "react", "cot": "react"}
_PARAMS = ("temperature", "top_p", "max_tokens", "presence_penalty", "frequency_penalty", "stop", "seed")
_UNSUPPORTED = {
    "more_like_this": "more like this",
}
_FORM_TYPES = get_args(FieldType)


def import_dify_dsl(text: str) -> ImportReport:
    """Map a Dify agent-chat app export (DSL YAML) to an AppConfig, with a warning for each part
    that could not be mapped."""
    try:
        export = DifyExport.model_validate(_yaml(text))
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"not a usable Dify export: {first_error(e)}") from None
    if export.app.mode != "agent-chat":
        raise ConfigImportError(f"not an agent-chat app export (mode: {export.app.mode!r})")
    mc, agent = export.config, export.config.agent_mode
    warnings: list[str] = []
    model, params = _model(mc.model, warnings)
    try:
        config = AppConfig(
            model=model,
            model_params=params,
            strategy=_STRATEGIES.get(agent.strategy, "auto"),  # type: ignore[arg-type]
            instruction=mc.pre_prompt,
            user_input_form=[f for f in (_form_field(e, warnings) for e in mc.user_input_form) if f],
            tools=[t for t in (_tool(e, warnings) for e in agent.tools) if t],
            max_iterations=min(agent.max_iteration or 10, 99),
            file_upload=_file_upload(mc.file_upload),
            opening_statement=mc.opening_statement,
            suggested_questions=mc.suggested_questions,
            **trust_fields(mc.model_dump(), warnings),
            speech_to_text=SpeechToText(enabled=mc.speech_to_text.enabled),
            text_to_speech=_text_to_speech(mc.text_to_speech),
        )
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None
    notes = warnings + _speech_notes(mc) + _unsupported(mc)
    return ImportReport(export.app.name or "imported app", config, notes)


def _text_to_speech(tts: DifyTextToSpeech) -> TextToSpeech:
    return TextToSpeech(
        enabled=tts.enabled,
        voice=tts.voice or "",
        language=tts.language or "",
        autoPlay="enabled" if tts.autoPlay == "enabled" else "disabled",
    )


def _speech_notes(mc: DifyModelConfig) -> list[str]:
    """Where the speech features of an export go: Dify uses the workspace's default models."""
    notes = []
    if mc.speech_to_text.enabled:
        notes.append(f"speech to text uses {SpeechToText().model} (set speech_to_text.model for another)")
    if mc.text_to_speech.enabled:
        notes.append(f"text to speech uses {TextToSpeech().model} (set text_to_speech.model for another)")
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


def _form_field(entry: dict[str, Any], warnings: list[str]) -> InputField | None:
    ((kind, spec),) = entry.items() if len(entry) == 1 else ((None, None),)
    if kind not in _FORM_TYPES or not isinstance(spec, dict):
        warnings.append(f"input form entry {entry!r} is not supported; it was left out")
        return None
    field = DifyFormField.model_validate(spec)
    return InputField(
        variable=field.variable,
        label=field.label or field.variable,
        type=kind,  # type: ignore[arg-type]  # checked against the Literal's values above
        required=field.required,
        max_length=field.max_length or None,
        options=field.options,
        default=field.default or None,
        allowed_file_types=field.allowed_file_types,
        allowed_file_extensions=field.allowed_file_extensions,
        allowed_file_upload_methods=field.allowed_file_upload_methods,
    )


def _tool(entry: DifyTool, warnings: list[str]) -> ToolConfig | None:
    if entry.enabled is False:
        return None
    provider = entry.provider_id or entry.provider_name
    builtin = _BUILTIN_EQUIVALENTS.get((provider, entry.tool_name))
    if builtin is None:
        warnings.append(
            f"tool {entry.tool_name!r} ({entry.provider_type} provider {provider!r}) has no loopwright "
            "equivalent yet"
        )
        return None
    values = {k: v for k, v in entry.tool_parameters.items() if v not in (None, "")}
    if builtin == "current_time":
        values = {k: v for k, v in values.items() if k == "timezone"}
    return ToolConfig(name=builtin, form_values=values)


def _file_upload(spec: DifyFileUpload) -> FileUpload:
    image = spec.image
    return FileUpload(
        enabled=spec.enabled or image.enabled,
        allowed_types=spec.allowed_file_types or ["image"],
        allowed_file_extensions=spec.allowed_file_extensions,
        number_limits=spec.number_limits or image.number_limits or 3,
        transfer_methods=spec.allowed_file_upload_methods  # type: ignore[arg-type]  # checked by FileUpload
        or image.transfer_methods
        or ["local_file", "remote_url"],
    )


def _yaml(text: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigImportError(f"not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ConfigImportError("the app file must be a YAML mapping")
    return data


def first_error(e: pydantic.ValidationError) -> str:
    """The first problem of a validation error in one line: ``where: message``."""
    err = e.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
