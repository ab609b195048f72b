"""The architecture, checked on the source: which package may import which, and no import cycles.

Every ``import`` in ``src/loopwright`` counts — at module level, inside functions and under
``TYPE_CHECKING`` — because each is a dependency a reader has to follow. The allowed direction is
DESIGN's: server → app → agent → tools / model; store below app; nothing below imports above.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import loopwright

ROOT = Path(loopwright.__file__).parent

# package → the packages it may import (itself always). Top-level modules count as packages.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_threads": set(),
    "paths": set(),
    "model": {"errors", "_threads"},
    "testing": {"model", "errors"},
    "store": {"model", "errors", "paths"},
    "knowledge": {"model", "errors", "_threads", "config", "paths"},
    "tools": {"model", "knowledge", "errors", "_threads", "paths"},
    "config": {"model", "tools", "errors", "_threads"},
    "agent": {"model", "tools", "errors"},
    "app": {"agent", "tools", "model", "store", "knowledge", "config", "errors", "_threads", "paths"},
    "server": {"app", "agent", "tools", "model", "config", "errors"},
    "cli": {"server", "app", "agent", "tools", "model", "knowledge", "config", "errors", "_threads", "paths"},
    "__main__": {"cli"},
    "__init__": {"agent", "tools", "model", "errors"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"] if rel.parts != ("__init__",) else ["__init__"]
        out[".".join(["loopwright", *parts])] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The loopwright modules ``name`` imports (a ``from x import y`` of a submodule counts as it)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("loopwright"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            if not base.startswith("loopwright"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {m for m in found if m in known and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known) for name, path in modules.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_packages_import_only_downwards() -> None:
    wrong = sorted(
        f"{src} -> {dst}"
        for src, targets in _graph().items()
        for dst in targets
        if _package(src) != _package(dst) and _package(dst) not in ALLOWED.get(_package(src), set())
    )
    assert wrong == []


def test_no_import_cycles_between_modules() -> None:
    graph = _graph()
    cycles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1]
    # A package's __init__ re-exporting its own modules is not a cycle of dependencies.
    cycles = [c for c in cycles if not _only_reexports(c, graph)]
    assert cycles == []


def test_no_import_cycles_between_packages() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for src, targets in _graph().items():
        for dst in targets:
            if _package(src) != _package(dst):
                edges[_package(src)].add(_package(dst))
    assert [sorted(c) for c in _strongly_connected(dict(edges)) if len(c) > 1] == []


def _only_reexports(cycle: list[str], graph: dict[str, set[str]]) -> bool:
    """Whether every edge back into the cycle goes through a package ``__init__`` importing its own
    submodules (``from loopwright.agent.agent import Agent`` in ``agent/__init__``)."""
    members = set(cycle)
    for src in cycle:
        for dst in graph[src] & members:
            if not dst.startswith(src + ".") and not (
                ROOT.joinpath(*dst.split(".")[1:], "__init__.py").exists() and src.startswith(dst + ".")
            ):
                return False
    return True


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's algorithm, iterative."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                out.append(component)
    return out
