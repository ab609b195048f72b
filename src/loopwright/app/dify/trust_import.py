"""The trust features of a Dify export, mapped: ``sensitive_word_avoidance`` → ``moderation``,
``annotation_reply`` → ``annotation_reply``, ``external_data_tools`` → ``external_data_tools``.

Dify's API-based extensions are named by an id of the Dify workspace (``api_based_extension_id``),
which says nothing of where they are: such a rule or tool is left out with a warning (add it to the
app YAML with its ``endpoint``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopwright.app.dify.annotation_setting import embedding_spec

_EXTENSION_HINT = "give it an endpoint in the app YAML"


def trust_fields(model_config: Mapping[str, Any], warnings: list[str]) -> dict[str, Any]:
    """The AppConfig fields of an export's ``model_config`` (its plain mapping); a warning for each
    part left out."""
    out: dict[str, Any] = {}
    rule = _moderation(model_config.get("sensitive_word_avoidance") or {}, warnings)
    if rule is not None:
        out["moderation"] = [rule]
    reply = _annotation_reply(model_config.get("annotation_reply") or {}, warnings)
    if reply is not None:
        out["annotation_reply"] = reply
    tools = [t for t in (_external(e, warnings) for e in model_config.get("external_data_tools") or []) if t]
    if tools:
        out["external_data_tools"] = tools
    return out


def _moderation(spec: Mapping[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    if not spec.get("enabled"):
        return None
    kind = spec.get("type") or ""
    config = spec.get("config") or {}
    sides = {
        side: {
            "enabled": bool((config.get(f"{side}_config") or {}).get("enabled")),
            "preset_response": str((config.get(f"{side}_config") or {}).get("preset_response") or ""),
        }
        for side in ("inputs", "outputs")
    }
    if kind == "keywords":
        return {"type": "keywords", "keywords": config.get("keywords") or "", **sides}
    if kind == "openai_moderation":
        return {"type": "openai_moderation", **sides}
    if kind == "api":
        extension = config.get("api_based_extension_id")
        warnings.append(f"moderation by API-based extension {extension!r} was left out: {_EXTENSION_HINT}")
        return None
    warnings.append(f"moderation type {kind!r} is not supported; it was left out")
    return None


def _annotation_reply(spec: Mapping[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    if not spec.get("enabled"):
        return None
    model = spec.get("embedding_model") or {}
    try:
        embedding = embedding_spec(
            str(model.get("embedding_provider_name") or ""), str(model.get("embedding_model_name") or "")
        )
    except ValueError as exc:
        warnings.append(f"annotation reply uses the packaged MiniLM embeddings: {exc}")
        embedding = "minilm"
    threshold = spec.get("score_threshold")
    reply: dict[str, Any] = {"enabled": True, "embedding": embedding}
    if isinstance(threshold, int | float):
        reply["score_threshold"] = float(threshold)
    warnings.append(
        "annotation reply is on; the export carries no annotations: add them (loopwright annotate)"
    )
    return reply


def _external(entry: Any, warnings: list[str]) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping) or entry.get("enabled") is False:
        return None
    variable = entry.get("variable") or "?"
    config = entry.get("config") or {}
    if config.get("endpoint"):  # not Dify's, but a hand-edited export may say where the API is
        return {"variable": variable, "endpoint": config["endpoint"]}
    warnings.append(
        f"external data tool {variable!r} ({entry.get('type')!r}) was left out: {_EXTENSION_HINT}"
    )
    return None
