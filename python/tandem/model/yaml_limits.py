"""Limits on what a YAML document may expand to: no recursive aliases, bounded size.

YAML aliases (``*a``) reuse a node; a loader that walks or copies the document
expands every reuse, so nine nested levels of ten aliases (~1 KB of text) become
10^9 nodes (the "billion laughs" alias bomb), and an alias inside its own anchor
(``devices: &a {host: *a}``) never ends. Safe loaders elsewhere cap alias
expansion; this module does the same for every Tandem input file:

* ``Budget.enter(node)`` / ``Budget.leave(node)`` bracket a walk over one node:
  entering a node that is already on the walk's path is a recursive alias;
  more than ``MAX_NODES`` visited nodes (counting every alias expansion) or a
  depth beyond ``MAX_DEPTH`` is too large, and so is re-visiting more than
  ``MAX_ALIAS_NODES`` nodes through aliases. Each raises ``YamlLimitError`` with
  the line and column of the alias or node where the limit was hit.
* ``check_node(node)`` walks a composed node graph with a Budget (for loaders
  that do not walk the graph themselves); ``safe_load(text)`` composes, checks
  and then constructs, as a bounded stand-in for ``yaml.safe_load``.

Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 4_000_000  # nodes visited in all (a 100k-rule file is ~10^6 without any alias)
MAX_ALIAS_NODES = 20_000  # nodes visited again through an alias (a real file reuses a few anchors)
MAX_DEPTH = 200  # nesting depth (Python's recursion limit is 1000)


class YamlLimitError(ValueError):
    """A YAML document over a limit. ``line``/``column`` are 1-based (or None)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}: " if self.line is not None else ""
        return f"{where}{self.message}"


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class Budget:
    """Counts nodes visited in one walk (aliases expanded) and the nodes on the current path."""

    def __init__(self, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH, max_alias_nodes: int = MAX_ALIAS_NODES):
        self.max_nodes = max_nodes
        self.max_depth = max_depth
        self.max_alias_nodes = max_alias_nodes
        self.visited = 0
        self.again = 0  # visits of a node already visited (alias expansion)
        self._seen: set[int] = set()
        self._path: set[int] = set()
        self._depth = 0

    def enter(self, node: yaml.Node) -> None:
        self.visited += 1
        if id(node) in self._path:
            raise YamlLimitError("recursive alias: this node contains itself (an anchor used inside its own value)", *_mark(node))
        if id(node) in self._seen:
            self.again += 1
            if self.again > self.max_alias_nodes:
                raise YamlLimitError(
                    f"aliases expand to more than {self.max_alias_nodes:,} copied nodes (an alias bomb?); "
                    "write the values out or nest fewer aliases", *_mark(node))
        else:
            self._seen.add(id(node))
        if self.visited > self.max_nodes:
            raise YamlLimitError(f"the document has more than {self.max_nodes:,} nodes", *_mark(node))
        self._depth += 1
        if self._depth > self.max_depth:
            raise YamlLimitError(f"nested deeper than {self.max_depth} levels", *_mark(node))
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            self._path.add(id(node))

    def leave(self, node: yaml.Node) -> None:
        self._depth -= 1
        self._path.discard(id(node))


def check_node(node: yaml.Node | None, budget: Budget | None = None) -> None:
    """Walk a composed node graph; raise YamlLimitError on a recursive alias or over-size."""
    if node is None:
        return
    budget = budget or Budget()
    # iterative walk: ("enter", node) then ("leave", node) after its children
    stack: list[tuple[bool, yaml.Node]] = [(True, node)]
    while stack:
        entering, n = stack.pop()
        if not entering:
            budget.leave(n)
            continue
        budget.enter(n)
        stack.append((False, n))
        if isinstance(n, yaml.MappingNode):
            for k, v in reversed(n.value):
                stack.append((True, v))
                stack.append((True, k))
        elif isinstance(n, yaml.SequenceNode):
            for item in reversed(n.value):
                stack.append((True, item))


def _loader_class() -> type:
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str, loader_cls: type | None = None) -> Any:
    """Like ``yaml.safe_load`` but refusing recursive aliases and alias bombs (YamlLimitError)."""
    loader = (loader_cls or _loader_class())(text)
    try:
        node = loader.get_single_node()
        check_node(node)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()
