"""The architecture, checked on the source: which part may import which, and no import cycles.

Every ``import`` in ``src/loopwright`` counts — at module level, inside functions and under
``TYPE_CHECKING`` — because each is a dependency a reader has to follow. The rules are read from one
table, ``docs/layers.toml`` (drawn in docs/architecture.md): a part (a package, a root module or a
dotted sub-part such as ``app.dify``) may import itself, what it ``imports`` and what it ``kept``.
"""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import loopwright

ROOT = Path(loopwright.__file__).parent
TABLE = Path(__file__).resolve().parent.parent / "docs" / "layers.toml"


def _table() -> dict[str, dict[str, Any]]:
    with TABLE.open("rb") as f:
        parts: dict[str, dict[str, Any]] = tomllib.load(f)["parts"]
    return parts


def _part(module: str, parts: Mapping[str, object]) -> str:
    """The part a module belongs to: the longest name in the table that is it or a package above it
    (``loopwright.app.dify.stream`` → ``app.dify`` if the table has it, else ``app``)."""
    rel = module.split(".")[1:] or ["__init__"]
    for end in range(len(rel), 0, -1):
        name = ".".join(rel[:end])
        if name in parts:
            return name
    raise AssertionError(f"{module} belongs to no part of {TABLE.name}")


def _within(module: str, name: str) -> bool:
    rel = ".".join(module.split(".")[1:]) or "__init__"
    return rel == name or rel.startswith(name + ".")


def _wrong_edges(graph: Mapping[str, set[str]], parts: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The imports that the table does not allow, as ``src -> dst``."""
    wrong = []
    for src, targets in graph.items():
        own = _part(src, parts)
        rule = parts[own]
        allowed = [own, *rule.get("imports", []), *rule.get("kept", {})]
        wrong += [f"{src} -> {dst}" for dst in targets if not any(_within(dst, a) for a in allowed)]
    return sorted(wrong)


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


def test_parts_import_only_what_the_table_allows() -> None:
    assert _wrong_edges(_graph(), _table()) == []


def test_every_kept_edge_is_still_used() -> None:
    """An edge kept against the picture leaves the table once the code no longer needs it."""
    parts = _table()
    used = {(_part(src, parts), dst) for src, targets in _graph().items() for dst in targets}
    unused = sorted(
        f"{part} -> {kept}"
        for part, rule in parts.items()
        for kept in rule.get("kept", {})
        if not any(p == part and _within(dst, kept) for p, dst in used)
    )
    assert unused == []


def test_no_never_edge_is_allowed() -> None:
    parts = _table()
    clash = sorted(
        f"{part} -> {never}"
        for part, rule in parts.items()
        for never in rule.get("never", {})
        if never in rule.get("imports", []) or never in rule.get("kept", {})
    )
    assert clash == []


def test_the_table_names_the_parts_of_the_source() -> None:
    """Every package and root module of src/loopwright has a rule, and every part named exists."""
    tops = {p.stem for p in ROOT.glob("*.py")} | {p.parent.name for p in ROOT.glob("*/__init__.py")}
    parts = _table()
    assert {name for name in parts if "." not in name} == tops
    modules = _modules()
    named = {n for rule in parts.values() for key in ("imports", "kept", "never") for n in rule.get(key, ())}
    missing = sorted(n for n in set(parts) | named if not any(_within(m, n) for m in modules))
    assert missing == []


def test_a_sub_part_has_its_own_rule() -> None:
    """The longest name wins: a module of ``app.dify`` is checked against that rule, another module of
    ``app`` against the package's, and a package may import its own sub-parts."""
    parts = {
        "app": {"imports": ["store"]},
        "app.dify": {"imports": ["app.config", "model"]},
        "store": {},
        "model": {},
    }
    graph = {
        "loopwright.app.dify.stream": {
            "loopwright.model.entities",
            "loopwright.store.db",
            "loopwright.app.config",
        },
        "loopwright.app.dify": {"loopwright.app.runtime"},
        "loopwright.app.runtime": {
            "loopwright.store.db",
            "loopwright.model.entities",
            "loopwright.app.dify.stream",
        },
        "loopwright.app.config": set(),
    }
    assert _part("loopwright.app.dify.stream", parts) == "app.dify"
    assert _part("loopwright.app.runtime", parts) == "app"
    assert _part("loopwright", {"__init__": {}}) == "__init__"
    assert _wrong_edges(graph, parts) == [
        "loopwright.app.dify -> loopwright.app.runtime",
        "loopwright.app.dify.stream -> loopwright.store.db",
        "loopwright.app.runtime -> loopwright.model.entities",
    ]


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
