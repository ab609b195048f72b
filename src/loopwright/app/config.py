"""Agent-chat app configuration: what an app is, from loopwright YAML or a Dify DSL export.

``AppConfig`` is stored (versioned) with the app; a conversation stays pinned to the version it
started with. ``load_app_yaml`` reads loopwright's own YAML; ``import_dify_dsl`` maps a Dify
agent-chat app export and reports plainly what it could not map.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
import yaml

from loopwright.app.toolset_sources import check_source

FieldType = Literal["text-input", "paragraph", "select", "number", "checkbox"]


class InputField(pydantic.BaseModel):
    """One field of the app's user input form (Dify's ``user_input_form`` entry)."""

    variable: str
    label: str = ""
    type: FieldType = "text-input"
    required: bool = False
    max_length: int | None = None
    options: list[str] = []
    default: Any = None


class ToolConfig(pydantic.BaseModel):
    """A tool the app offers, by name, with configured values for its ``form`` parameters."""

    name: str
    form_values: dict[str, Any] = {}


class FileUpload(pydantic.BaseModel):
    enabled: bool = False
    allowed_types: list[str] = ["image"]
    number_limits: int = 3
    transfer_methods: list[Literal["local_file", "remote_url"]] = ["local_file", "remote_url"]


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
    "annotation_reply": "annotation replies",
    "sensitive_word_avoidance": "moderation (sensitive word avoidance)",
    "speech_to_text": "speech to text",
    "text_to_speech": "text to speech",
    "more_like_this": "more like this",
}


def import_dify_dsl(text: str) -> ImportReport:
    """Map a Dify agent-chat app export (DSL YAML) to an AppConfig, with a warning for each part
    that could not be mapped."""
    data = _yaml(text)
    app = data.get("app") or {}
    if app.get("mode") != "agent-chat":
        raise ConfigImportError(f"not an agent-chat app export (mode: {app.get('mode')!r})")
    mc = data.get("model_config") or {}
    warnings: list[str] = []
    model, params = _model(mc.get("model") or {}, warnings)
    agent = mc.get("agent_mode") or {}
    config = AppConfig(
        model=model,
        model_params=params,
        strategy=_STRATEGIES.get(str(agent.get("strategy", "")), "auto"),  # type: ignore[arg-type]
        instruction=str(mc.get("pre_prompt") or ""),
        user_input_form=[f for f in (_form_field(e, warnings) for e in mc.get("user_input_form") or []) if f],
        tools=[t for t in (_tool(e, warnings) for e in agent.get("tools") or []) if t],
        max_iterations=min(int(agent.get("max_iteration", 10) or 10), 99),
        file_upload=_file_upload(mc.get("file_upload") or {}),
        opening_statement=str(mc.get("opening_statement") or ""),
        suggested_questions=[str(q) for q in mc.get("suggested_questions") or []],
    )
    for key, what in _UNSUPPORTED.items():
        if (mc.get(key) or {}).get("enabled"):
            warnings.append(f"{what} is enabled in the export but not supported; it was left out")
    if (mc.get("dataset_configs") or {}).get("datasets", {}).get("datasets"):
        warnings.append("knowledge bases (dataset_configs) are not imported; attach them to the app again")
    return ImportReport(str(app.get("name") or "imported app"), config, warnings)


def _model(model: dict[str, Any], warnings: list[str]) -> tuple[str, dict[str, Any]]:
    provider = str(model.get("provider") or "")
    name = str(model.get("name") or "")
    completion = model.get("completion_params") or {}
    params = {k: completion[k] for k in _PARAMS if k in completion and completion[k] not in (None, [], "")}
    if not name:
        warnings.append("the export names no model; the app uses the embedded local model")
        return "local", params
    if provider.rsplit("/", 1)[-1] == "openai":
        return f"openai:{name}", params
    warnings.append(
        f"model provider {provider!r} is mapped to an OpenAI-compatible server: set OPENAI_BASE_URL "
        f"(and OPENAI_API_KEY) for {name!r}"
    )
    return f"openai-compatible:{name}", params


def _form_field(entry: dict[str, Any], warnings: list[str]) -> InputField | None:
    ((kind, spec),) = entry.items() if len(entry) == 1 else ((None, None),)
    if kind not in ("text-input", "paragraph", "select", "number", "checkbox") or not isinstance(spec, dict):
        warnings.append(f"input form entry {entry!r} is not supported; it was left out")
        return None
    return InputField(
        variable=str(spec.get("variable", "")),
        label=str(spec.get("label") or spec.get("variable", "")),
        type=kind,  # type: ignore[arg-type]  # checked against the Literal's values above
        required=bool(spec.get("required", False)),
        max_length=spec.get("max_length") or None,
        options=[str(o) for o in spec.get("options") or []],
        default=spec.get("default") or None,
    )


def _tool(entry: dict[str, Any], warnings: list[str]) -> ToolConfig | None:
    if entry.get("enabled") is False:
        return None
    provider = str(entry.get("provider_id") or entry.get("provider_name") or "")
    tool_name = str(entry.get("tool_name") or "")
    builtin = _BUILTIN_EQUIVALENTS.get((provider, tool_name))
    if builtin is None:
        kind = entry.get("provider_type", "?")
        warnings.append(f"tool {tool_name!r} ({kind} provider {provider!r}) has no loopwright equivalent yet")
        return None
    values = {k: v for k, v in (entry.get("tool_parameters") or {}).items() if v not in (None, "")}
    if builtin == "current_time":
        values = {k: v for k, v in values.items() if k == "timezone"}
    return ToolConfig(name=builtin, form_values=values)


def _file_upload(spec: dict[str, Any]) -> FileUpload:
    image = spec.get("image") or {}
    enabled = bool(spec.get("enabled") or image.get("enabled"))
    types = spec.get("allowed_file_types") or (["image"] if image.get("enabled") else ["image"])
    limits = spec.get("number_limits") or image.get("number_limits") or 3
    methods = (
        spec.get("allowed_file_upload_methods")
        or image.get("transfer_methods")
        or ["local_file", "remote_url"]
    )
    return FileUpload(
        enabled=enabled, allowed_types=list(types), number_limits=int(limits), transfer_methods=methods
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
