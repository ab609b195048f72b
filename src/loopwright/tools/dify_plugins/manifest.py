"""A Dify plugin's declaration read from its files: ``manifest.yaml``, its provider YAMLs and their tool
YAMLs, as plain frozen dataclasses.

Only what the host needs is kept (names, labels, descriptions, icons, credentials, parameters). The
files come from plugin authors: every field is read leniently (a missing label falls back to the name)
but a path that leaves the plugin's folder, or YAML that is not a mapping, is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from loopwright.errors import UserInputError

MANIFEST_FILE = "manifest.yaml"


class PluginFormatError(UserInputError):
    """A plugin whose files cannot be read (no manifest, broken YAML, a path outside the plugin)."""


@dataclass(frozen=True, slots=True)
class ParameterSpec:
    """One tool parameter as the plugin declares it (Dify's types: string, number, boolean, select,
    secret-input, file, files, array, object, any, model-selector, …)."""

    name: str
    type: str
    form: str  # llm (the model fills it), form (preset in configuration), schema
    required: bool
    default: Any
    label: str
    description: str  # for the model: llm_description, else the human description
    options: tuple[str, ...]
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    label: str
    description: str  # for the model
    parameters: tuple[ParameterSpec, ...]


@dataclass(frozen=True, slots=True)
class CredentialSpec:
    name: str
    type: str  # secret-input, text-input, select, boolean, …
    required: bool
    label: str
    default: Any = None


@dataclass(frozen=True, slots=True)
class ProviderSpec:
    name: str
    label: str
    description: str
    icon: str
    tags: tuple[str, ...]
    credentials: tuple[CredentialSpec, ...]
    tools: tuple[ToolSpec, ...]

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True, slots=True)
class PluginManifest:
    author: str
    name: str
    version: str
    label: str
    description: str
    icon: str
    entrypoint: str  # the module run with ``python -m``
    python_version: str  # meta.runner.version (Dify's daemon ignores it; so do we, but we show it)
    providers: tuple[ProviderSpec, ...]

    @property
    def plugin_id(self) -> str:
        """``author/name``, as Dify's plugin ids start."""
        return f"{self.author}/{self.name}"

    def provider(self, name: str | None = None) -> ProviderSpec:
        """The provider named ``name`` (the only one when None)."""
        if name is None:
            if len(self.providers) != 1:
                names = ", ".join(p.name for p in self.providers) or "none"
                raise UserInputError(
                    f"plugin {self.plugin_id} has several tool providers ({names}): name one"
                )
            return self.providers[0]
        for p in self.providers:
            if p.name == name:
                return p
        names = ", ".join(p.name for p in self.providers) or "none"
        raise UserInputError(f"plugin {self.plugin_id} has no tool provider {name!r} (it has: {names})")


def read_manifest(folder: Path) -> PluginManifest:
    """The declaration of the plugin whose files are in ``folder``. Blocking (reads files)."""
    data = _yaml(folder, MANIFEST_FILE)
    author, name = _text(data.get("author")), _text(data.get("name"))
    if not author or not name:
        raise PluginFormatError(f"{folder / MANIFEST_FILE} has no author or name")
    meta = _mapping(data.get("meta"))
    runner = _mapping(meta.get("runner"))
    language = _text(runner.get("language")) or "python"
    if language != "python":
        raise PluginFormatError(f"plugin {author}/{name} runs on {language!r}; only Python plugins run here")
    plugins = _mapping(data.get("plugins"))
    tool_files = plugins.get("tools") or []
    if not isinstance(tool_files, list) or not tool_files:
        raise PluginFormatError(f"plugin {author}/{name} declares no tool providers (plugins.tools)")
    providers = tuple(_provider(folder, str(path)) for path in tool_files)
    return PluginManifest(
        author=author,
        name=name,
        version=_text(data.get("version")) or "0.0.0",
        label=_i18n(data.get("label")) or name,
        description=_i18n(data.get("description")),
        icon=_text(data.get("icon")),
        entrypoint=_text(runner.get("entrypoint")) or "main",
        python_version=_text(runner.get("version")),
        providers=providers,
    )


def _provider(folder: Path, path: str) -> ProviderSpec:
    data = _yaml(folder, path)
    identity = _mapping(data.get("identity"))
    name = _text(identity.get("name"))
    if not name:
        raise PluginFormatError(f"{path} has no identity.name")
    tags = identity.get("tags") or []
    return ProviderSpec(
        name=name,
        label=_i18n(identity.get("label")) or name,
        description=_i18n(identity.get("description")),
        icon=_text(identity.get("icon")),
        tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
        credentials=_credentials(data.get("credentials_for_provider")),
        tools=tuple(_tool(folder, str(p)) for p in data.get("tools") or []),
    )


def _credentials(raw: Any) -> tuple[CredentialSpec, ...]:
    """``credentials_for_provider``: a mapping of name → spec (most plugins) or a list of specs with
    a ``name`` each."""
    if isinstance(raw, Mapping):
        items = [(str(k), _mapping(v)) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [(_text(_mapping(v).get("name")), _mapping(v)) for v in raw]
    else:
        return ()
    return tuple(
        CredentialSpec(
            name=name,
            type=_text(spec.get("type")) or "secret-input",
            required=bool(spec.get("required", False)),
            label=_i18n(spec.get("label")) or name,
            default=spec.get("default"),
        )
        for name, spec in items
        if name
    )


def _tool(folder: Path, path: str) -> ToolSpec:
    data = _yaml(folder, path)
    identity = _mapping(data.get("identity"))
    name = _text(identity.get("name"))
    if not name:
        raise PluginFormatError(f"{path} has no identity.name")
    description = _mapping(data.get("description"))
    llm = _text(description.get("llm")) or _i18n(description.get("human"))
    params = data.get("parameters") or []
    return ToolSpec(
        name=name,
        label=_i18n(identity.get("label")) or name,
        description=llm,
        parameters=tuple(_parameter(_mapping(p)) for p in params if isinstance(p, Mapping) and p.get("name")),
    )


def _parameter(data: Mapping[str, Any]) -> ParameterSpec:
    options = data.get("options") or []
    values = tuple(
        str(o.get("value")) if isinstance(o, Mapping) else str(o)
        for o in options
        if not isinstance(o, Mapping) or o.get("value") is not None
    )
    return ParameterSpec(
        name=str(data["name"]),
        type=_text(data.get("type")) or "string",
        form=_text(data.get("form")) or "llm",
        required=bool(data.get("required", False)),
        default=data.get("default"),
        label=_i18n(data.get("label")) or str(data["name"]),
        description=_text(data.get("llm_description")) or _i18n(data.get("human_description")),
        options=values,
        minimum=_number(data.get("min")),
        maximum=_number(data.get("max")),
    )


def _yaml(folder: Path, relative: str) -> Mapping[str, Any]:
    path = (folder / relative).resolve()
    if not path.is_relative_to(folder.resolve()):
        raise PluginFormatError(f"{relative!r} points outside the plugin's folder")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PluginFormatError(f"the plugin has no {relative}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise PluginFormatError(f"{relative} is not valid YAML: {exc}") from None
    if not isinstance(data, Mapping):
        raise PluginFormatError(f"{relative} is not a YAML mapping")
    return data


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return "" if value is None else str(value).strip()


def _i18n(value: Any) -> str:
    """The English text of an I18n object (``{en_US: …, zh_Hans: …}``), or the string itself."""
    if isinstance(value, Mapping):
        for key in ("en_US", "en-US", "en"):
            if value.get(key):
                return str(value[key]).strip()
        return next((str(v).strip() for v in value.values() if v), "")
    return _text(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
