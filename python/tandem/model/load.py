"""Load a scenario YAML file and report every problem with its place.

``load_scenario(path) -> Scenario`` reads the file with a YAML loader that
records the line/column of every key and value, validates it against
``tandem.model.scenario.Scenario`` and, on failure, raises ``ScenarioError``
whose ``problems`` is a list of ``(yaml_path, message)`` and whose ``str`` is
one line per problem::

    examples/bad.yaml:7:12: devices.snic0.cores: -4 — must be ≥ 1

YAML is read with YAML 1.2 booleans (only true/false), so keys like ``on`` or
values like ``no`` stay strings. Duplicate keys are errors. This module does
file I/O; ``parse_scenario_text`` is the pure core.
"""

from __future__ import annotations

import difflib
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import yaml
from pydantic import BaseModel, ValidationError

from tandem.model.scenario import Scenario
from tandem.model.yaml_limits import Budget, YamlLimitError, check_node


@dataclass(frozen=True)
class Problem:
    """One problem in one file: YAML path, what is wrong, where."""

    path: str  # "devices.snic0.cores" ("" for the whole document)
    message: str  # "-4 — must be ≥ 1"
    line: int | None = None  # 1-based
    column: int | None = None  # 1-based

    def render(self, file: str) -> str:
        where = file
        if self.line is not None:
            where += f":{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"


class ScenarioError(Exception):
    """A scenario file with problems. ``problems``: list of (yaml_path, message)."""

    def __init__(self, file: str, details: list[Problem]):
        self.file = file
        self.details = details
        self.problems: list[tuple[str, str]] = [(p.path, p.message) for p in details]
        super().__init__("\n".join(p.render(file) for p in details))


class ScenarioFileError(ScenarioError):
    """The file itself cannot be read (missing, a directory, unreadable)."""


# --------------------------------------------------------------------------- YAML with marks


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's when available: 20× faster) with YAML 1.2 booleans (true/false only)."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)
# YAML 1.2 also reads exponent floats without a dot (1e3, 2.5E-6)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"),
)

Marks = dict[tuple, tuple[int, int]]


