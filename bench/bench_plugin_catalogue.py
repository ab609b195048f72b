"""Which of the official Dify tool plugins run here: install every ``tools/*`` plugin of a checkout of
``langgenius/dify-official-plugins`` and make one smoke call of each that needs no credentials.

For each plugin, read from the repository's git directory at a commit (nothing is checked out):

- the plugin is packed into a ``.difypkg`` as Dify's packager does (its files at the top, without what
  ``.difyignore`` leaves out), then installed with ``PluginStore.install`` as ``loopwright plugins
  install`` does — on this Python, with the SDK fallback when the plugin asks for a ``dify_plugin``
  this Python cannot run (see docs/plugins.md);
- install: ``ok`` (with ``fallback`` when it runs on an older SDK after the checks), or the reason;
- tools: how many tools its declarations have;
- smoke call: one tool of a provider that needs no credentials, called through the tool engine with
  a benign parameter set made from its declaration (required parameters only: a select's default or
  first option, a number's default or minimum, a short text); ``answered`` when the plugin returned
  a result, ``plugin error`` when its own code ran and failed (``no network`` when that was for want
  of the internet), ``failed`` when the call never reached its code; ``none possible`` when every
  provider needs credentials or every tool needs a file.

It installs ~150 plugins (each its own environment from the package index): minutes to tens of
minutes, several GB under ``--envs``. Run:
    .venv/bin/python bench/bench_plugin_catalogue.py GIT_DIR [--commit HEAD] [--jobs 2]
        [--only name,name] [--envs DIR] [--markdown] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import io
import json
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from loopwright.errors import LoopwrightError
from loopwright.tools import ToolEngine
from loopwright.tools.dify_plugins import (
    DifyPlugins,
    DifyPluginSource,
    InstalledPlugin,
    PluginHost,
    PluginStore,
)
from loopwright.tools.dify_plugins.credentials import CredentialStore
from loopwright.tools.dify_plugins.manifest import ParameterSpec, ToolSpec
from loopwright.tools.dify_plugins.sdk_fallback import resolver_reason

DEFAULT_IGNORE = (
    ".venv/",
    "__pycache__/",
    "*.py[cod]",
    ".pytest_cache/",
    ".ruff_cache/",
    ".env",
    "*.difypkg",
)
ALWAYS_IGNORED = (".git/", ".github/")
SAMPLE_TEXT = "Dify"
CALL_TIMEOUT = 60.0
NETWORK_WORDS = (
    "connection",
    "resolve",
    "name or service",
    "timed out",
    "max retries",
    "network",
    "unreachable",
    "ssl",
    "proxy",
    "getaddrinfo",
)


@dataclass
class Row:
    name: str
    install: str = ""  # ok, ok (fallback), or the reason
    tools: int = 0
    smoke: str = ""  # answered / plugin error / no network / failed / none possible …
    detail: str = ""
    seconds: float = 0.0


# --- reading the repository ---------------------------------------------------------------------


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True).stdout


def plugin_names(git_dir: Path, commit: str) -> list[str]:
    names = git(git_dir, "ls-tree", "--name-only", f"{commit}:tools").decode().split()
    return [n for n in names if git_ok(git_dir, f"{commit}:tools/{n}/manifest.yaml")]


def git_ok(git_dir: Path, spec: str) -> bool:
    return (
        subprocess.run(
            ["git", f"--git-dir={git_dir}", "cat-file", "-e", spec], capture_output=True
        ).returncode
        == 0
    )


def ignored(path: str, patterns: Sequence[str]) -> bool:
    """``.difyignore``'s gitignore-like patterns, the ones plugins use: ``dir/`` for a folder at any
    depth, else a glob on the file's name or its path."""
    parts = path.split("/")
    for pattern in patterns:
        if pattern.endswith("/"):
            if any(fnmatch.fnmatch(p, pattern[:-1]) for p in parts[:-1]):
                return True
        elif fnmatch.fnmatch(parts[-1], pattern) or fnmatch.fnmatch(path, pattern.lstrip("/")):
            return True
    return False


