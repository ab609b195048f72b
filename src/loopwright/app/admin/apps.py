"""Administration of apps in the database: create an app, give it an API key, add a toolset to it.

The ``loopwright app``, ``key`` and ``tools`` commands and the server's admin API (``/console/api``)
call these, so neither touches the store. Each function does its work in one transaction on ``db`` (the
server's open database) or, without one, opens the database (``database_url``, else ``DATABASE_URL`` /
``LOOPWRIGHT_DB`` / ``loopwright.db`` in the data directory, as the server does), runs the migrations (a
new file needs no setup) and closes it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pydantic
import yaml
from sqlalchemy.ext.asyncio import AsyncSession

from loopwright.app.admin.readiness import Readiness, ReadinessChecks
from loopwright.app.admin.readiness import check_app as check_readiness
from loopwright.app.config import (
    AppConfig,
    ConfigImportError,
    ImportReport,
    first_error,
    import_dify_dsl,
    load_app_yaml,
)
from loopwright.app.dify.dsl_export import export_dify_dsl
from loopwright.app.dify.tools import ImportOptions
from loopwright.app.guards.tool_allowlist import check_config, check_sources
from loopwright.errors import NotFoundError, UserInputError
from loopwright.store import repositories as repo
from loopwright.store import revocations
from loopwright.store.db import Database, resolve_url
from loopwright.store.models import ApiKey, App

if TYPE_CHECKING:
    from loopwright.knowledge import KnowledgeBase
    from loopwright.knowledge.embeddings import EndpointSettings


class AppNotFoundError(NotFoundError):
    """No app has the given id."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        super().__init__(f"no app with id {app_id!r}")


class ToolsetStorageError(UserInputError):
    """The app cannot take the toolset: its configuration would be invalid."""


def read_app_file(text: str, options: ImportOptions | None = None) -> ImportReport:
    """An app definition from a file's text: a Dify DSL export (with what each tool became and a
    warning for each part that could not be mapped; ``options`` for its MCP servers, workflow apps and
    API specs) or loopwright's own app YAML (no warnings)."""
    dify_parts = ("model_config:", "agent_packages:")  # a chat-type app's, an agent app's (Dify 1.15+)
    if any(part in text for part in dify_parts) and "\napp:" in f"\n{text}":
        return import_dify_dsl(text, options)
    name, config = load_app_yaml(text)
    return ImportReport(name, config)


def with_overrides(report: ImportReport, *, name: str = "", model: str | None = None) -> ImportReport:
    """An imported app definition with the name and model its importer gave (``app create NAME
    --from-yaml FILE --model M``): the file's are replaced, a changed model said in a warning."""
    if name.strip():
        report.name = name.strip()
    if model is not None and model.strip() and model.strip() != report.config.model:
        report.warnings.append(f"model: the file's {report.config.model} replaced by {model.strip()}")
        report.config = parse_app_config({**report.config.model_dump(), "model": model.strip()})
    return report


def app_config_from_options(
    *,
    model: str | None,
    tools: Sequence[str],
    instruction: str,
    strategy: str,
    mode: str = "agent-chat",
) -> AppConfig:
    """The configuration of an app given by its parts (``mode``: agent-chat, chat or completion); an
    unknown built-in tool or a bad value raises :class:`ConfigImportError`."""
    from loopwright.tools.builtin import builtin_tools

    known = {t.name for t in builtin_tools()}
    unknown = [t for t in tools if t not in known]
    if unknown:
        raise ConfigImportError(f"unknown tool {unknown[0]!r}; built-in tools: {', '.join(sorted(known))}")
    config: dict[str, Any] = {
        "mode": mode,
        "model": model or "local",
        "instruction": instruction,
        "strategy": strategy,
        "tools": [{"name": t} for t in tools],
    }
    if mode == "completion":
        config.update(completion_defaults(instruction))
    try:
        return AppConfig.model_validate(config)
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None


