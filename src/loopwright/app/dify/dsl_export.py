"""An app's configuration as a Dify DSL export (agent-chat), so an app can go back to Dify.

The reverse of the Dify import: the model, strategy, instruction, input form, opening statement,
suggested questions, file upload and the tools that have a Dify counterpart are written in the shape
Dify's own export has (DSL ``version`` 0.1.5, ``kind: app``). What Dify cannot take as it is — the
embedded model, OpenAPI specs (Dify stores them as custom tool providers), other apps as tools — is
named in the warnings, so nothing is dropped silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from loopwright.app.config import AppConfig, FileUpload, InputField, ToolConfig

__all__ = ["DSL_VERSION", "DifyExportResult", "export_dify_dsl"]

DSL_VERSION = "0.1.5"

# loopwright built-in → (Dify provider id, provider name, tool name, label)
_DIFY_TOOLS = {
    "current_time": ("time", "time", "current_time", "Current Time"),
    "calculator": ("langgenius/maths/maths", "maths", "eval_expression", "Evaluate Expression"),
    "web_fetch": ("webscraper", "webscraper", "webscraper", "Web Scraper"),
    # Dify's core built-ins, which loopwright runs under their Dify names
    "weekday": ("time", "time", "weekday", "Weekday Calculator"),
    "timezone_conversion": ("time", "time", "timezone_conversion", "Timezone Conversion"),
    "localtime_to_timestamp": ("time", "time", "localtime_to_timestamp", "Localtime to Timestamp"),
    "timestamp_to_localtime": ("time", "time", "timestamp_to_localtime", "Timestamp to Localtime"),
    "webscraper": ("webscraper", "webscraper", "webscraper", "Web Scraper"),
    "tts": ("audio", "audio", "tts", "Text To Speech"),
    "asr": ("audio", "audio", "asr", "Speech To Text"),
    "simple_code": ("code", "code", "simple_code", "Code Interpreter"),
}
# Dify has no plan-and-execute: its agent calls functions
_STRATEGIES = {
    "function-calling": "function_call",
    "react": "react",
    "auto": "function_call",
    "plan": "function_call",
}
_OPENAI = "langgenius/openai/openai"
_OPENAI_COMPATIBLE = "langgenius/openai_api_compatible/openai_api_compatible"


@dataclass
class DifyExportResult:
    """The DSL YAML text and what could not be carried over as it is."""

    text: str
    warnings: list[str] = field(default_factory=list)


def export_dify_dsl(name: str, config: AppConfig, *, description: str = "") -> DifyExportResult:
    """``config`` as the YAML of a Dify app export of its mode (agent-chat, chat or completion)."""
    warnings: list[str] = []
    tools = [t for t in (_tool(tool, warnings) for tool in config.tools) if t]
    tools += [
        t for entry in config.toolsets if entry.get("type") == "dify_plugin" for t in _plugin_tools(entry)
    ]
    datasets = _toolsets([e for e in config.toolsets if e.get("type") != "dify_plugin"], warnings)
    document = {
        "app": {
            "description": description,
            "icon": config.site.icon or "🤖",
            "icon_background": config.site.icon_background or "#FFEAD5",
            "mode": config.mode,
            "name": name,
            "use_icon_as_answer_icon": False,
        },
        "kind": "app",
        "model_config": {
            "agent_mode": {
                "enabled": config.mode == "agent-chat",
                "max_iteration": max(1, min(config.max_iterations, 99)),
                "strategy": _STRATEGIES[config.strategy],
                "tools": tools,
            },
            "annotation_reply": _annotation_reply(config),
            "dataset_configs": {
                "datasets": {"datasets": [{"dataset": {"enabled": True, "id": d}} for d in datasets]},
                "retrieval_model": "multiple",
            },
            "file_upload": _file_upload(config.file_upload),
            "model": _model(config, warnings),
            "opening_statement": config.opening_statement,
            "pre_prompt": config.instruction,
            "prompt_type": "simple",
            "retriever_resource": {"enabled": True},
            "sensitive_word_avoidance": _moderation(config, warnings),
            "suggested_questions": list(config.suggested_questions),
            "suggested_questions_after_answer": {"enabled": config.suggested_questions_after_answer},
            "speech_to_text": {"enabled": config.speech_to_text.enabled},
            "text_to_speech": _text_to_speech(config, warnings),
            "user_input_form": [_form_field(f) for f in config.user_input_form],
        },
        "version": DSL_VERSION,
    }
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    return DifyExportResult(text, warnings)


def _annotation_reply(config: AppConfig) -> dict[str, Any]:
    reply = config.annotation_reply
    if reply is None or not reply.enabled:
        return {"enabled": False}
    kind, _, model = reply.embedding.partition(":")
    provider = "langgenius/openai/openai" if kind == "openai" else "local"
    return {
        "enabled": True,
        "score_threshold": reply.score_threshold,
        "embedding_model": {"embedding_provider_name": provider, "embedding_model_name": model or kind},
    }


def _moderation(config: AppConfig, warnings: list[str]) -> dict[str, Any]:
    """Dify has one moderation setting per app, of type keywords or openai_moderation (its ``api``
    names an extension of the Dify workspace, which an export cannot carry): the first such rule."""
    exported: dict[str, Any] = {"enabled": False}
    for rule in config.moderation:
        if rule.type not in ("keywords", "openai_moderation") or exported["enabled"]:
            warnings.append(f"moderation rule of type {rule.type!r} is not exported: Dify has no equivalent")
            continue
        sides = {
            f"{side}_config": {
                "enabled": check.enabled,
                "preset_response": check.preset_response or rule.preset_response,
            }
            for side, check in (("inputs", rule.inputs), ("outputs", rule.outputs))
        }
        settings = {"keywords": "\n".join(rule.keywords)} if rule.type == "keywords" else {}
        exported = {"enabled": True, "type": rule.type, "config": {**settings, **sides}}
    return exported


def _model(config: AppConfig, warnings: list[str]) -> dict[str, Any]:
    kind, _, name = config.model.partition(":")
    provider = {"openai": _OPENAI, "openai-compatible": _OPENAI_COMPATIBLE}.get(kind)
    if provider is None:
        warnings.append(
            f"model {config.model!r} has no Dify provider; the export names none: choose a model in Dify"
        )
        provider, name = "", ""
    return {
        "completion_params": dict(config.model_params),
        "mode": "chat",
        "name": name,
        "provider": provider,
    }


def _tool(tool: ToolConfig, warnings: list[str]) -> dict[str, Any] | None:
    known = _DIFY_TOOLS.get(tool.name)
    if known is None:
        warnings.append(f"tool {tool.name!r} has no Dify counterpart; it was left out")
        return None
    provider_id, provider_name, tool_name, label = known
    return {
        "enabled": True,
        "provider_id": provider_id,
        "provider_name": provider_name,
        "provider_type": "builtin",
        "tool_label": label,
        "tool_name": tool_name,
        "tool_parameters": dict(tool.form_values),
    }


def _plugin_tools(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A Dify plugin's tools as Dify lists them: ``author/name/provider`` with their presets."""
    provider_id = f"{entry['plugin']}/{entry['provider']}"
    presets = entry.get("parameters") or {}
    return [
        {
            "enabled": True,
            "provider_id": provider_id,
            "provider_name": provider_id,
            "provider_type": "builtin",
            "tool_label": name,
            "tool_name": name,
            "tool_parameters": dict(presets.get(name) or {}),
        }
        for name in entry.get("tools") or []
    ]


