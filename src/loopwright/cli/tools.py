"""``loopwright tools import SPEC --app APP``: check an OpenAPI spec, list its operations, and add it
to an app's configuration as a toolset (a new configuration version)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, NoReturn

import typer

AUTH_TYPES = ("none", "api_key_header", "api_key_query", "api_key")
PREFIXES = ("basic", "bearer", "custom")

tools = typer.Typer(help="Tools for apps: import OpenAPI specs as toolsets.", no_args_is_help=True)


@tools.command("import")
def import_spec(
    spec: Annotated[str, typer.Argument(help="An OpenAPI 3.x / Swagger 2.0 file, or its http(s) URL.")],
    app_id: Annotated[str | None, typer.Option("--app", help="The app to add the toolset to.")] = None,
    check: Annotated[bool, typer.Option("--check", help="Only validate and list the operations.")] = False,
    auth_type: Annotated[
        str, typer.Option(help="none, api_key_header or api_key_query.", show_default=True)
    ] = "none",
    api_key: Annotated[
        str | None, typer.Option(help="The API key (stored in the app's configuration).")
    ] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="An environment variable holding the API key, read at run time.")
    ] = None,
    header: Annotated[str, typer.Option(help="Header for api_key_header.")] = "Authorization",
    prefix: Annotated[str, typer.Option(help="basic, bearer or custom (the key as given).")] = "custom",
    query_param: Annotated[str, typer.Option(help="Query parameter for api_key_query.")] = "key",
    server_url: Annotated[str | None, typer.Option(help="The API's base URL, overriding the spec's.")] = None,
    allow_host: Annotated[
        list[str] | None, typer.Option(help="A private host/IP/CIDR the API lives on (repeatable).")
    ] = None,
    include: Annotated[list[str] | None, typer.Option(help="Only this operation (repeatable).")] = None,
) -> None:
    """Validate SPEC, list the operations it defines, and add it to the app's tools."""
    from loopwright.app.admin.tool_import import ToolImportError, openapi_operations, openapi_source
    from loopwright.config import ConfigError, load_settings

    if app_id is None and not check:
        _fail("give the app with --app APP_ID (or --check to only validate)")
    if not spec.startswith(("http://", "https://")):
        path = Path(spec).expanduser().resolve()
        if not path.is_file():
            _fail(f"spec file not found: {path}")
        spec = str(path)  # the server may run elsewhere: store an absolute path
    try:
        source = openapi_source(
            {
                "spec": spec,
                "auth_type": _choice(auth_type, AUTH_TYPES),
                "api_key": api_key,
                "api_key_env": api_key_env,
                "api_key_header": header,
                "api_key_header_prefix": _choice(prefix, PREFIXES),
                "api_key_query_param": query_param,
                "server_url": server_url,
                "allow_hosts": allow_host or [],
                "include": include,
            }
        )
        operations = asyncio.run(openapi_operations(source, load_settings().tool_allow_hosts))
    except (ToolImportError, ConfigError) as e:
        _fail(str(e))
    for op in operations:
        typer.echo(f"{op.name}\t{op.method} {op.path}\t{op.summary}")
    typer.secho(f"{len(operations)} operation(s) in {spec}", err=True)
    if check:
        return
    assert app_id is not None
    if api_key:
        typer.secho(
            "note: the API key is stored in the app's configuration; --api-key-env keeps it out", err=True
        )
    from loopwright.app.admin.apps import AppNotFoundError, ToolsetStorageError, add_toolset
    from loopwright.app.guards.tool_allowlist import ToolSourceNotAllowedError

    entry = source.model_dump(mode="json", exclude_none=True)
    try:
        version = asyncio.run(add_toolset(app_id, entry))
    except (AppNotFoundError, ToolsetStorageError, ToolSourceNotAllowedError) as e:
        _fail(str(e))
    typer.secho(f"added to app {app_id} (configuration version {version})", err=True)


def _choice(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        _fail(f"unknown value {value!r}; expected one of: {', '.join(allowed)}")
    return value


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(1)