# Dify's new text generator: one required paragraph, ``query``, which its clients send as
# ``inputs.query`` and the prompt shows as ``{{query}}``.
COMPLETION_QUERY_FIELD = {"variable": "query", "label": "Query", "type": "paragraph", "required": True}


def completion_defaults(instruction: str) -> dict[str, Any]:
    """A new completion app's form and instruction, as Dify makes them: the ``query`` field, and the
    instruction ending in ``{{query}}`` (the instruction alone when it names it already)."""
    if "{{query}}" in instruction:
        prompt = instruction
    else:
        prompt = f"{instruction.rstrip()}\n\n{{{{query}}}}" if instruction.strip() else "{{query}}"
    return {"user_input_form": [dict(COMPLETION_QUERY_FIELD)], "instruction": prompt}


async def create_app(
    name: str,
    config: AppConfig,
    *,
    description: str = "",
    database_url: str | None = None,
    db: Database | None = None,
    allow: Sequence[str] | None = None,
) -> str:
    """Store a new app with ``config`` as its first configuration version; returns its id. A tool
    source the server's allow-list (``allow``, default: the settings' ``tool_sources``) does not have
    raises :class:`~app.guards.tool_allowlist.ToolSourceNotAllowedError`."""
    _check_name(name)
    check_config(config, _allow_list(allow))
    async with _session(database_url, db) as session:
        dumped = config.model_dump()
        app, _ = await repo.create_app(
            session, name.strip(), dumped, description=description, mode=config.mode
        )
        return app.id


async def _check_mode_kept(session: AsyncSession, app: App, config: AppConfig) -> None:
    """An app's mode is what it was made as (Dify's too): a chat app's clients read ``message`` events,
    an agent's ``agent_message``, a text generator's call another route. The current configuration's
    mode is the app's."""
    latest = await repo.latest_config(session, app.id)
    mode = str((latest.config if latest is not None else {}).get("mode") or "agent-chat")
    if config.mode != mode:
        raise UserInputError(
            f"app {app.name!r} is a {mode} app; its mode cannot change to {config.mode} "
            "(create a new app with that mode)"
        )


async def app_readiness(app_id: str, *, database_url: str | None = None) -> list[Readiness]:
    """Whether every tool of the app's current configuration is ready (see :mod:`app.admin.readiness`);
    :class:`AppNotFoundError` when there is no such app."""
    from loopwright.config import load_settings, model_problem
    from loopwright.tools.builtin import builtin_tools
    from loopwright.tools.net import network_policy

    async with _session(database_url) as session:
        await _require_app(session, app_id)
        latest = await repo.latest_config(session, app_id)
        config = AppConfig.model_validate(dict(latest.config) if latest is not None else {})
        known = {a.id for a in await repo.list_apps(session)}
    settings = load_settings()
    policy = network_policy(settings.tool_allow_hosts)

    async def app_exists(other: str) -> bool:
        return other in known

    checks = ReadinessChecks(
        builtin_tools(policy),
        policy,
        app_exists,
        audio_configured=bool(settings.openai_base_url or settings.openai_api_key),
    )
    problem = model_problem(config.model, settings)
    model = Readiness(f"model {config.model}", problem is None, problem or "")
    return [model, *await check_readiness(config, checks)]


async def create_api_key(app_id: str, *, database_url: str | None = None, db: Database | None = None) -> str:
    """A new API key (``app-…``) for the app; :class:`AppNotFoundError` when there is no such app."""
    _, token = await create_key(app_id, database_url=database_url, db=db)
    return token


async def create_key(
    app_id: str, *, database_url: str | None = None, db: Database | None = None
) -> tuple[KeySummary, str]:
    """A new API key for the app: its summary (masked) and the key itself, shown this once."""
    async with _session(database_url, db) as session:
        await _require_app(session, app_id)
        key = await repo.create_api_key(session, app_id)
        return _key_summary(key), key.token


