"""``DifyPlugins``: what a process needs to use installed plugins — the installed plugins, their
encrypted credentials and the host that runs them — and the one way to build a configured toolset."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from loopwright._threads import run_sync
from loopwright.errors import UserInputError
from loopwright.tools.base import ToolCredentialError
from loopwright.tools.dify_plugins.backwards import ModelFor
from loopwright.tools.dify_plugins.credentials import CredentialStore
from loopwright.tools.dify_plugins.host import PluginHost
from loopwright.tools.dify_plugins.installer import InstalledPlugin, PluginStore
from loopwright.tools.dify_plugins.paths import data_dir, files_dir, plugins_dir
from loopwright.tools.dify_plugins.paths import envs_dir as default_envs_dir
from loopwright.tools.dify_plugins.source import DifyPluginSource
from loopwright.tools.dify_plugins.toolset import DifyPluginToolset
from loopwright.tools.dify_plugins.uploads import UploadReceiver
from loopwright.tools.files.manager import ToolFiles
from loopwright.tools.files.signing import load_secret

ICON_PATH = "/files/plugins"
ICON_TYPES = {
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
}


class DifyPlugins:
    def __init__(self, store: PluginStore, credentials: CredentialStore, host: PluginHost) -> None:
        self.store = store
        self.credentials = credentials
        self.host = host

    @classmethod
    def open(
        cls,
        secret: str | None = None,
        *,
        base: Path | None = None,
        envs_dir: Path | None = None,
        model_for: ModelFor | None = None,
        files: Callable[[], Awaitable[ToolFiles]] | None = None,
        **host_options: Any,
    ) -> DifyPlugins:
        """The plugins under ``base/plugins`` (default: the data directory's). ``secret`` is the
        server's secret key; unset, the key kept in the data directory's ``files/`` (made once, and
        the one tool-file URLs are signed with). Blocking."""
        root = base if base is not None else data_dir()
        store = PluginStore(plugins_dir(root), envs_dir if envs_dir is not None else default_envs_dir())
        # The key tool-file URLs are signed with (``files/secret_key``): one secret per data directory.
        keys = root / "files" if base is not None else files_dir()
        credentials = CredentialStore(load_secret(secret, keys))
        uploads = UploadReceiver(files) if files is not None else None
        host = PluginHost(store, model_for=model_for, uploads=uploads, **host_options)
        return cls(store, credentials, host)

    async def toolset(self, source: DifyPluginSource) -> DifyPluginToolset:
        """The tools ``source`` names; a clear error when the plugin, provider or a tool is missing."""
        plugin = await run_sync(self.store.require, source.plugin)
        provider = plugin.manifest.provider(source.provider)
        configured = source.credentials

        async def credentials() -> Mapping[str, Any]:
            stored = await run_sync(self.credentials.get, plugin.folder, provider.name)
            return {**stored, **(configured or {})}

        return DifyPluginToolset(
            self.host,
            plugin,
            provider,
            credentials,
            tools=source.tools,
            parameters=source.parameters,
            prefix=source.prefix,
            timeout=source.timeout,
        )

    async def problems(self, source: DifyPluginSource) -> list[str]:
        """What keeps ``source`` from working, one sentence each (empty: ready): the plugin not
        installed, no such provider or tool, required credentials not set. Starts nothing."""
        plugin = await run_sync(self.store.get, source.plugin)
        if plugin is None:
            return [f"plugin {source.plugin} is not installed (loopwright plugins install PATH)"]
        try:
            toolset = await self.toolset(source)
        except UserInputError as exc:
            return [str(exc)]
        try:
            await toolset.credentials()
        except ToolCredentialError as exc:
            return [str(exc)]
        return []

    async def set_credentials(
        self,
        plugin: InstalledPlugin,
        provider: str | None,
        values: Mapping[str, Any],
        *,
        validate: bool = True,
    ) -> None:
        """Store credentials for a provider of ``plugin``, once the plugin accepts them (``validate``)."""
        spec = plugin.manifest.provider(provider)
        merged = {**await run_sync(self.credentials.get, plugin.folder, spec.name), **values}
        if validate:
            toolset = DifyPluginToolset(self.host, plugin, spec, _constant(merged), tools=[])
            await toolset.validate_credentials(merged)
        await run_sync(self.credentials.set, plugin.folder, spec.name, values)

    async def tool_icons(self, sources: Sequence[DifyPluginSource]) -> dict[str, str]:
        """Tool name → the icon path of its provider (``/files/plugins/{author}/{name}/icon``) for the
        tools these sources offer; plugins that are not installed are left out. Starts nothing."""
        icons: dict[str, str] = {}
        for source in sources:
            plugin = await run_sync(self.store.get, source.plugin)
            if plugin is None or await run_sync(icon_file, plugin) is None:
                continue
            provider = next((p for p in plugin.manifest.providers if source.provider in (None, p.name)), None)
            if provider is None:
                continue
            wanted = set(source.tools) if source.tools is not None else None
            path = f"{ICON_PATH}/{plugin.manifest.author}/{plugin.manifest.name}/icon"
            for tool in provider.tools:
                if wanted is None or tool.name in wanted:
                    icons[f"{source.prefix}{tool.name}"] = path
        return icons

    async def icon(self, plugin_id: str) -> tuple[bytes, str] | None:
        """The bytes and type of the installed plugin ``author/name``'s icon, or None."""
        plugin = await run_sync(self.store.get, plugin_id)
        if plugin is None or plugin.plugin_id != plugin_id:  # only the exact author/name
            return None
        found = await run_sync(icon_file, plugin)
        if found is None:
            return None
        path, mime = found
        return await run_sync(path.read_bytes), mime

    async def aclose(self) -> None:
        await self.host.aclose()


def icon_file(plugin: InstalledPlugin) -> tuple[Path, str] | None:
    """The plugin's icon (its first provider's, else the manifest's) in ``_assets``, with its type;
    None when it has none of a known image type."""
    names = [p.icon for p in plugin.manifest.providers] + [plugin.manifest.icon]
    assets = (plugin.code / "_assets").resolve()
    for name in names:
        mime = ICON_TYPES.get(Path(name).suffix.lower()) if name else None
        if mime is None:
            continue
        path = (assets / name).resolve()
        if path.is_relative_to(assets) and path.is_file():
            return path, mime
    return None


def _constant(values: Mapping[str, Any]) -> Any:
    async def read() -> Mapping[str, Any]:
        return values

    return read
