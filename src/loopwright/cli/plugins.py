"""``loopwright plugins install|list|remove|credentials``: Dify tool plugins in the data directory
(``LOOPWRIGHT_DATA_DIR``, else the platform's user data directory), each in its own environment.

Credentials are validated by the plugin itself before they are stored, encrypted with the server's
secret key (``LOOPWRIGHT_SECRET_KEY``, else the key kept in the data directory). They are never printed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from loopwright.tools.dify_plugins import DifyPlugins, InstalledPlugin

plugins = typer.Typer(help="Dify tool plugins: install, list, remove, set credentials.", no_args_is_help=True)


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(1)


def open_plugins() -> DifyPlugins:
    """The installed plugins, their credentials (with the server's secret key) and a host to run them."""
    from loopwright.config import load_settings
    from loopwright.tools.dify_plugins import DifyPlugins

    secret = load_settings().secret_key
    return DifyPlugins.open(secret.get_secret_value() if secret is not None else None)


def _summary(plugin: InstalledPlugin) -> str:
    tools = sum(len(p.tools) for p in plugin.manifest.providers)
    return f"{plugin.plugin_id} {plugin.manifest.version} ({tools} tools, Python {plugin.python})"


def install_plugins(paths: list[Path], *, sdk_fallback: bool = True) -> list[InstalledPlugin]:
    """Install each path (a ``.difypkg``, a plugin folder, or a folder of ``.difypkg`` files), saying
    what was installed on stderr (and, for a plugin run on an older ``dify_plugin`` than it asks for,
    what was checked); exits with the reason on the first failure."""
    from loopwright.errors import UserInputError

    store = open_plugins().store
    done = []
    for path in paths:
        packages = (
            sorted(path.glob("*.difypkg"))
            if path.is_dir() and not (path / "manifest.yaml").exists()
            else [path]
        )
        if not packages:
            _fail(f"{path} has no .difypkg files")
        for package in packages:
            typer.secho(f"installing {package.name} …", err=True)
            try:
                plugin = store.install(package, sdk_fallback=sdk_fallback)
            except (UserInputError, OSError) as exc:
                _fail(f"{package}: {exc}")
            typer.secho(f"installed {_summary(plugin)}", fg="green", err=True)
            if plugin.sdk_fallback is not None:
                typer.secho(f"  {plugin.sdk_fallback.line}", fg="yellow", err=True)
            done.append(plugin)
    return done


@plugins.command("install")
def install(
    paths: Annotated[
        list[Path], typer.Argument(help="A .difypkg file, a plugin's folder, or a folder of .difypkg files.")
    ],
    sdk_fallback: Annotated[
        bool,
        typer.Option(
            help="A plugin asking for a dify_plugin this Python cannot run (0.8+ needs 3.12) runs on the "
            "newest one it can, when its code is checked to allow it; --no-sdk-fallback refuses it."
        ),
    ] = True,
) -> None:
    """Install plugins (each into its own environment; plugins with the same requirements share one)."""
    for plugin in install_plugins(paths, sdk_fallback=sdk_fallback):
        typer.echo(plugin.plugin_id)


@plugins.command("list")
def list_plugins(as_json: Annotated[bool, typer.Option("--json", help="One JSON array.")] = False) -> None:
    """The installed plugins: their providers, tools and whether their credentials are set."""
    handle = open_plugins()
    rows: list[dict[str, Any]] = []
    for plugin in handle.store.list():
        stored = handle.credentials.read(plugin.folder)
        for provider in plugin.manifest.providers:
            needed = [c.name for c in provider.credentials if c.required]
            missing = [n for n in needed if n not in stored.get(provider.name, {})]
            state = "not needed" if not needed else ("missing: " + ", ".join(missing) if missing else "set")
            rows.append(
                {
                    "plugin": plugin.plugin_id,
                    "version": plugin.manifest.version,
                    "provider": provider.name,
                    "tools": [t.name for t in provider.tools],
                    "credentials": state,
                    "python": plugin.python,
                    # the older dify_plugin it runs on (docs/plugins.md#python-versions), else null
                    "sdk_fallback": plugin.sdk_fallback.sdk if plugin.sdk_fallback is not None else None,
                }
            )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo("no plugins installed (loopwright plugins install PATH)")
    for row in rows:
        fallback = f"  on dify_plugin {row['sdk_fallback']} (SDK fallback)" if row["sdk_fallback"] else ""
        typer.echo(
            f"{row['plugin']}  {row['version']}  provider {row['provider']}  "
            f"credentials {row['credentials']}{fallback}"
        )
        typer.echo(f"    tools: {', '.join(row['tools'])}")


@plugins.command("remove")
def remove(name: Annotated[str, typer.Argument(help="author/name (or a unique name).")]) -> None:
    """Remove a plugin, its stored values and credentials (its environment, when no other plugin uses it)."""
    if not open_plugins().store.remove(name):
        _fail(f"plugin {name} is not installed")
    typer.echo(f"removed {name}")


@plugins.command("credentials")
def credentials(
    name: Annotated[str, typer.Argument(help="author/name (or a unique name).")],
    values: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE (repeatable).")] = None,
    provider: Annotated[str | None, typer.Option(help="The provider, for a plugin with several.")] = None,
    validate: Annotated[bool, typer.Option(help="Let the plugin check them first.")] = True,
) -> None:
    """Set a plugin's credentials (checked by the plugin, then stored encrypted); without --set,
    show which are set (never their values)."""
    from loopwright.errors import LoopwrightError

    handle = open_plugins()
    plugin = handle.store.get(name)
    if plugin is None:
        _fail(f"plugin {name} is not installed (loopwright plugins install PATH)")
    try:
        spec = plugin.manifest.provider(provider)
    except LoopwrightError as exc:
        _fail(str(exc))
    if not values:
        stored = handle.credentials.get(plugin.folder, spec.name)
        for c in spec.credentials:
            state = "set" if c.name in stored else ("missing" if c.required else "not set")
            typer.echo(f"{c.name}: {state}  ({c.label}, {c.type})")
        if not spec.credentials:
            typer.echo(f"{spec.name} needs no credentials")
        return
    parsed: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            _fail(f"--set takes NAME=VALUE, not {item.partition('=')[0]!r}")
        known = {c.name for c in spec.credentials}
        if key not in known:
            _fail(f"{spec.name} has no credential {key!r} (it has: {', '.join(sorted(known)) or 'none'})")
        parsed[key] = value

    async def store() -> None:
        try:
            await handle.set_credentials(plugin, spec.name, parsed, validate=validate)
        finally:
            await handle.aclose()

    try:
        asyncio.run(store())
    except LoopwrightError as exc:
        _fail(f"the credentials were not stored: {exc}")
    typer.echo(f"credentials of {plugin.plugin_id} ({spec.name}) set: {', '.join(sorted(parsed))}")