async def add_toolset(
    app_id: str,
    source: Mapping[str, Any],
    *,
    database_url: str | None = None,
    db: Database | None = None,
    allow: Sequence[str] | None = None,
) -> int:
    """Add the toolset ``source`` (a toolset mapping, e.g. an ``OpenAPISource`` dumped as JSON) to the
    app's ``toolsets`` as a new configuration version, replacing one of the same type and spec; returns
    the version number. :class:`AppNotFoundError` or :class:`ToolsetStorageError` when it cannot."""
    entry = dict(source)
    check_sources([], [entry], _allow_list(allow))
    async with _session(database_url, db) as session:
        await _require_app(session, app_id)
        latest = await repo.latest_config(session, app_id)
        config = dict(latest.config) if latest is not None else {}
        kept = [t for t in config.get("toolsets") or [] if not _same_source(t, entry)]
        config["toolsets"] = [*kept, entry]
        try:
            AppConfig.model_validate(config)
        except pydantic.ValidationError as e:
            raise ToolsetStorageError(f"the app's configuration would be invalid: {first_error(e)}") from None
        return (await repo.add_config_version(session, app_id, config)).version


@dataclass(frozen=True)
class AppSummary:
    id: str
    name: str
    mode: str  # agent-chat, chat or completion (fixed at creation)
    model: str
    strategy: str
    tools: int
    created_at: str
    status: str  # "normal", or "disabled" (``app disable``)
    api: bool  # the Service API is on (``app disable --api`` turns it off)


@dataclass(frozen=True)
class KeySummary:
    id: str
    app_id: str
    token: str  # masked: the prefix and the last four characters (a key is a secret)
    created_at: str


def mask_token(token: str) -> str:
    """``app-Ab…wxyz``: enough to tell keys apart, not enough to use one."""
    return f"{token[:6]}…{token[-4:]}" if len(token) > 12 else "…"


async def list_apps(*, database_url: str | None = None, db: Database | None = None) -> list[AppSummary]:
    """Every app with its current configuration's model, strategy and number of tools."""
    out = []
    async with _session(database_url, db) as session:
        for app in await repo.list_apps(session):
            latest = await repo.latest_config(session, app.id)
            config = dict(latest.config) if latest is not None else {}
            out.append(
                AppSummary(
                    app.id,
                    app.name,
                    app.mode,
                    str(config.get("model", "")),
                    str(config.get("strategy", "auto")),
                    len(config.get("tools") or []) + len(config.get("toolsets") or []),
                    app.created_at.isoformat(timespec="seconds"),
                    app.status,
                    app.enable_api,
                )
            )
    return out


async def list_keys(
    app_id: str | None = None, *, database_url: str | None = None, db: Database | None = None
) -> list[KeySummary]:
    """The API keys of one app (:class:`AppNotFoundError` when there is no such app) or of all."""
    async with _session(database_url, db) as session:
        if app_id is not None:
            await _require_app(session, app_id)
        return [_key_summary(k) for k in await repo.list_api_keys(session, app_id)]


def _key_summary(key: ApiKey) -> KeySummary:
    return KeySummary(key.id, key.app_id, mask_token(key.token), key.created_at.isoformat(timespec="seconds"))


async def revoke_key(key: str, *, database_url: str | None = None, db: Database | None = None) -> bool:
    """Delete an API key by its id or its token; whether there was one. Every running server refuses
    it (401) from the next request on (``store.revocations``)."""
    async with _session(database_url, db) as session:
        if not await repo.revoke_api_key(session, key):
            return False
        await revocations.announce(session)
        return True


MAX_APP_NAME_CHARS = 255  # the column's size


def _check_name(name: str) -> None:
    if not 1 <= len(name.strip()) <= MAX_APP_NAME_CHARS:
        raise UserInputError(f"an app's name must be 1 to {MAX_APP_NAME_CHARS} characters")


