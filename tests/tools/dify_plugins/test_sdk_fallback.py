"""A current official plugin (``tests/fixtures/dify-plugins/current/regex``, asking for
``dify_plugin>=0.9.0``, which needs Python 3.12) on Python 3.11: installed on the newest SDK that runs
here after its code is checked, then called through loopwright; and the plugins whose code does not
allow it, refused with the reason."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from packaging.version import Version
from typer.testing import CliRunner

from loopwright.cli import app
from loopwright.tools import ToolEngine
from loopwright.tools.dify_plugins import (
    DifyPlugins,
    DifyPluginSource,
    PluginHost,
    PluginInstallError,
    PluginStore,
)
from loopwright.tools.dify_plugins.credentials import CredentialStore
from loopwright.tools.dify_plugins.environment import env_python
from loopwright.tools.dify_plugins.sdk_fallback import lifted_pins, resolver_reason
from tests.tools.dify_plugins.conftest import ENVS_CACHE, FIXTURES, SECRET

CURRENT_REGEX = FIXTURES / "current" / "regex"

needs_py311 = pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="Python 3.12+ runs the SDK the plugin asks for: no fallback"
)


@pytest.fixture
def only_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """No newer Python for the host to prefer: the fallback is the only way."""
    monkeypatch.delenv("LOOPWRIGHT_PLUGIN_PYTHON", raising=False)
    monkeypatch.setattr("loopwright.tools.dify_plugins.environment.newer_interpreter", lambda uv: None)


def current_regex() -> Path:
    if not (CURRENT_REGEX / "manifest.yaml").is_file():
        pytest.skip(f"the current regex plugin is not at {CURRENT_REGEX}")
    return CURRENT_REGEX


def installed_sdk(env: Path) -> str:
    import subprocess

    code = "import importlib.metadata as m; print(m.version('dify_plugin'))"
    return subprocess.run([str(env_python(env)), "-c", code], capture_output=True, text=True).stdout.strip()


@needs_py311
async def test_a_current_plugin_runs_on_the_newest_sdk_this_python_runs(
    tmp_path: Path, only_this_python: None
) -> None:
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    plugin = store.install(current_regex())
    fallback = plugin.sdk_fallback
    assert fallback is not None and fallback.requested == "dify_plugin>=0.9.0"
    # The SDK installed is the one the statement names, and one this Python runs (before 0.8).
    assert installed_sdk(plugin.env) == fallback.sdk and Version(fallback.sdk) < Version("0.8")
    assert fallback.python == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert len(fallback.checked) == 3 and "declaring regex (1 tools)" in fallback.checked[2]
    # The statement is stored with the install and read back.
    record = json.loads((plugin.folder / "plugin.json").read_text())
    assert record["sdk_fallback"]["sdk"] == fallback.sdk
    assert store.require("langgenius/regex").sdk_fallback == fallback

    plugins = DifyPlugins(store, CredentialStore(SECRET), PluginHost(store, call_timeout=60))
    try:
        toolset = await plugins.toolset(DifyPluginSource(plugin="langgenius/regex"))
        result = await ToolEngine(toolset.tools).invoke(
            "regex_extract", {"content": "order 12, then 345", "expression": r"\d+"}
        )
    finally:
        await plugins.aclose()
    assert result.meta.error is None and result.observation == "['12', '345']"


@needs_py311
def test_plugins_install_says_what_it_checked_and_no_sdk_fallback_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, only_this_python: None
) -> None:
    monkeypatch.setenv("LOOPWRIGHT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LOOPWRIGHT_PLUGIN_ENVS", str(ENVS_CACHE))
    monkeypatch.setenv("LOOPWRIGHT_SECRET_KEY", "cli-test-secret")
    runner = CliRunner()
    strict = runner.invoke(app, ["plugins", "install", "--no-sdk-fallback", str(current_regex())])
    assert strict.exit_code == 1 and "needs Python 3.12 or newer" in strict.output
    assert not (tmp_path / "data/plugins/langgenius/regex").exists()
    done = runner.invoke(app, ["plugins", "install", str(current_regex())])
    assert done.exit_code == 0, done.output
    assert done.stdout.split() == ["langgenius/regex"]
    assert "runs on dify_plugin 0." in done.stderr and "not the dify_plugin>=0.9.0 it asks for" in done.stderr
    assert "Python files compile" in done.stderr and "imports from dify_plugin resolve" in done.stderr
    listed = json.loads(runner.invoke(app, ["plugins", "list", "--json"]).stdout)
    assert [(row["plugin"], row["sdk_fallback"] is not None) for row in listed] == [
        ("langgenius/regex", True)
    ]
    assert "(SDK fallback)" in runner.invoke(app, ["plugins", "list"]).stdout


def broken_copy(tmp_path: Path, module: str, text: str) -> Path:
    """The current regex plugin with one more module (imported by no one at start)."""
    source = tmp_path / "src"
    shutil.copytree(current_regex(), source)
    (source / "tools" / module).write_text(text)
    return source


@needs_py311
def test_python_312_syntax_anywhere_in_the_plugin_is_refused_with_where(
    tmp_path: Path, only_this_python: None
) -> None:
    source = broken_copy(tmp_path, "later.py", "type Pair = tuple[int, int]\n")  # PEP 695, 3.12 only
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    with pytest.raises(PluginInstallError) as caught:
        store.install(source)
    message = str(caught.value)
    assert "\n" not in message
    assert "asks for dify_plugin>=0.9.0" in message and "tools/later.py:1" in message
    assert store.list() == []


@needs_py311
def test_a_name_the_older_sdk_lacks_is_refused(tmp_path: Path, only_this_python: None) -> None:
    text = "def later():\n    from dify_plugin.entities.tool import NotInThisSdk\n    return NotInThisSdk\n"
    source = broken_copy(tmp_path, "later.py", text)
    with pytest.raises(PluginInstallError, match=r"lacks what it imports \(from dify_plugin.entities.tool "):
        PluginStore(tmp_path / "plugins", ENVS_CACHE).install(source)


@needs_py311
def test_a_plugin_that_does_not_start_on_the_older_sdk_is_refused(
    tmp_path: Path, only_this_python: None
) -> None:
    source = tmp_path / "src"
    shutil.copytree(current_regex(), source)
    tool = source / "tools" / "regex_extract.py"
    tool.write_text(
        tool.read_text().replace("import re\n", "import re\nraise RuntimeError('not on this SDK')\n")
    )
    with pytest.raises(
        PluginInstallError, match=r"did not start on the installed dify_plugin: .*not on this SDK"
    ):
        PluginStore(tmp_path / "plugins", ENVS_CACHE).install(source)


def test_the_plugins_requirement_lifts_only_the_old_sdks_pins_it_conflicts_with() -> None:
    sdk_074 = ["Flask~=3.0.3", "Werkzeug~=3.1.4", "httpx~=0.28.1", "pydantic>=2.8.2", "requests~=2.32.3"]
    plugin = [
        "dify_plugin>=0.9.0",
        "requests>=2.34.2",
        "werkzeug>=3.1.8",
        "httpx>=0.28.1",
        "flask>=3.1.3",
        "arxiv",
    ]
    assert lifted_pins(plugin, sdk_074) == [
        ("requests>=2.34.2", "requests~=2.32.3"),
        ("flask>=3.1.3", "Flask~=3.0.3"),
    ]


def test_an_install_failure_is_told_in_one_line_with_the_resolvers_cause() -> None:
    uv_said = (
        "could not install the requirements on dify_plugin 0.7.4:\n"
        "error: No solution found when resolving dependencies\n"
        "  cause: Because the current Python version (3.11.7) does not satisfy Python>=3.12 and "
        "dify-easy==0.1.0 depends on Python>=3.12, we can conclude that dify-easy==0.1.0 cannot be used.\n"
        "         And because you require dify-easy==0.1.0, we can conclude that your requirements are "
        "unsatisfiable.\n"
    )
    reason = resolver_reason(uv_said)
    assert "\n" not in reason
    assert reason.startswith("No solution found when resolving dependencies: Because the current Python")
    assert "dify-easy==0.1.0 depends on Python>=3.12" in reason
