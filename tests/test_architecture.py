"""The tree is the architecture: an import-graph check over pymemory/ (see ARCHITECTURE.md).

Every import counts, inside functions too; only ``if TYPE_CHECKING:`` blocks are skipped,
because they never run.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pymemory"

# Which layers each layer may import (itself always allowed). "encoder-api" is the
# encoder package's root only (`pymemory.encoder`), not its internals.
ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "storage": {"base"},
    "models": {"base"},
    "encoder": {"base", "storage", "models"},
    "retrieval": {"base", "storage", "models", "encoder-api"},
    "agent": {"base", "storage", "models", "retrieval", "encoder-api"},
    "facade": {"base", "storage", "models", "encoder", "retrieval"},
    "evals": {"base", "storage", "models", "encoder", "retrieval", "facade"},
    "cli": {"base", "storage", "models", "encoder", "retrieval", "facade", "evals", "root"},
    "browser": {"base", "storage", "models", "encoder", "retrieval", "facade", "agent", "evals"},
    # Adapters to other frameworks; no layer imports them (none lists "integrations").
    "integrations": {"base", "storage", "models", "retrieval", "facade", "encoder-api"},
    "root": {"base", "storage", "models", "encoder", "retrieval", "facade"},
    "testing": set(),
}
# The browser's modules, importable only under Pyodide; browser/pyodide.py is their one user.
PYODIDE_MODULES = ("js", "pyodide")
PYODIDE_ALLOWED = {
    "pymemory.browser.pyodide",
    # The LLM adapters' fetch transport imports pyodide.http inside its one call, so that
    # agent code runs in both runtimes; CPython never reaches it.
    "pymemory.agent.llm.transport",
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module == "pymemory":
        return "root"
    head = parts[1]
    if head in ("errors", "item", "paths"):
        return "base"
    if head == "memory":
        return "facade"
    if head in ("cli", "cli_format", "cli_commands", "__main__"):
        return "cli"
    if head == "encoder":
        return "encoder-api" if len(parts) == 2 else "encoder"
    if head in ("storage", "models", "retrieval", "agent", "evals", "browser", "testing"):
        return head
    if head == "integrations":
        return head
    raise AssertionError(f"{module}: not in any layer; add it to ARCHITECTURE.md and here")


def module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path, module: str) -> list[tuple[str, int]]:
    """(absolute module imported, line) for every import that can run."""
    is_pkg = path.name == "__init__.py"
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[: len(base) - (child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                found.append((target, child.lineno))
                # `from pkg import submodule` imports the submodule too
                found.extend((f"{target}.{a.name}", child.lineno) for a in child.names)
            visit(child)

    visit(ast.parse(path.read_text(), str(path)))
    return found


def import_graph(root: Path) -> dict[str, list[tuple[str, int]]]:
    modules = {module_name(root, p): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        edges = []
        for target, line in imports_of(path, name):
            if target.split(".")[0] in PYODIDE_MODULES or target in modules:
                edges.append((target, line))
        graph[name] = edges
    return graph


def violations(root: Path) -> list[str]:
    """Forbidden imports and import cycles under ``root`` (a copy of pymemory/)."""
    graph = import_graph(root)
    problems = []
    for module, edges in sorted(graph.items()):
        layer = layer_of(module)
        home = "encoder" if layer == "encoder-api" else layer
        for target, line in edges:
            where = f"{module}:{line} imports {target}"
            if target.split(".")[0] in PYODIDE_MODULES:
                if module not in PYODIDE_ALLOWED:
                    problems.append(f"{where}: only pymemory.browser.pyodide knows Pyodide")
                continue
            other = layer_of(target)
            if other in (home, "encoder-api" if home == "encoder" else home):
                continue
            allowed = ALLOWED[home]
            if other == "encoder" and "encoder-api" in allowed and "encoder" not in allowed:
                problems.append(f"{where}: use the encoder's package API (pymemory.encoder)")
            elif other not in allowed and not (other == "encoder-api" and "encoder" in allowed):
                problems.append(f"{where}: {home} may not import {other}")
    problems.extend(f"import cycle: {' -> '.join(c)}" for c in _cycles(graph))
    return problems


def _cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w, _ in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return cycles


def test_the_package_keeps_its_layers():
    assert violations(PACKAGE) == []


def test_every_module_belongs_to_a_layer():
    for name in import_graph(PACKAGE):
        assert layer_of(name) in {*ALLOWED, "encoder-api"}


@pytest.mark.parametrize(
    ("module", "line", "expected"),
    [
        ("storage/base.py", "from ..retrieval import bm25", "storage may not import retrieval"),
        ("models/runtime.py", "from ..encoder import RuleEncoder", "models may not import encoder"),
        ("retrieval/pipeline.py", "from ..encoder.rules import RuleEncoder", "package API"),
        (
            "encoder/rules.py",
            "from ..retrieval.analyzer import analyze",
            "may not import retrieval",
        ),
        ("memory.py", "from .browser import api", "facade may not import browser"),
        ("agent/blocks.py", "import js", "only pymemory.browser.pyodide knows Pyodide"),
        ("retrieval/bm25.py", "from . import catalog", "import cycle"),
        ("memory.py", "from .integrations import langgraph", "facade may not import integrations"),
        (
            "integrations/langgraph/store.py",
            "from ...agent import blocks",
            "integrations may not import agent",
        ),
    ],
)
def test_a_forbidden_import_is_caught(tmp_path, module, line, expected):
    copy = tmp_path / "pymemory"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    target = copy / module
    target.write_text(target.read_text() + f"\n\ndef _injected():\n    {line}\n")
    found = violations(copy)
    assert any(expected in problem for problem in found), found


def test_public_names_are_the_users_names():
    import pymemory

    # `fusion` is the strategy (the module is pymemory.retrieval.fusion), as the other
    # strategies are; stores and vector stores come from the top level too.
    assert callable(pymemory.fusion) and pymemory.fusion(k=10).k == 10
    from pymemory import InMemoryVectorStore, KvVectorStore, MapKv, SqliteKv

    assert issubclass(KvVectorStore, InMemoryVectorStore)
    assert SqliteKv.__module__ == "pymemory.storage.sqlite" and MapKv.__module__.endswith("map")
    assert sorted(pymemory.__all__) == sorted(set(pymemory.__all__))
    for name in pymemory.__all__:
        assert getattr(pymemory, name) is not None