def parse_app_config(data: Mapping[str, Any]) -> AppConfig:
    """An app configuration from a mapping (a JSON body, an edited export); :class:`ConfigImportError`
    naming the first problem."""
    try:
        return AppConfig.model_validate(dict(data))
    except pydantic.ValidationError as e:
        raise ConfigImportError(f"invalid app config: {first_error(e)}") from None


async def update_app(
    app_id: str,
    *,
    config: AppConfig | None = None,
    name: str | None = None,
    description: str | None = None,
    database_url: str | None = None,
    db: Database | None = None,
    allow: Sequence[str] | None = None,
) -> int:
    """Change an app: ``config`` becomes a new configuration version (the old ones stay, pinned by
    their conversations; new conversations use the new one), ``name`` and ``description`` change in
    place. Returns the app's newest version number; :class:`AppNotFoundError` when there is no such
    app, :class:`~app.guards.tool_allowlist.ToolSourceNotAllowedError` for a tool source the allow-list
    does not have."""
    if name is not None:
        _check_name(name)
    if config is not None:
        check_config(config, _allow_list(allow))
    async with _session(database_url, db) as session:
        app = await session.get(App, app_id)
        if app is None:
            raise AppNotFoundError(app_id)
        if name is not None:
            app.name = name.strip()
        if description is not None:
            app.description = description
        if config is not None:
            await _check_mode_kept(session, app, config)
            return (await repo.add_config_version(session, app_id, config.model_dump())).version
        latest = await repo.latest_config(session, app_id)
        return latest.version if latest is not None else 0


@dataclass(frozen=True)
class VersionSummary:
    version: int
    id: str
    model: str
    strategy: str
    created_at: str


async def list_versions(
    app_id: str, *, database_url: str | None = None, db: Database | None = None
) -> list[VersionSummary]:
    """The app's configuration versions, newest first; :class:`AppNotFoundError` for no such app."""
    async with _session(database_url, db) as session:
        await _require_app(session, app_id)
        rows = list(reversed(await repo.config_versions(session, app_id)))
        return [
            VersionSummary(
                r.version,
                r.id,
                str(r.config.get("model", "")),
                str(r.config.get("strategy", "auto")),
                r.created_at.isoformat(timespec="seconds"),
            )
            for r in rows
        ]


async def get_version(
    app_id: str, version: int, *, database_url: str | None = None, db: Database | None = None
) -> AppConfig:
    """One configuration version of the app; :class:`NotFoundError` when the app or the version is
    not there."""
    async with _session(database_url, db) as session:
        await _require_app(session, app_id)
        row = await repo.config_version(session, app_id, version)
        if row is None:
            raise NotFoundError(f"app {app_id!r} has no configuration version {version}")
        return AppConfig.model_validate(row.config)


async def set_app_access(
    app_id: str, *, enabled: bool, api_only: bool = False, database_url: str | None = None
) -> None:
    """Enable or disable an app (Dify's app ``status``), or with ``api_only`` only its Service API
    (Dify's ``enable_api``); :class:`AppNotFoundError` when there is no such app. A disabled app's
    requests get 403 from the next one on, on every running server (``store.revocations``)."""
    async with _session(database_url) as session:
        if api_only:
            app = await repo.set_app_access(session, app_id, enable_api=enabled)
        else:
            app = await repo.set_app_access(session, app_id, status="normal" if enabled else "disabled")
        if app is None:
            raise AppNotFoundError(app_id)
        await revocations.announce(session)


@dataclass(frozen=True)
class AppDetails:
    """An app, its current configuration (as stored) and how many versions and keys it has."""

    id: str
    name: str
    description: str
    created_at: str
    version: int
    versions: int
    keys: int
    config: dict[str, Any]
    status: str = "normal"  # "disabled" after ``app disable``
    api: bool = True  # the Service API is on (``app disable --api`` turns it off)


