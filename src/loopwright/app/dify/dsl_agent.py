"""The import of a Dify ``agent`` app export (Dify 1.15+, DSL 0.7.0): its agent package in, an app out.

An ``agent`` app's export has no ``model_config``: ``agent: {package_ref}`` names one entry of
``agent_packages``, a portable Agent package — ``metadata`` (name, description, role, icon), the
``soul`` (the agent's whole configuration: prompt, model, Dify tools and CLI tools, skills, files,
knowledge sets, human contacts, sandbox, app features and variables) and ``omitted_assets`` (the
skills and files whose contents Dify leaves out of every export). :func:`translate_agent_export`
maps it onto the same configuration data as an agent-chat import (:mod:`.dsl_import`), with the app's
``mode`` set to ``agent`` so the Service API answers as Dify's agent apps do, and a warning for each
part that cannot map. Unknown keys are ignored, as Dify adds some in every release.

Skills: Dify keeps a skill's files in its drive and exports only its name, description and hash. A
skill whose folder (with its ``SKILL.md``) or zip is found by name in one of
``ImportOptions.skill_dirs`` becomes one of the app's skills (``tools.skills``); any other is reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydantic

from loopwright.app._validation import first_error
from loopwright.app.dify.dsl_import import (
    DifyFileUpload,
    DifyImportError,
    DifyModel,
    DifyTextToSpeech,
    DifyTranslation,
    DslPart,
    _file_upload,
    _form_field,
    _model,
    _text_to_speech,
    checked_version,
)
from loopwright.app.dify.tools import ImportOptions, map_tools
from loopwright.app.dify.trust_import import trust_fields


class SoulModel(DslPart):
    plugin_id: str = ""
    model_provider: str = ""
    model: str = ""
    model_settings: dict[str, Any] = {}


class SoulTools(DslPart):
    dify_tools: list[dict[str, Any]] = []
    cli_tools: list[dict[str, Any]] = []


class SoulFiles(DslPart):
    skills: list[dict[str, Any]] = []
    files: list[dict[str, Any]] = []


class SoulKnowledge(DslPart):
    sets: list[dict[str, Any]] = []
    datasets: list[dict[str, Any]] = []  # the first agent packages' flat shape


class SoulHuman(DslPart):
    contacts: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []


class SoulEnv(DslPart):
    variables: list[dict[str, Any]] = []
    secret_refs: list[dict[str, Any]] = []


class SoulSandbox(DslPart):
    provider: str | None = None


class SoulPrompt(DslPart):
    system_prompt: str = ""


class AgentSoul(DslPart):
    prompt: SoulPrompt = SoulPrompt()
    model: SoulModel | None = None
    tools: SoulTools = SoulTools()
    config_skills: list[dict[str, Any]] = []
    config_files: list[dict[str, Any]] = []
    files: SoulFiles = SoulFiles()
    skills_files: SoulFiles = SoulFiles()  # the first agent packages' name for ``files``
    knowledge: SoulKnowledge = SoulKnowledge()
    human: SoulHuman = SoulHuman()
    env: SoulEnv = SoulEnv()
    sandbox: SoulSandbox = SoulSandbox()
    app_features: dict[str, Any] = {}
    app_variables: list[dict[str, Any]] = []


class PackageMetadata(DslPart):
    name: str = ""
    description: str = ""


class AgentPackage(DslPart):
    schema_version: int = 1
    metadata: PackageMetadata = PackageMetadata()
    soul: AgentSoul = AgentSoul()
    omitted_assets: list[dict[str, Any]] = []


# Agent package schema versions this importer reads (Dify's ``AGENT_PACKAGE_SCHEMA_VERSION``).
PACKAGE_SCHEMA_VERSION = 1
# Dify's mentions in an agent's prompt: ``[§tool:provider/name:Label§]``, ``[§skill:name§]``, …
_MENTION = re.compile(r"\[§([a-z_]+):([^§\]]*)§\]")
# An app variable's type → the input form field kind it becomes
_VARIABLE_KINDS = {
    "string": "text-input",
    "text": "text-input",
    "text-input": "text-input",
    "paragraph": "paragraph",
    "number": "number",
    "integer": "number",
    "boolean": "checkbox",
    "checkbox": "checkbox",
    "select": "select",
    "file": "file",
    "file-list": "file-list",
    "array[file]": "file-list",
    "object": "json_object",
    "json": "json_object",
    "json_object": "json_object",
}


def is_agent_export(data: Mapping[str, Any]) -> bool:
    """Whether a parsed export is of Dify's ``agent`` app mode (an agent package, no ``model_config``)."""
    app = data.get("app")
    return isinstance(app, Mapping) and app.get("mode") == "agent"


