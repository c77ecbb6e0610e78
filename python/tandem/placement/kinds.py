"""Which placement problem a parsed file looks like, from its top-level keys.

`tandem place KIND FILE` reads FILE as KIND; when the keys clearly belong to
another kind, the loaders say so (`kind_mismatch`) instead of listing every
key the schema does not allow. Pure: data in, a message or None out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# keys that only one kind of file has (a scenario is accepted by uno and smartchain)
_MARKERS: dict[str, set[str]] = {
    "uno": {"snics", "nodes", "pcie_accounting", "nf_types", "objective_weights", "host_capacity", "incremental"},
    "smartchain": {"graphs", "servers", "t_trans_us", "max_round_trips", "capacity_model"},
    "pof-fp": {"flows"},
    "pof-fr": {"existing", "new"},
    "scenario": {"devices", "instances", "links", "placement", "tenants", "traffic"},
}


def guess_kind(data: Any) -> str | None:
    """The kind whose marker keys the top level uses most (None if unclear)."""
    if not isinstance(data, Mapping):
        return None
    if set(data) == {"uno"}:
        return "uno"
    keys = set(map(str, data))
    gen = data.get("generate")
    if isinstance(gen, Mapping):
        keys |= {"flows"} if "flows" in gen else {"existing"} if ({"existing", "new"} & set(gen)) else set()
    scores = {k: len(keys & m) for k, m in _MARKERS.items()}
    best = max(scores.values())
    if best == 0:
        return None
    top = [k for k, s in scores.items() if s == best]
    if "scenario" in top and scores["scenario"] >= 1 and "nf_types" in keys and len(top) > 1:
        return "scenario"
    return top[0] if len(top) == 1 else None


def kind_mismatch(data: Any, expected: str, file: str, accepts_scenario: bool = False) -> str | None:
    """A one-line message when `data` looks like another kind than `expected`."""
    kind = guess_kind(data)
    if kind is None or kind == expected or (kind == "scenario" and accepts_scenario):
        return None
    if kind == "scenario":
        return (f"{file}: this looks like a Tandem scenario (devices/instances/...), not a {expected} placement "
                f"problem; `tandem place uno` and `tandem place smartchain` accept scenarios")
    return (f"{file}: this looks like a {kind} problem (top-level keys: {', '.join(sorted(map(str, data)))}), "
            f"not a {expected} problem; try `tandem place {kind} {file}`")
