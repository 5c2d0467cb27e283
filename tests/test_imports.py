"""No import circles among pyvt's modules (if two modules need each other, the shared part is
a third module). The graph is read from the source: every import statement counts, those
deferred inside functions and under ``if TYPE_CHECKING:`` included."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PYVT = Path(__file__).resolve().parent.parent / "pyvt"


def _pyx_imports(pkg: str) -> re.Pattern[str]:
    """Cython sources cannot be parsed by ast; their imports of the package's modules are
    plain lines (``from . import x``, ``from .x cimport y``, ``from pkg.x import y``,
    ``import pkg.x``)."""
    return re.compile(rf"^\s*(?:from\s+(\.+\w*|{pkg}(?:\.\w+)?)\s+c?import\s+([\w ,]+)|c?import\s+({pkg}\.\w+))",
                      re.MULTILINE)


def _module_names(folder: Path) -> set[str]:
    return {p.name.split(".")[0] for p in folder.iterdir() if p.suffix in (".py", ".pyx")}


def _resolve(folder_mods: set[str], base: str, names: list[str]) -> set[str]:
    """Modules of the package that ``from <base> import <names>`` loads: ``base`` is '' for
    the package itself ('from . import x' loads submodule x if there is one, else __init__)."""
    if base:
        return {base} if base in folder_mods else set()
    return {n if n in folder_mods else "__init__" for n in names}


def import_graph(folder: Path) -> dict[str, set[str]]:
    """{module: modules of the same package it imports} for the .py and .pyx files of folder."""
    mods = _module_names(folder)
    pkg = folder.name
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".py", ".pyx"):
            continue
        me = path.name.split(".")[0]
        deps: set[str] = set()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(text, str(path))):
                if isinstance(node, ast.ImportFrom):
                    names = [a.name for a in node.names]
                    if node.level == 1:
                        deps |= _resolve(mods, node.module or "", names)
                    elif node.level == 0 and node.module and node.module.split(".")[0] == pkg:
                        deps |= _resolve(mods, node.module.partition(".")[2], names)
                elif isinstance(node, ast.Import):
                    for a in node.names:
                        head, _, sub = a.name.partition(".")
                        if head == pkg:
                            deps |= {sub.split(".")[0]} & mods if sub else {"__init__"}
        else:
            for m in _pyx_imports(pkg).finditer(text):
                src, names, plain = m.group(1), m.group(2), m.group(3)
                if plain:
                    deps |= {plain.split(".")[1]} & mods
                elif src.startswith("."):
                    deps |= _resolve(mods, src.lstrip("."), [n.split()[0] for n in names.split(",") if n.strip()])
                else:
                    deps |= _resolve(mods, src.partition(".")[2], [n.split()[0] for n in names.split(",") if n.strip()])
        deps.discard(me)
        graph[me] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_pyvt_has_no_import_circle():
    graph = import_graph(PYVT)
    assert {"generation", "model", "options", "chat", "_model", "_ops"} <= set(graph)
    assert "model" in graph["generation"] and "options" in graph["model"]  # the graph is read
    cycle = find_cycle(graph)
    assert cycle is None, "import circle in pyvt: " + " -> ".join(cycle or [])


def test_the_check_finds_a_deferred_circle(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g()\n")
    (pkg / "b.py").write_text("def g():\n    from .a import f  # deferred: still a circle\n    return f\n")
    (pkg / "c.pyx").write_text("from pkg.a cimport x\n")
    graph = import_graph(pkg)
    assert graph == {"__init__": {"a"}, "a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert find_cycle(graph) == ["a", "b", "a"]
    (pkg / "b.py").write_text("def g():\n    return 1\n")
    assert find_cycle(import_graph(pkg)) is None