def translate_agent_export(data: Mapping[str, Any], options: ImportOptions | None = None) -> DifyTranslation:
    """The app a parsed Dify ``agent`` export describes, as configuration data, with what each tool
    became and a warning for each part that could not be mapped."""
    options = options or ImportOptions()
    warnings = checked_version(data)
    package = _package(data, warnings)
    soul = package.soul
    tools = map_tools([e for e in (_tool_entry(t, warnings) for t in soul.tools.dify_tools) if e], options)
    warnings += [
        f"tool {t.tool!r} ({t.provider_type} {t.provider!r}) was {t.became}"
        for t in tools.report
        if not t.kept
    ]
    model, params = _soul_model(soul.model, warnings)
    features = soul.app_features
    tts = DifyTextToSpeech.model_validate(features.get("text_to_speech") or {})
    config: dict[str, Any] = {
        "mode": "agent",
        "model": model,
        "model_params": params,
        "instruction": _plain_mentions(soul.prompt.system_prompt),
        "user_input_form": [f for f in (_variable(v, warnings) for v in soul.app_variables) if f],
        "tools": tools.tools,
        "toolsets": tools.toolsets,
        "skills": _skills(soul, package.omitted_assets, options.skill_dirs, warnings),
        "file_upload": _file_upload(DifyFileUpload.model_validate(features.get("file_upload") or {})),
        "opening_statement": str(features.get("opening_statement") or ""),
        "suggested_questions": [str(q) for q in features.get("suggested_questions") or []],
        "suggested_questions_after_answer": _enabled(features.get("suggested_questions_after_answer")),
        "speech_to_text": {"enabled": _enabled(features.get("speech_to_text"))},
        "text_to_speech": _text_to_speech(tts),
        **trust_fields({"sensitive_word_avoidance": features.get("sensitive_word_avoidance")}, warnings),
    }
    _report_left_out(soul, package.omitted_assets, warnings)
    app = data.get("app") or {}
    name = str(app.get("name") or package.metadata.name or "imported agent")
    return DifyTranslation(name, config, warnings, tools.report)


def _package(data: Mapping[str, Any], warnings: list[str]) -> AgentPackage:
    """The agent package the export's ``agent.package_ref`` names (the only one an app export has)."""
    packages = data.get("agent_packages")
    if not isinstance(packages, Mapping) or not packages:
        raise DifyImportError("this Dify agent app export has no agent_packages: export the app again")
    agent = data.get("agent")
    ref = agent.get("package_ref") if isinstance(agent, Mapping) else None
    if ref is None and len(packages) == 1:
        ref = next(iter(packages))
    if ref not in packages:
        raise DifyImportError(f"the export's agent.package_ref {ref!r} names no entry of agent_packages")
    try:
        package = AgentPackage.model_validate(packages[ref])
    except pydantic.ValidationError as e:
        raise DifyImportError(f"the agent package {ref!r} is not readable: {first_error(e)}") from None
    if package.schema_version > PACKAGE_SCHEMA_VERSION:
        warnings.append(
            f"the agent package is schema {package.schema_version}, newer than the newest known here "
            f"({PACKAGE_SCHEMA_VERSION}): it was read as {PACKAGE_SCHEMA_VERSION}"
        )
    return package


def _soul_model(model: SoulModel | None, warnings: list[str]) -> tuple[str, dict[str, Any]]:
    if model is None:
        return _model(DifyModel(), warnings)
    provider = model.model_provider or model.plugin_id
    return _model(
        DifyModel(provider=provider, name=model.model, completion_params=model.model_settings), warnings
    )


