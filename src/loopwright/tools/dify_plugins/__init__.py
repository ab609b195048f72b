"""Dify tool plugins, run unchanged: installed from ``.difypkg`` files or folders into their own
environments, run as subprocesses speaking the plugin SDK's stdio protocol, their tools offered as
ordinary loopwright tools (see docs/plugins.md)."""

from loopwright.tools.dify_plugins.environment import PluginInstallError
from loopwright.tools.dify_plugins.host import PluginCallError, PluginHost
from loopwright.tools.dify_plugins.installer import InstalledPlugin, PluginStore
from loopwright.tools.dify_plugins.manifest import PluginFormatError, PluginManifest
from loopwright.tools.dify_plugins.plugins import DifyPlugins
from loopwright.tools.dify_plugins.source import DifyPluginSource
from loopwright.tools.dify_plugins.toolset import DifyPluginToolset

__all__ = [
    "DifyPluginSource",
    "DifyPluginToolset",
    "DifyPlugins",
    "InstalledPlugin",
    "PluginCallError",
    "PluginFormatError",
    "PluginHost",
    "PluginInstallError",
    "PluginManifest",
    "PluginStore",
]