def pack(git_dir: Path, commit: str, name: str, target: Path) -> Path:
    """The plugin's ``.difypkg``: its files at the top of a zip, less what ``.difyignore`` leaves
    out (the repository's own when the plugin has none)."""
    files = {}
    with tarfile.open(fileobj=io.BytesIO(git(git_dir, "archive", commit, f"tools/{name}"))) as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            if extracted is not None:
                files[member.name.removeprefix(f"tools/{name}/")] = extracted.read()
    own = files.get(".difyignore")
    patterns = [
        line.strip()
        for line in (own.decode("utf-8", "replace").splitlines() if own is not None else DEFAULT_IGNORE)
        if line.strip() and not line.startswith("#") and not line.startswith("!")
    ]
    package = target / f"{name}.difypkg"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as out:
        for path, data in sorted(files.items()):
            if not ignored(path, [*patterns, *ALWAYS_IGNORED]):
                out.writestr(path, data)
    return package


# --- one plugin ---------------------------------------------------------------------------------


def benign_value(p: ParameterSpec) -> Any:
    """A harmless value for a required parameter, or ``...`` when there is none (a file)."""
    if p.type in ("file", "files"):
        return ...
    if p.default not in (None, ""):
        return p.default
    if p.options:
        return p.options[0]
    if p.type == "number":
        return p.minimum if p.minimum is not None else 1
    if p.type == "boolean":
        return False
    if p.type in ("array",):
        return [SAMPLE_TEXT]
    if p.type in ("object",):
        return {}
    if p.type in ("string", "text-input", "paragraph", "secret-input", "any"):
        return SAMPLE_TEXT
    return ...


def smoke_plan(plugin: InstalledPlugin) -> tuple[str, str, dict[str, Any]] | str:
    """(provider, tool, arguments) of the first tool with a credential-free provider whose required
    parameters all have a benign value; else why none is possible."""
    free = [p for p in plugin.manifest.providers if not any(c.required for c in p.credentials)]
    if not free:
        return "needs credentials"
    for provider in free:
        for tool in provider.tools:
            args = arguments(tool)
            if args is not None:
                return provider.name, tool.name, args
    return "every tool needs a file"


def arguments(tool: ToolSpec) -> dict[str, Any] | None:
    """Values for the required parameters (a form one with a default gets its default from the host),
    or None when one cannot have a benign value."""
    args = {}
    for p in tool.parameters:
        if p.required and (p.form == "llm" or p.default is None):
            value = benign_value(p)
            if value is ...:
                return None
            args[p.name] = value
    return args


async def smoke(store: PluginStore, plugin: InstalledPlugin) -> tuple[str, str]:
    plan = smoke_plan(plugin)
    if isinstance(plan, str):
        return "none possible", plan
    provider, tool, args = plan
    spec = plugin.manifest.provider(provider).tool(tool)
    assert spec is not None
    in_form = {p.name for p in spec.parameters if p.form != "llm"}
    presets = {k: v for k, v in args.items() if k in in_form}  # form parameters are presets, as in an app
    source = DifyPluginSource(
        plugin=plugin.plugin_id,
        provider=provider,
        tools=[tool],
        parameters={tool: presets},
        timeout=CALL_TIMEOUT,
    )
    plugins = DifyPlugins(store, CredentialStore(b"catalogue"), PluginHost(store, call_timeout=CALL_TIMEOUT))
    try:
        toolset = await plugins.toolset(source)
        result = await ToolEngine(toolset.tools).invoke(
            tool, {k: v for k, v in args.items() if k not in in_form}
        )
    except LoopwrightError as exc:
        return "failed", f"{tool}: {exc}"
    finally:
        await plugins.aclose()
    shown = " ".join(result.observation.split())[:90]
    if result.meta.error is None:
        return "answered", f"{tool}({_args(args)}): {shown}"
    text = result.meta.error.lower()
    if "stopped during the call" in text or "did not answer within" in text:
        return "failed", f"{tool}: {shown}"
    kind = "no network" if any(w in text for w in NETWORK_WORDS) else "plugin error"
    return kind, f"{tool}({_args(args)}): {shown}"


def _args(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())[:60]