def _toolsets(toolsets: list[dict[str, Any]], warnings: list[str]) -> list[str]:
    """The knowledge bases to list as Dify datasets; a warning for each other toolset."""
    datasets: list[str] = []
    for entry in toolsets:
        kind = entry.get("type")
        if kind == "knowledge":
            datasets.extend(str(d) for d in entry.get("datasets") or [])
            continue
        what = entry.get("spec") or entry.get("url") or entry.get("command") or entry.get("app_id") or ""
        warnings.append(
            f"{kind} toolset {what!r} is not exported: add it in Dify as a tool provider and attach it"
        )
    if datasets:
        warnings.append("knowledge bases are exported by id: they exist in Dify only once created there")
    return datasets


def _form_field(field: InputField) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "label": field.label or field.variable,
        "variable": field.variable,
        "required": field.required,
    }
    if field.max_length is not None:
        spec["max_length"] = field.max_length
    if field.options:
        spec["options"] = list(field.options)
    if field.default is not None:
        spec["default"] = field.default
    for key in ("allowed_file_types", "allowed_file_extensions", "allowed_file_upload_methods"):
        if getattr(field, key):
            spec[key] = list(getattr(field, key))
    return {field.type: spec}


def _text_to_speech(config: AppConfig, warnings: list[str]) -> dict[str, Any]:
    """Dify's ``text_to_speech``; Dify speaks with the workspace's default models, so an app's own
    speech models are named in a warning."""
    tts, stt = config.text_to_speech, config.speech_to_text
    for feature, what in ((stt, "speech to text"), (tts, "text to speech")):
        if feature.enabled and feature.model != type(feature)().model:
            warnings.append(f"{what} uses {feature.model!r}; Dify uses the workspace's default model")
    return {"enabled": tts.enabled, "voice": tts.voice, "language": tts.language, "autoPlay": tts.autoPlay}


def _file_upload(upload: FileUpload) -> dict[str, Any]:
    return {
        "enabled": upload.enabled,
        "allowed_file_types": list(upload.allowed_types),
        "allowed_file_extensions": list(upload.allowed_file_extensions),
        "allowed_file_upload_methods": list(upload.transfer_methods),
        "number_limits": upload.number_limits,
        "image": {
            "enabled": upload.enabled and "image" in upload.allowed_types,
            "number_limits": upload.number_limits,
            "transfer_methods": list(upload.transfer_methods),
        },
    }
