"""No import cycles among the modules of python/tandem.

The graph is built statically from each module's AST. Rule (what counts as an
edge A -> B):
- every ``import tandem.x`` / ``from tandem.x import y`` / relative import in A,
  at module level *or inside a function or method*: an import deferred into a
  function still makes A depend on B, and deferring it is the usual way a cycle
  is hidden rather than removed;
- ``from P import n`` points at module ``P.n`` when that is a module, else at P;
- imports under ``if TYPE_CHECKING:`` do not count: they never run;
- importing ``P.m`` does not add an edge to package ``P``'s ``__init__`` (Python
  runs it first, but ``__init__`` files here re-export nothing that imports back).
A cycle is a strongly connected component of more than one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG_ROOT = Path(__file__).resolve().parents[1] / "python"

ALLOWED_CYCLES: list[frozenset[str]] = []


def modules(root: Path, top: str = "tandem") -> dict[str, tuple[Path, bool]]:
    out = {}
    for f in (root / top).rglob("*.py"):
        parts = list(f.relative_to(root).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Import nodes, skipping the bodies of ``if TYPE_CHECKING:``."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def import_graph(root: Path, top: str = "tandem") -> dict[str, set[str]]:
    mods = modules(root, top)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, (path, is_pkg) in mods.items():
        pkg = m if is_pkg else m.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [f"{mod}.{a.name}" for a in node.names]
            for t in targets:
                if t == top or t.startswith(top + "."):
                    r = resolve(t)
                    if r and r != m:
                        graph[m].add(r)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def test_no_import_cycles_in_tandem():
    graph = import_graph(PKG_ROOT)
    assert len(graph) > 50 and "tandem.oneswitch.translate" in graph
    bad = [sorted(c) for c in cycles(graph) if c not in ALLOWED_CYCLES]
    assert not bad, f"import cycles among python/tandem modules: {bad}"


def test_allowed_cycles_still_exist():
    """An allow-list entry whose cycle is gone must be deleted, not kept."""
    found = cycles(import_graph(PKG_ROOT))
    for c in ALLOWED_CYCLES:
        assert c in found, f"remove {sorted(c)} from ALLOWED_CYCLES: it is no longer a cycle"


def test_detector_sees_function_level_and_relative_cycles(tmp_path):
    pkg = tmp_path / "tandem"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from tandem.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "sub" / "c.py").write_text("import tandem.a\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tandem import e\n")
    (pkg / "e.py").write_text("from tandem import d\n")
    assert cycles(import_graph(tmp_path)) == [frozenset({"tandem.a", "tandem.sub.b", "tandem.sub.c"})]