def _tool_entry(tool: dict[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    """A Dify tool of the soul in the shape of an agent-chat tool entry (:func:`map_tools` reads it)."""
    provider = tool.get("provider_id") or tool.get("provider_name")
    if not provider and tool.get("plugin_id") and tool.get("provider"):
        provider = f"{tool['plugin_id']}/{tool['provider']}"
    name = tool.get("tool_name")
    if not provider:
        warnings.append(f"tool entry {tool!r} names no provider; it was left out")
        return None
    if not name:
        warnings.append(
            f"tool provider {provider!r} is offered whole (every tool it declares): name its tools in the "
            "app's toolsets to use them; it was left out"
        )
        return None
    kind = str(tool.get("provider_type") or "plugin")
    return {
        "enabled": tool.get("enabled", True),
        "provider_id": provider,
        "provider_type": "builtin" if kind == "plugin" else kind,
        "tool_name": name,
        "tool_parameters": tool.get("runtime_parameters") or tool.get("tool_parameters") or {},
    }


def _plain_mentions(prompt: str) -> str:
    """The prompt with Dify's mentions as the names the agent sees here: a tool's name, a skill's."""

    def name(match: re.Match[str]) -> str:
        kind, body = match.groups()
        target = body.split(":", 1)[0] if kind == "tool" else body
        return target.rstrip("/*").rsplit("/", 1)[-1] or body

    return _MENTION.sub(name, prompt)


def _variable(var: dict[str, Any], warnings: list[str]) -> dict[str, Any] | None:
    """An app variable (``{name, type, required, default}``) as an input form field."""
    kind = _VARIABLE_KINDS.get(str(var.get("type") or "string"))
    if kind is None or not var.get("name"):
        warnings.append(f"app variable {var!r} is not supported; it was left out")
        return None
    spec = {"variable": var["name"], "label": var["name"], "required": bool(var.get("required"))}
    if var.get("default") is not None:
        spec["default"] = var["default"]
    return _form_field({kind: spec}, warnings)


def _enabled(feature: Any) -> bool:
    return bool(feature.get("enabled")) if isinstance(feature, Mapping) else False


def _skill_names(soul: AgentSoul, omitted: Sequence[dict[str, Any]]) -> list[str]:
    names = [s.get("name") for s in soul.config_skills]
    names += [s.get("name") for s in soul.files.skills + soul.skills_files.skills]
    names += [a.get("name") for a in omitted if a.get("kind") == "skill"]
    return list(dict.fromkeys(str(n) for n in names if n))


def _skills(
    soul: AgentSoul, omitted: Sequence[dict[str, Any]], dirs: Sequence[str], warnings: list[str]
) -> list[str]:
    """The paths of the export's skills found by name in ``dirs`` (a folder or ``NAME.zip``); a warning
    for each not found."""
    found = []
    for name in _skill_names(soul, omitted):
        path = _find_skill(name, dirs)
        if path is None:
            where = f" (looked in {', '.join(dirs)})" if dirs else ""
            warnings.append(
                f"skill {name!r}: Dify exports a skill's name but not its files; put its folder (with "
                f"SKILL.md) or zip in a folder given with --skills-dir{where}, or add its path to the "
                "app's skills"
            )
            continue
        found.append(path)
    return found


def _find_skill(name: str, dirs: Sequence[str]) -> str | None:
    for folder in dirs:
        for candidate in (Path(folder) / name, Path(folder) / f"{name}.zip"):
            if (candidate / "SKILL.md").is_file() or (candidate.is_file() and candidate.suffix == ".zip"):
                return str(candidate.resolve())
    return None


def _report_left_out(soul: AgentSoul, omitted: Sequence[dict[str, Any]], warnings: list[str]) -> None:
    """A warning for each part of the soul that loopwright does not take over."""
    for tool in soul.tools.cli_tools:
        if tool.get("enabled", True) is not False:
            name = tool.get("name") or tool.get("tool_name") or tool.get("command") or "?"
            warnings.append(
                f"CLI tool {name!r} runs commands in Dify's sandbox, which loopwright does not have; "
                "it was left out"
            )
    files = [f.get("name") for f in soul.config_files + soul.files.files + soul.skills_files.files]
    files += [a.get("name") for a in omitted if a.get("kind") == "file"]
    for name in dict.fromkeys(str(n) for n in files if n):
        warnings.append(f"file {name!r}: Dify exports a file's name but not its content; it was left out")
    for entry in soul.knowledge.sets or soul.knowledge.datasets:
        name = entry.get("name") or entry.get("id") or "?"
        warnings.append(f"knowledge set {name!r} is not imported; attach a knowledge base to the app again")
    if soul.human.contacts or soul.human.tools:
        warnings.append(
            "human contacts (ask a person) are not imported; loopwright asks the user through tool approvals"
        )
    for var in soul.env.variables + soul.env.secret_refs:
        name = var.get("name") or var.get("key") or var.get("env_name") or var.get("variable") or "?"
        warnings.append(f"sandbox environment variable {name!r} is not imported")
    if soul.sandbox.provider:
        warnings.append(f"the sandbox ({soul.sandbox.provider}) is not imported: loopwright has none")
