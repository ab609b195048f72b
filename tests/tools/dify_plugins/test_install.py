"""Installing plugins: from a folder and from a .difypkg, shared environments, listing and removing,
and the refusals (a package escaping its folder, no manifest, a plugin needing Python 3.12)."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from loopwright.tools.dify_plugins import PluginFormatError, PluginInstallError, PluginStore
from loopwright.tools.dify_plugins.environment import Interpreter, needs_newer_python, read_requirements
from tests.tools.dify_plugins.conftest import ENVS_CACHE, fixture_plugin


def pack(folder: Path, target: Path) -> Path:
    """A .difypkg of ``folder``: its files zipped at the top, as ``dify plugin package`` makes them."""
    with zipfile.ZipFile(target, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(folder).as_posix())
    return target


def test_a_difypkg_and_a_folder_install_with_shared_environments(tmp_path: Path) -> None:
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    regex = store.install(pack(fixture_plugin("regex"), tmp_path / "regex.difypkg"))
    echarts = store.install(fixture_plugin("echarts"))
    assert (regex.plugin_id, echarts.plugin_id) == ("langgenius/regex", "langgenius/echarts")
    assert regex.env == echarts.env  # both need only dify_plugin==0.0.1b65
    assert regex.python_executable.exists() and (regex.code / "main.py").is_file()
    assert [t.name for t in echarts.manifest.provider().tools] == ["line_chart", "bar_chart", "pie_chart"]
    assert [p.plugin_id for p in store.list()] == ["langgenius/echarts", "langgenius/regex"]
    assert store.get("regex") == store.get("langgenius/regex/regex") == store.get("langgenius/regex")
    # Installing again replaces the code and keeps the plugin usable.
    again = store.install(fixture_plugin("regex"))
    assert again.folder == regex.folder and store.get("langgenius/regex") is not None
    assert store.remove("langgenius/regex") and store.get("langgenius/regex") is None
    assert not store.remove("langgenius/regex")
    assert [p.plugin_id for p in store.list()] == ["langgenius/echarts"]


def test_a_plugin_folder_with_a_dotenv_is_installed_without_it(tmp_path: Path) -> None:
    source = tmp_path / "src"
    import shutil

    shutil.copytree(fixture_plugin("regex"), source)
    (source / ".env").write_text("INSTALL_METHOD=remote\nREMOTE_INSTALL_URL=debug.example:5003\n")
    plugin = PluginStore(tmp_path / "plugins", ENVS_CACHE).install(source)
    assert not (plugin.code / ".env").exists()


def test_a_package_with_a_path_outside_it_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "evil.difypkg"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("manifest.yaml", "author: a\nname: b\n")
        archive.writestr("../../escaped.txt", "x")
    store = PluginStore(tmp_path / "plugins", ENVS_CACHE)
    with pytest.raises(PluginInstallError, match="outside the package"):
        store.install(bad)
    assert not (tmp_path / "escaped.txt").exists() and store.list() == []
    not_zip = tmp_path / "nope.difypkg"
    not_zip.write_bytes(b"plain text")
    with pytest.raises(PluginInstallError, match="not a .difypkg"):
        store.install(not_zip)
    with pytest.raises(PluginInstallError, match="no manifest.yaml"):
        store.install(tmp_path)


def write_plugin(folder: Path, requirements: str, *, provider: str = "provider/p.yaml") -> Path:
    (folder / "provider").mkdir(parents=True)
    (folder / "manifest.yaml").write_text(
        "author: someone\nname: newer\nversion: 0.1.0\ntype: plugin\n"
        "meta:\n  runner:\n    language: python\n    entrypoint: main\n"
        f"plugins:\n  tools:\n    - {provider}\n"
    )
    (folder / "provider" / "p.yaml").write_text("identity:\n  name: p\n  label: {en_US: P}\ntools: []\n")
    (folder / "requirements.txt").write_text(requirements)
    return folder


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the host's Python runs every SDK")
def test_a_plugin_that_needs_python_312_is_refused_with_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOOPWRIGHT_PLUGIN_PYTHON", raising=False)
    # Only this interpreter: no newer Python for uv to find.
    monkeypatch.setattr("loopwright.tools.dify_plugins.environment.newer_interpreter", lambda uv: None)
    source = write_plugin(tmp_path / "src", "dify_plugin>=0.8.0,<0.9\n")
    with pytest.raises(PluginInstallError, match=r"needs Python 3\.12 or newer.*LOOPWRIGHT_PLUGIN_PYTHON"):
        PluginStore(tmp_path / "plugins", ENVS_CACHE).install(source, sdk_fallback=False)


def test_which_sdk_pins_need_a_newer_python() -> None:
    py311 = Interpreter("python3.11", (3, 11))
    assert needs_newer_python(["dify_plugin>=0.8.0"], py311)
    assert needs_newer_python(["dify-plugin==0.10.2", "requests"], py311)
    assert not needs_newer_python(["dify_plugin==0.0.1b65"], py311)
    assert not needs_newer_python(["dify_plugin>=0.3.1,<=0.4.0"], py311)
    assert not needs_newer_python(["dify_plugin>=0.5.0"], py311)  # 0.5–0.7.4 run on 3.11
    assert not needs_newer_python(["dify_plugin>=0.8.0"], Interpreter("python3.12", (3, 12)))


def test_requirements_come_from_requirements_txt_else_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname="x"\ndependencies=["dify_plugin>=0.5.0", "httpx"]\n'
    )
    assert read_requirements(tmp_path) == ["dify_plugin>=0.5.0", "httpx"]
    (tmp_path / "requirements.txt").write_text(
        "# pinned\ndify_plugin==0.0.1b65\n\nnumexpr==2.10.2  # maths\n"
    )
    assert read_requirements(tmp_path) == ["dify_plugin==0.0.1b65", "numexpr==2.10.2"]
    (tmp_path / "requirements.txt").write_text("--extra-index-url https://evil.example/simple\nfoo\n")
    with pytest.raises(PluginInstallError, match="option line"):
        read_requirements(tmp_path)


def test_a_manifest_pointing_outside_the_plugin_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.yaml").write_text("identity: {name: x}\n")
    source = write_plugin(tmp_path / "src", "dify_plugin==0.0.1b65\n", provider="../secret.yaml")
    with pytest.raises(PluginFormatError, match="outside the plugin"):
        PluginStore(tmp_path / "plugins", ENVS_CACHE).install(source)
