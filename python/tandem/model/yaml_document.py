"""A YAML/JSON input file kept with the line and column of every node, so an error
can name `file:line:col: path: message`. Shared by the placement problem readers
(SmartChain, POF) and the POF offload scenario files. Alias bombs and recursive
aliases are refused (`yaml_limits`). Pure but for reading the one file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from tandem.model.yaml_limits import YamlLimitError, check_node


class Document:
    """A parsed YAML/JSON file and the line/column of every node in it."""

    def __init__(self, path: Path, error: type[ValueError]):
        self.path = path
        self.error = error
        try:
            text = path.read_text()
        except OSError as e:
            raise error(f"{path}: cannot read: {e.strerror or e}") from None
        try:
            self.node = yaml.compose(text)
            check_node(self.node)  # no recursive alias, no alias bomb
            self.data = yaml.safe_load(text)
        except YamlLimitError as e:
            raise error(f"{path}:{e.line}:{e.column}: {e.message}") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
            raise error(f"{path}{where}: not valid YAML/JSON: {getattr(e, 'problem', e)}") from None
        if not isinstance(self.data, dict):
            raise error(f"{path}: expected a mapping at the top level")

    def where(self, loc: tuple[Any, ...]) -> str:
        """'file:line:col' of the deepest node on `loc` that exists."""
        node = self.node
        for part in loc:
            nxt = None
            if isinstance(node, yaml.MappingNode):
                nxt = next((v for k, v in node.value if k.value == str(part)), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                nxt = node.value[part]
            if nxt is None:
                break
            node = nxt
        m = node.start_mark if node is not None else None
        return f"{self.path}:{m.line + 1}:{m.column + 1}" if m else str(self.path)

    def fail(self, loc: tuple[Any, ...], message: str) -> ValueError:
        return self.error(f"{self.where(loc)}: {path_str(loc)}: {message}")

    def validation_error(self, err: ValidationError) -> ValueError:
        first = err.errors()[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith(("function-", "tagged-"))))
        msg = first["msg"].removeprefix("Value error, ")
        more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
        return self.fail(loc, msg + more)


def path_str(loc: tuple[Any, ...]) -> str:
    s = ""
    for p in loc:
        s += f"[{p}]" if isinstance(p, int) else (f".{p}" if s else str(p))
    return s or "(top level)"