def _walk(loader: _Loader, node: yaml.Node, path: tuple, values: Marks, keys: Marks, dups: list[Problem],
          budget: Budget | None = None) -> None:
    budget = budget or Budget()  # refuses recursive aliases and alias bombs (YamlLimitError)
    budget.enter(node)
    values[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set = set()
        for knode, vnode in node.value:
            if knode.tag == "tag:yaml.org,2002:merge":
                check_node(vnode, budget)
                continue
            if not isinstance(knode, yaml.ScalarNode):
                check_node(knode, budget)
            key = loader.construct_object(knode, deep=True)
            try:
                hash(key)
            except TypeError:
                continue
            if key in seen:
                dups.append(
                    Problem(_dotted(path + (key,)), "duplicate key (a later value would silently win)", knode.start_mark.line + 1, knode.start_mark.column + 1)
                )
            seen.add(key)
            keys[path + (key,)] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
            _walk(loader, vnode, path + (key,), values, keys, dups, budget)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(loader, item, path + (i,), values, keys, dups, budget)
    budget.leave(node)


def read_yaml(text: str, file: str = "<string>") -> tuple[Any, Marks, Marks]:
    """Parse YAML text; returns (data, value marks, key marks). Raises ScenarioError."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            raise ScenarioError(file, [Problem("", "the file is empty; a scenario is a mapping with name, devices, …")])
        values: Marks = {}
        keys: Marks = {}
        dups: list[Problem] = []
        _walk(loader, node, (), values, keys, dups)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        msg = f"YAML syntax: {e.problem or e.context}"
        raise ScenarioError(file, [Problem("", msg, mark.line + 1 if mark else None, mark.column + 1 if mark else None)]) from None
    except yaml.YAMLError as e:
        raise ScenarioError(file, [Problem("", f"YAML: {e}")]) from None
    except YamlLimitError as e:
        raise ScenarioError(file, [Problem("", e.message, e.line, e.column)]) from None
    finally:
        loader.dispose()
    if dups:
        raise ScenarioError(file, dups)
    return data, values, keys


# --------------------------------------------------------------------------- error translation


def _dotted(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _show(value: Any) -> str:
    if isinstance(value, (dict, list)) or value is None:
        return ""
    text = repr(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _unwrap(tp: Any) -> list[Any]:
    """The concrete types inside Annotated/Optional/Union."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(tp)[0])
    if origin is Union or str(origin) == "types.UnionType":
        return [t for a in typing.get_args(tp) for t in _unwrap(a) if t is not type(None)]
    return [tp]


def _model_at(loc: tuple, tags: dict[int, str], root: type[BaseModel] = Scenario) -> type[BaseModel] | None:
    """The pydantic model class that the YAML mapping at ``loc`` is validated against."""
    current: list[Any] = [root]
    for i, part in enumerate(loc):
        nxt: list[Any] = []
        for tp in current:
            origin = typing.get_origin(tp)
            if isinstance(tp, type) and issubclass(tp, BaseModel):
                field = next((f for n, f in tp.model_fields.items() if part in (n, f.alias)), None)
                if field is not None:
                    nxt += _unwrap(field.annotation)
            elif origin is dict:
                nxt += _unwrap(typing.get_args(tp)[1])
            elif origin is list:
                nxt += _unwrap(typing.get_args(tp)[0])
        if i in tags:  # a tagged union member was chosen at this depth
            kind = tags[i]
            nxt = [t for t in nxt if isinstance(t, type) and issubclass(t, BaseModel) and _literal_kind(t) == kind] or nxt
        current = nxt
    models = [t for t in current if isinstance(t, type) and issubclass(t, BaseModel)]
    return models[0] if len(models) == 1 else None


def _literal_kind(model: type[BaseModel]) -> str | None:
    f = model.model_fields.get("kind")
    if f is None:
        return None
    args = typing.get_args(f.annotation)
    return args[0] if args else None


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


_SIMPLE = {
    "missing": "required field is missing",
    "int_parsing": "expected a whole number",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "bool_parsing": "expected true or false",
    "bool_type": "expected true or false",
    "string_type": "expected text",
    "dict_type": "expected a mapping (key: value lines)",
    "model_type": "expected a mapping (key: value lines)",
    "model_attributes_type": "expected a mapping (key: value lines)",
    "list_type": "expected a list",
    "finite_number": "expected a finite number",
}


def _message(err: dict) -> str:
    t, ctx = err["type"], err.get("ctx") or {}
    if t in _SIMPLE:
        return _SIMPLE[t]
    if t == "greater_than_equal":
        return f"must be ≥ {ctx['ge']}"
    if t == "greater_than":
        return f"must be > {ctx['gt']}"
    if t == "less_than_equal":
        return f"must be ≤ {ctx['le']}"
    if t == "less_than":
        return f"must be < {ctx['lt']}"
    if t == "too_short":
        return f"must have at least {ctx.get('min_length', 1)} entr{'y' if ctx.get('min_length', 1) == 1 else 'ies'}"
    if t == "literal_error":
        return f"expected one of {ctx.get('expected')}"
    if t in _KINDS:
        a, b = _KINDS[t]
        return f"expected a mapping with kind: {a} or kind: {b}"
    return err["msg"]


_KINDS = {"device_kind": ("host", "snic"), "instance_kind": ("nf", "vm")}


def translate(exc: ValidationError, values: Marks, keys: Marks, root: type[BaseModel] = Scenario) -> list[Problem]:
    """pydantic errors -> Problems with clean YAML paths, plain messages and marks.
    ``root``: the model the whole document was validated against (a scenario, or
    another file format of the same schema, e.g. a OneSwitch topology). Errors
    of type ``plain`` (``PydanticCustomError("plain", msg)``) are shown as written,
    without the input in front."""
    out: list[Problem] = []
    for err in exc.errors(include_url=False):
        raw = tuple(err["loc"])
        loc: tuple = ()
        tags: dict[int, str] = {}
        for part in raw:
            if isinstance(part, str) and part.startswith("kind:"):
                tags[len(loc) - 1] = part[len("kind:"):]
            else:
                loc += (part,)
        t = err["type"]
        is_key = bool(loc) and loc[-1] == "[key]"
        if is_key:
            loc = loc[:-1]
        msg = _message(err)
        if t in ("device_kind", "instance_kind") and isinstance(err.get("input"), dict):
            loc += ("kind",)
            kind = err["input"].get("kind")
            if kind is None:
                msg = "required field is missing; write kind: {} or kind: {}".format(*_KINDS[t])
            else:
                msg = f"{kind!r} — {err['msg']}"
        elif t == "extra_forbidden":
            model = _model_at(loc[:-1], tags, root)
            msg = "unknown key"
            if model is not None:
                allowed = _allowed_keys(model)
                key = str(loc[-1])
                close = [a for a in allowed if a.startswith(key) or key.startswith(a)][:1]
                close = close or difflib.get_close_matches(key, allowed, n=1)
                msg += f" (did you mean {close[0]!r}?)" if close else ""
                msg += f"; allowed: {', '.join(allowed)}"
        elif t not in ("missing", "plain") and not is_key:
            shown = _show(err.get("input"))
            if shown:
                msg = f"{shown} — {msg}"
        mark = _mark_for(loc, t, values, keys)
        out.append(Problem(_dotted(loc), msg, *(mark or (None, None))))
    out.sort(key=lambda p: (p.line or 0, p.column or 0, p.path))
    return out


def _mark_for(loc: tuple, t: str, values: Marks, keys: Marks) -> tuple[int, int] | None:
    if t == "extra_forbidden" and loc in keys:
        return keys[loc]
    probe = loc
    while probe:
        if probe in values:
            return values[probe]
        probe = probe[:-1]
    return values.get(())


# --------------------------------------------------------------------------- entry points


def parse_scenario_text(text: str, file: str = "<string>", *, scenario_dir: Path | None = None) -> Scenario:
    """Validate scenario YAML text (pure, but for reading the pcap files of replay
    sources, found relative to ``scenario_dir``). Raises ScenarioError listing every problem."""
    data, values, keys = read_yaml(text, file)
    if not isinstance(data, dict):
        raise ScenarioError(file, [Problem("", f"a scenario must be a mapping (name: …, devices: …), got {type(data).__name__}", 1, 1)])
    bad_keys = [k for k in data if not isinstance(k, str)]
    if bad_keys:
        raise ScenarioError(file, [Problem(str(k), "keys must be text", *keys.get((k,), (None, None))) for k in bad_keys])
    try:
        sc = Scenario.model_validate(data, context={"scenario_dir": scenario_dir})
    except ValidationError as e:
        raise ScenarioError(file, translate(e, values, keys)) from None
    if sc.rules:
        _check_rules(sc, text, file, values)
    return sc


def _check_rules(sc: Scenario, text: str, file: str, values: Marks) -> None:
    """Parse the scenario's ``rules:`` now, so a typo in them is reported like any other
    problem of the file: inline rules at their line and column in the scenario, a rules
    file at its own ``file:line:col``."""
    from tandem.model.rules_text import RulesSourceError, rules_source
    from tandem.rules.ofctl import parse_flows
    from tandem.rules.ofctl import OfctlSyntaxError

    try:
        body, source = rules_source(sc)
        parse_flows(body, source)
    except RulesSourceError as e:
        raise ScenarioError(file, [Problem("rules", str(e).split(": ", 1)[1], *values.get(("rules",), (None, None)))]) from None
    except OfctlSyntaxError as e:
        if source != "rules":  # a rules file: its own place
            raise ScenarioError(source, [Problem("rules", f"{e.reason}", e.line, e.column)]) from None
        start, col = values.get(("rules",), (1, 1))
        lines = text.splitlines()
        block = start - 1 < len(lines) and lines[start - 1][col - 1:col] in ("|", ">")
        line = start + (1 if block else 0) + e.line - 1
        if block:
            raw = lines[line - 1] if line - 1 < len(lines) else ""
            col = len(raw) - len(raw.lstrip()) + e.column
        else:
            col += e.column - 1
        raise ScenarioError(file, [Problem("rules", f"flow {e.line}: {e.reason}", line, col)]) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises ScenarioFileError if it cannot be read,
    ScenarioError (one problem per line, with YAML paths) if it is not a valid scenario."""
    p = Path(path)
    name = str(path)
    if not p.exists():
        raise ScenarioFileError(name, [Problem("", "no such file")])
    if p.is_dir():
        raise ScenarioFileError(name, [Problem("", "is a directory, expected a scenario .yaml file")])
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(name, [Problem("", f"not UTF-8 text ({e.reason} at byte {e.start})")]) from None
    except OSError as e:
        raise ScenarioFileError(name, [Problem("", f"cannot read: {e.strerror}")]) from None
    return parse_scenario_text(text, name, scenario_dir=p.parent)
