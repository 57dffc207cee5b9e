"""The tree is the architecture: an import-graph check over pymemory/ (see ARCHITECTURE.md).

Every import counts, inside functions too. The layer rules skip ``if TYPE_CHECKING:``
blocks (they never run); the cycle check counts them too, since a cycle a type checker
follows is still two modules that each need the other to be read. Also: no module takes
another module's ``_private`` name, and no Python or JS source runs past 600 lines.
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
    # The replicator: below EncryptedKv, it ships sealed bytes (pymemory/sync/).
    "sync": {"base", "storage"},
    "facade": {"base", "storage", "models", "encoder", "retrieval", "sync"},
    "evals": {"base", "storage", "models", "encoder", "retrieval", "facade"},
    "cli": {"base", "storage", "models", "encoder", "retrieval", "facade", "evals", "root"},
    "browser": {
        "base", "storage", "models", "encoder", "retrieval", "facade", "agent", "evals", "sync"
    },
    # Adapters to other frameworks; no layer imports them (none lists "integrations").
    "integrations": {"base", "storage", "models", "retrieval", "facade", "encoder-api"},
    "root": {"base", "storage", "models", "encoder", "retrieval", "facade"},
    "testing": set(),
}
# The browser's modules, importable only under Pyodide; the browser/pyodide/ package is
# their one user.
PYODIDE_MODULES = ("js", "pyodide")
PYODIDE_PACKAGE = "pymemory.browser.pyodide"
# The LLM adapters' fetch transport imports pyodide.http inside its one call, so that agent
# code runs in both runtimes; CPython never reaches it.
PYODIDE_ALLOWED = {"pymemory.agent.llm.transport"}
MAX_LINES = 600


def knows_pyodide(module: str) -> bool:
    return (
        module == PYODIDE_PACKAGE
        or module.startswith(PYODIDE_PACKAGE + ".")
        or (module in PYODIDE_ALLOWED)
    )


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module == "pymemory":
        return "root"
    head = parts[1]
    if head in ("errors", "item", "paths", "checks"):
        return "base"
    if head in ("memory", "background"):
        return "facade"
    if head in ("cli", "cli_format", "cli_commands", "__main__"):
        return "cli"
    if head == "encoder":
        return "encoder-api" if len(parts) == 2 else "encoder"
    if head in ("storage", "models", "retrieval", "agent", "evals", "browser", "testing", "sync"):
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


def imports_of(path: Path, module: str, *, type_checking: bool = False) -> list[tuple[str, int]]:
    """(absolute module imported, line) for every import that can run (and with
    ``type_checking``, those under ``if TYPE_CHECKING:`` too)."""
    is_pkg = path.name == "__init__.py"
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking_only(child) and not type_checking:
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


def import_graph(root: Path, *, type_checking: bool = False) -> dict[str, list[tuple[str, int]]]:
    modules = {module_name(root, p): p for p in root.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        edges = []
        for target, line in imports_of(path, name, type_checking=type_checking):
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
                if not knows_pyodide(module):
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
    typed = import_graph(root, type_checking=True)
    problems.extend(f"import cycle: {' -> '.join(c)}" for c in _cycles(typed))
    problems.extend(private_imports(root))
    return problems


def private_imports(root: Path) -> list[str]:
    """Uses of another module's ``_private`` name: ``from m import _x`` and ``m._x`` where
    ``m`` is a pymemory module imported under that name."""
    modules = {module_name(root, p): p for p in root.rglob("*.py")}
    problems = []
    for name, path in sorted(modules.items()):
        tree = ast.parse(path.read_text(), str(path))
        is_pkg = path.name == "__init__.py"
        aliases: dict[str, str] = {}  # a local name bound to another pymemory module
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".") if is_pkg else name.split(".")[:-1]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for a in node.names:
                    if f"{base}.{a.name}" in modules:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
                    elif _private(a.name) and base in modules and base != name:
                        problems.append(f"{name}:{node.lineno} imports {base}.{a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in modules:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and aliases[node.value.id] != name
                and _private(node.attr)
            ):
                target = aliases[node.value.id]
                problems.append(f"{name}:{node.lineno} uses {target}.{node.attr}")
    return problems


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


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
        ("memory.py", "from .browser.rpc import api", "facade may not import browser"),
        ("agent/blocks.py", "import js", "only pymemory.browser.pyodide knows Pyodide"),
        ("retrieval/bm25.py", "from . import catalog", "import cycle"),
        ("browser/rpc/wire.py", "from . import api", "import cycle"),
        ("storage/base.py", "from .map import _missing", "imports pymemory.storage.map._missing"),
        (
            "retrieval/bm25.py",
            "from . import catalog as c; c._x",
            "uses pymemory.retrieval.catalog._x",
        ),
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


def test_a_cycle_through_a_type_checking_import_is_caught(tmp_path):
    copy = tmp_path / "pymemory"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    target = copy / "retrieval" / "bm25.py"
    target.write_text(
        target.read_text()
        + "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from . import catalog\n"
    )
    assert any("import cycle" in problem for problem in violations(copy))


def long_sources(root: Path) -> list[str]:
    """Python and JS sources over MAX_LINES lines (type declarations excepted)."""
    skip = {".git", ".venv", ".cache", "node_modules", "build", "dist"}
    found = []
    for path in sorted(root.rglob("*")):
        if skip & set(path.relative_to(root).parts) or path.suffix not in (".py", ".mjs", ".js"):
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            found.append(f"{path.relative_to(root)}: {lines} lines")
    return found


def test_no_source_is_over_600_lines():
    assert long_sources(PACKAGE.parent) == []


def test_a_long_source_is_caught(tmp_path):
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "big.mjs").write_text("x;\n" * (MAX_LINES + 1))
    (tmp_path / "web" / "big.d.ts").write_text("x;\n" * (MAX_LINES + 1))
    assert long_sources(tmp_path) == [f"web/big.mjs: {MAX_LINES + 1} lines"]
