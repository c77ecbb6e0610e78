"""Checks a scenario's ``nf_types.*.type`` / ``config`` against the NF code
itself: the Rust constructor is the one validator (it names the offending
field, e.g. ``sas[0].key``), so Python and Rust cannot drift apart."""

from __future__ import annotations

import json
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
    msg = _dp.nf_check_config(kind, json.dumps(config))
    if msg is None:
        return None
    # "secgw config: sas[0].key: ..." -> "config.sas[0].key: ..."
    prefix = f"{kind} config: "
    if msg.startswith(prefix):
        msg = msg[len(prefix):]
    return f"config.{msg}" if not msg.startswith("missing field") and not msg.startswith("unknown field") else f"config: {msg}"


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
