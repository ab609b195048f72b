"""Files given to loopwright that are not what they claim: a binary file as an app's YAML, a YAML
"billion laughs", an app file of gigabytes, plugin packages with symbolic links, zip bombs, paths
outside their folder or ten thousand files, broken PDFs — each refused with a clear error that names
the problem (and, from the CLI, the file), before any work proportional to the attack."""

from __future__ import annotations

import contextlib
import random
import re
import stat
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loopwright.app.admin.apps import read_app_file
from loopwright.app.config import MAX_APP_FILE_CHARS, ConfigImportError
from loopwright.cli import app
from loopwright.knowledge.extract import ExtractError, extract_text
from loopwright.tools.dify_plugins import PluginInstallError, PluginStore
from loopwright.tools.dify_plugins.installer import MAX_PACKAGE_FILES
from tests.knowledge.conftest import make_pdf

# Nine levels of ten aliases each: 10**9 strings once expanded, 400 bytes as written.
BILLION_LAUGHS = "\n".join(
    ["name: lol", 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    + ["model: *a9"]
)


def test_a_yaml_bomb_is_refused_before_it_expands() -> None:
    with pytest.raises(ConfigImportError, match="aliases expand past 1,000,000 nodes"):
        read_app_file(BILLION_LAUGHS)


def test_a_few_aliases_are_still_read() -> None:
    text = "name: ok\nmodel: &m scripted:x\nopening_statement: *m\n"
    assert read_app_file(text).config.model == "scripted:x"


def test_a_huge_app_file_is_refused_unparsed() -> None:
    with pytest.raises(ConfigImportError, match="over 10,000,000 characters"):
        read_app_file("name: x\n" + "#" * MAX_APP_FILE_CHARS)


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "lw.db"
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_DB", str(path))
    return path


def test_a_binary_file_given_as_an_app_names_the_file(db_path: Path, tmp_path: Path) -> None:
    binary = tmp_path / "photo.jpg"
    binary.write_bytes(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x98\x00")
    result = CliRunner().invoke(app, ["app", "create", "--from-yaml", str(binary)])
    assert result.exit_code == 2
    assert f"{binary}: not a UTF-8 text app file (byte 0xff at offset 0)" in result.output
    assert "Traceback" not in result.output


def test_a_yaml_bomb_given_to_the_cli_is_one_error_line(db_path: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yml"
    bomb.write_text(BILLION_LAUGHS, encoding="utf-8")
    result = CliRunner().invoke(app, ["app", "create", "--from-yaml", str(bomb)])
    assert result.exit_code == 1 and "YAML aliases" in result.output


# --- plugin packages (.difypkg) ----------------------------------------------------------------------


def _package(path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("manifest.yaml", "author: a\nname: b\n")
        for info, data in members:
            archive.writestr(info, data)
    return path


def _symlink(name: str, target: str) -> tuple[zipfile.ZipInfo, bytes]:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target.encode()


@pytest.mark.parametrize(
    ("members", "refusal"),
    [
        ([_symlink("main.py", "/etc/passwd")], "a symbolic link: 'main.py'"),
        ([("zeros.bin", bytes(5 * 1024 * 1024))], "'zeros.bin' unpacks to"),
        ([(f"f{i}", b"") for i in range(MAX_PACKAGE_FILES)], f"more than {MAX_PACKAGE_FILES} files"),
        ([("/abs/escaped.txt", b"x")], "outside the package"),
    ],
    ids=["symlink", "zip bomb", "too many files", "absolute path"],
)
def test_a_hostile_plugin_package_is_refused_before_anything_is_written(
    tmp_path: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]], refusal: str
) -> None:
    store = PluginStore(tmp_path / "plugins", tmp_path / "envs")
    package = _package(tmp_path / "evil.difypkg", members)
    with pytest.raises(PluginInstallError, match=re.escape(refusal)):
        store.install(package)
    assert store.list() == []
    written = (
        [p for p in (tmp_path / "plugins").rglob("*") if p.is_file()]
        if (tmp_path / "plugins").exists()
        else []
    )
    assert not any(p.name in ("main.py", "zeros.bin", "escaped.txt") for p in written)


# --- documents ---------------------------------------------------------------------------------------


def _mutations(data: bytes, count: int, seed: int = 1) -> list[bytes]:
    """``count`` broken copies of ``data``: cut short, bytes overwritten, garbage inserted, a slice cut
    out — in turn, from a fixed seed (the same copies every run)."""
    rnd = random.Random(seed)
    out = []
    for i in range(count):
        copy = bytearray(data)
        if i % 4 == 0:
            copy = copy[: rnd.randrange(len(copy))]
        elif i % 4 == 1:
            for _ in range(rnd.randrange(1, 20)):
                copy[rnd.randrange(len(copy))] = rnd.randrange(256)
        elif i % 4 == 2:
            at = rnd.randrange(len(copy))
            copy[at:at] = bytes(rnd.randrange(256) for _ in range(50))
        else:
            start = rnd.randrange(len(copy))
            del copy[start : rnd.randrange(start, len(copy))]
        out.append(bytes(copy))
    return out


def test_a_broken_pdf_is_an_extract_error_never_another_exception() -> None:
    # The 16th copy made pypdf raise a TypeError, which reached the caller as it was.
    for broken in _mutations(make_pdf(["Hello world", "second line"]), 100):
        with contextlib.suppress(ExtractError):
            extract_text(broken, "pdf")
