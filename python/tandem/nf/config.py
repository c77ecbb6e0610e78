"""Checks a scenario's ``nf_types.*.type`` / ``config`` against the NF code
itself: the Rust constructor is the one validator (it names the offending
field, e.g. ``sas[0].key``), so Python and Rust cannot drift apart."""

from __future__ import annotations

import json
import re
from typing import Any, Optional

from tandem import _dp

# The model NF that only charges its cost profile; not in dp-nf's config list.
MODEL_KINDS = ("fixed_cost", "pass_through")


def known_kinds() -> list[str]:
    return sorted(_dp.nf_kinds())


def check_nf_config(kind: Optional[str], config: dict[str, Any]) -> Optional[str]:
    """None when `kind` with `config` builds; otherwise the message (unknown
    kinds list the known ones; config errors name ``config.<path>``)."""
    if kind is None:
        return "config given without type: say which NF it configures (type: " + ", ".join(known_kinds()) + ")"
    if kind not in _dp.nf_kinds():
        return f"type: unknown NF type {kind!r}; known: {', '.join(known_kinds())}"
    if kind in MODEL_KINDS and config:
        return f"config: {kind} takes no configuration (its cost comes from cost:)"
    text, spans = _dump_with_spans(config)
    msg = _dp.nf_check_config(kind, text)
    if msg is None:
        return None
    prefix = f"{kind} config: "
    if msg.startswith(prefix):
        msg = msg[len(prefix):]
    # The NF's own checks name the field ("sas[0].key: ..."); serde's messages
    # end with "at line 1 column N" of the JSON we sent: map that back to a path.
    m = re.fullmatch(r"(.*) at line 1 column (\d+)", msg, re.S)
    if m is None:
        return f"config.{msg}"
    # "missing field" points at the object's closing brace; other messages at
    # the character just after the offending token.
    path = _path_at(spans, int(m.group(2)) - 1, inclusive=not m.group(1).startswith("missing field"))
    return f"config{path}: {m.group(1)}"


def _dump_with_spans(obj: Any) -> tuple[str, list[tuple[int, int, str]]]:
    """Compact JSON of `obj` and the (start, end, path) of every value in it."""
    out: list[str] = []
    spans: list[tuple[int, int, str]] = []
    pos = 0

    def emit(s: str) -> None:
        nonlocal pos
        out.append(s)
        pos += len(s)

    def walk(v: Any, path: str) -> None:
        start = pos
        if isinstance(v, dict):
            emit("{")
            for i, (k, x) in enumerate(v.items()):
                if i:
                    emit(",")
                emit(json.dumps(str(k)) + ":")
                walk(x, f"{path}.{k}")
            emit("}")
        elif isinstance(v, list):
            emit("[")
            for i, x in enumerate(v):
                if i:
                    emit(",")
                walk(x, f"{path}[{i}]")
            emit("]")
        else:
            emit(json.dumps(v))
        spans.append((start, pos, path))

    walk(obj, "")
    return "".join(out), spans


def _path_at(spans: list[tuple[int, int, str]], at: int, inclusive: bool) -> str:
    """The innermost value whose text covers position `at` (with `inclusive`,
    also the position just after it)."""
    best = ""
    width = None
    for a, b, path in spans:
        if a <= at and (at <= b if inclusive else at < b) and (width is None or b - a < width):
            best, width = path, b - a
    return best


def nf_config_json(ntype: Any) -> Optional[str]:
    """The JSON the emulator's `add_nf_config` takes, or None for the model NF."""
    if ntype.type is None or ntype.type in MODEL_KINDS:
        return None
    return json.dumps(ntype.config)


def declared(kind: str, config: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(reads, writes, actions) the NF code declares (`NetworkFunction::fields`)."""
    if kind in MODEL_KINDS:
        return [], [], []
    f = _dp.Nf(kind, json.dumps(config)).fields()
    actions = ["read"] if f["reads"] else []
    if f["writes"]:
        actions.append("write")
    if f["drops"]:
        actions.append("drop")
    if f["reencapsulates"]:
        actions += ["encap", "decap"]
    return list(f["reads"]), list(f["writes"]), actions
