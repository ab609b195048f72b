"""Run inside a plugin's environment (``python sdk_probe.py CODE_DIR``), never imported by loopwright:
the static half of checking that a plugin's code runs on the ``dify_plugin`` installed there.

It prints one JSON object:

- ``sdk``: the installed ``dify_plugin`` version;
- ``files``: how many ``.py`` files the plugin has, and ``syntax``: those this interpreter cannot
  compile (``path:line: message``) — a plugin written for Python 3.12 may use its syntax anywhere,
  also in modules imported only when a tool runs;
- ``names``: how many names the plugin imports from ``dify_plugin``, and ``missing``: those this SDK
  does not have (``from dify_plugin.x import Y (path:line)``) — again wherever the import is, at the
  top of a module or inside a function.

Only the standard library: it runs on whatever interpreter the environment was built on.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import json
import sys
from pathlib import Path

SDK = "dify_plugin"
SKIPPED_DIRS = frozenset({".venv", "venv", "__pycache__", ".git", "node_modules"})


def python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if not SKIPPED_DIRS.intersection(p.relative_to(root).parts))


def sdk_imports(tree: ast.AST) -> list[tuple[str, str | None, int]]:
    """(module, name or None for ``import module``, line) of every import from the SDK."""
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == SDK or node.module.startswith(SDK + "."):
                found += [(node.module, a.name, node.lineno) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name.startswith(SDK)]
    return found


def resolves(module: str, name: str | None) -> bool:
    try:
        imported = importlib.import_module(module)
    except Exception:  # an SDK module that is missing or fails to import
        return False
    if name is None or hasattr(imported, name):
        return True
    try:  # ``from dify_plugin.x import submodule``
        importlib.import_module(f"{module}.{name}")
    except Exception:
        return False
    return True


def probe(root: Path) -> dict[str, object]:
    files = python_files(root)
    syntax: list[str] = []
    missing: list[str] = []
    names = 0
    checked: dict[tuple[str, str | None], bool] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            source = path.read_bytes()
            tree = ast.parse(source, rel)
            compile(tree, rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            syntax.append(f"{rel}:{exc.lineno}: {exc.msg}")
            continue
        except (OSError, ValueError) as exc:
            syntax.append(f"{rel}: {exc}")
            continue
        for module, name, line in sdk_imports(tree):
            names += 1
            key = (module, name)
            if key not in checked:
                checked[key] = resolves(module, name)
            if not checked[key]:
                shown = f"from {module} import {name}" if name else f"import {module}"
                missing.append(f"{shown} ({rel}:{line})")
    try:
        version = importlib.metadata.version(SDK)
    except importlib.metadata.PackageNotFoundError:
        version = ""
    return {"sdk": version, "files": len(files), "syntax": syntax, "names": names, "missing": missing}


def main() -> None:
    root = Path(sys.argv[1]).resolve()
    sys.path.insert(0, str(root))  # as the plugin runs: from its own folder
    result = probe(root)
    sys.stdout.flush()
    sys.stdout.write("\n" + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