def one(git_dir: Path, commit: str, name: str, store: PluginStore, work: Path) -> Row:
    row = Row(name)
    started = time.monotonic()
    try:
        package = pack(git_dir, commit, name, work)
        plugin = store.install(package)
    except (LoopwrightError, OSError, subprocess.SubprocessError) as exc:
        lines = [s for s in str(exc).splitlines() if s.strip()]
        row.install = "refused"
        row.detail = _reason(lines)
        row.seconds = time.monotonic() - started
        return row
    row.install = "ok (fallback)" if plugin.sdk_fallback is not None else "ok"
    row.tools = sum(len(p.tools) for p in plugin.manifest.providers)
    row.smoke, row.detail = asyncio.run(smoke(store, plugin))
    row.seconds = time.monotonic() - started
    return row


def _reason(lines: list[str]) -> str:
    """One line of an install error: the installer's own (the SDK fallback's refusals are one line;
    an environment that did not build says its resolver's cause)."""
    if not lines:
        return "(no message)"
    return (lines[0] if len(lines) == 1 else f"{lines[0]} {resolver_reason(chr(10).join(lines))}")[:400]


# --- the run ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("git_dir", type=Path, help="the git directory of dify-official-plugins")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--jobs", type=int, default=2, help="plugins installed at once")
    parser.add_argument("--only", default="", help="comma-separated plugin folder names")
    parser.add_argument(
        "--envs", type=Path, default=None, help="where environments are kept (default: a temporary folder)"
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()
    commit = git(args.git_dir, "rev-parse", args.commit).decode().strip()
    names = plugin_names(args.git_dir, commit)
    if args.only:
        wanted = set(args.only.split(","))
        names = [n for n in names if n in wanted]
    print(f"{len(names)} tool plugins at {commit[:12]}; {args.jobs} at once", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        store = PluginStore(base / "plugins", args.envs or base / "envs")
        lock = threading.Lock()
        rows: list[Row] = []
        started = time.monotonic()

        def run(name: str) -> Row:
            work = Path(tempfile.mkdtemp(dir=base))
            row = one(args.git_dir, commit, name, store, work)
            with lock:
                rows.append(row)
                print(
                    f"[{len(rows)}/{len(names)}] {name}: {row.install} {row.smoke} {row.seconds:.0f} s",
                    file=sys.stderr,
                )
            return row

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(run, names))
        elapsed = time.monotonic() - started
    rows.sort(key=lambda r: r.name)
    print_table(rows, args.markdown)
    print_totals(rows, elapsed, commit)
    if args.json is not None:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n", encoding="utf-8")


def print_table(rows: list[Row], markdown: bool) -> None:
    if markdown:
        print("| plugin | install | tools | smoke call | detail |\n| --- | --- | ---: | --- | --- |")
        for r in rows:
            detail = r.detail.replace("|", "\\|")
            print(f"| {r.name} | {r.install} | {r.tools} | {r.smoke} | {detail} |")
        return
    for r in rows:
        print(f"{r.name:26} {r.install:14} {r.tools:3} {r.smoke:14} {r.detail[:120]}")


def print_totals(rows: list[Row], elapsed: float, commit: str) -> None:
    n = len(rows) or 1
    installed = [r for r in rows if r.install.startswith("ok")]
    fallback = [r for r in installed if "fallback" in r.install]
    called = [r for r in installed if r.smoke in ("answered", "plugin error", "no network")]
    possible = [r for r in installed if r.smoke != "none possible"]
    counts = {
        k: sum(1 for r in installed if r.smoke == k)
        for k in ("answered", "plugin error", "no network", "failed", "none possible")
    }
    print()
    print(f"commit {commit[:12]}: {len(rows)} tool plugins, {elapsed / 60:.1f} min")
    print(
        f"installed: {len(installed)} ({100 * len(installed) / n:.0f} %), "
        f"{len(fallback)} of them on the SDK fallback"
    )
    print(f"tool declarations: {sum(r.tools for r in installed)} tools in the installed plugins")
    print(
        f"smoke calls: {len(possible)} possible; {counts['answered']} answered, "
        f"{counts['plugin error']} the plugin's own error, {counts['no network']} no network, "
        f"{counts['failed']} failed; "
        f"{counts['none possible']} none possible (credentials or files)"
    )
    print(f"reached the plugin's code: {len(called)} of {len(possible)} callable without credentials")


if __name__ == "__main__":
    main()
