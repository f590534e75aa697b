"""The package's import graph has no cycles, counting imports inside functions too (a cycle hidden in
a function still ties two modules together), and no public function shadows a module."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import rollsim

PKG = Path(rollsim.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the package that ``name`` imports (anywhere in the file), packages' ``__init__``
    left out as targets (they only re-export)."""
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and isinstance(block.test, ast.Name) and block.test.id == "TYPE_CHECKING"
                   for stmt in block.body for n in ast.walk(stmt)}  # annotations only, not run
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(pkg.split(".")[: len(pkg.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            if t in known and t != name:
                found.add(t)
    return found


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    packages = {m for m, p in mods.items() if p.name == "__init__.py"}
    return {m: {t for t in _imports(m, p, known) if t not in packages} for m, p in mods.items() if m not in packages}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                return stack[stack.index(t):] + [t]
            if t not in state and (c := visit(t)):
                return c
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (c := visit(m)):
            return c
    return None


def test_no_import_cycles():
    graph = _graph()
    assert "rollsim.plot" in graph and "rollsim.simulation" in graph["rollsim.plot"]  # the walker sees imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_module_is_shadowed():
    # rollsim.simulate and rollsim.sweep are functions; their modules are rollsim.simulation and rollsim.sweeps
    shadowed = []
    for info in pkgutil.walk_packages(rollsim.__path__, "rollsim."):
        mod = importlib.import_module(info.name)
        parent, _, leaf = info.name.rpartition(".")
        attr = getattr(importlib.import_module(parent), leaf, None)
        if attr is not None and attr is not mod:
            shadowed.append(f"{parent}.{leaf} is {attr!r}, not the module {info.name}")
    assert not shadowed