async def show_app(app_id: str, *, database_url: str | None = None, db: Database | None = None) -> AppDetails:
    """One app with its current configuration; :class:`AppNotFoundError` when there is none."""
    async with _session(database_url, db) as session:
        app = await session.get(App, app_id)
        if app is None:
            raise AppNotFoundError(app_id)
        versions = await repo.config_versions(session, app_id)
        current = versions[-1] if versions else None
        return AppDetails(
            app.id,
            app.name,
            app.description,
            app.created_at.isoformat(timespec="seconds"),
            current.version if current is not None else 0,
            len(versions),
            len(await repo.list_api_keys(session, app_id)),
            dict(current.config) if current is not None else {},
            app.status,
            app.enable_api,
        )


async def delete_app(app_id: str, *, database_url: str | None = None, db: Database | None = None) -> None:
    """Delete an app with its versions, keys, conversations and messages (:class:`AppNotFoundError`
    when there is none). Every running server refuses its keys from the next request on."""
    async with _session(database_url, db) as session:
        if not await repo.delete_app(session, app_id):
            raise AppNotFoundError(app_id)
        await revocations.announce(session)


async def export_app(
    app_id: str, *, fmt: str = "dify", database_url: str | None = None, db: Database | None = None
) -> ExportedApp:
    """The app's current configuration as a Dify DSL export (``fmt="dify"``, with warnings for what
    Dify cannot take) or as loopwright's own app YAML (``fmt="loopwright"``, lossless)."""
    details = await show_app(app_id, database_url=database_url, db=db)
    config = AppConfig.model_validate(details.config)
    if fmt == "loopwright":
        document = {"name": details.name, **config.model_dump(mode="json", exclude_defaults=True)}
        return ExportedApp(yaml.safe_dump(document, allow_unicode=True, sort_keys=False), [])
    if fmt != "dify":
        raise UserInputError(f"unknown export format {fmt!r}; expected dify or loopwright")
    result = export_dify_dsl(details.name, config, description=details.description)
    return ExportedApp(result.text, result.warnings)


@dataclass(frozen=True)
class ExportedApp:
    text: str
    warnings: list[str]


def _allow_list(allow: Sequence[str] | None) -> Sequence[str]:
    if allow is not None:
        return allow
    from loopwright.config import load_settings

    return load_settings().tool_sources


def _same_source(entry: object, source: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is the same spec (an OpenAPI file or URL) as ``source``."""
    spec = source.get("spec")
    return (
        spec is not None
        and isinstance(entry, dict)
        and entry.get("type") == source.get("type")
        and entry.get("spec") == spec
    )


async def check_app(app_id: str, *, database_url: str | None = None, db: Database | None = None) -> None:
    """:class:`AppNotFoundError` unless there is an app with this id."""
    async with _session(database_url, db) as session:
        await _require_app(session, app_id)


async def _require_app(session: AsyncSession, app_id: str) -> None:
    if await session.get(App, app_id) is None:
        raise AppNotFoundError(app_id)


@asynccontextmanager
async def _session(database_url: str | None, db: Database | None = None) -> AsyncIterator[AsyncSession]:
    """One transaction on ``db`` (left open), else on the database of ``database_url`` (or the
    environment's), migrated, opened and closed for this one piece of work."""
    if db is not None:
        async with db.transaction() as session:
            yield session
        return
    own = Database(database_url) if database_url else Database()
    try:
        await own.migrate()
        async with own.transaction() as session:
            yield session
    finally:
        await own.close()


def database_url() -> str:
    """The database every command and the server use here (from the environment, as they resolve it)."""
    return resolve_url(None)


def open_knowledge(settings: EndpointSettings, *, database_url: str | None = None) -> KnowledgeBase:
    """The knowledge bases beside the app database (``database_url``, else the environment's, as the
    server resolves it)."""
    from loopwright.knowledge import KnowledgeBase

    return KnowledgeBase.open(resolve_url(database_url), settings=settings)
