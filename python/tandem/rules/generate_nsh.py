"""Random NSH rules and frames (feature ``nx_nsh``, ``generate_fields.FIELD_FEATURES``):
a drawn match becomes an NSH one (``eth_type=0x894f``, its IP/ARP/MPLS fields dropped)
with some of the NSH fields, a context beside ``nsh_mdtype=1`` (without it: ``generate_nsh_context.py``);
``generate.py`` then draws set_field on the writable NSH fields (values from small
pools, flags beyond the header's 2 bits too, so later tables see what the frame cannot
hold) and ``dec_nsh_ttl`` (``nsh_actions``; TTLs 0 and 1 in the pools), and ``packets.random_frame`` fills an NSH frame's other fields from the pools
(MD type 1 or 2). With ``nx_nsh_operands`` too, ``nsh_operand_actions`` draws moves,
pushes and pops of the NSH fields. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random

from .ir import FIELDS, OPERANDS, DecNshTtl, FieldMatch, MoveField, StackPop, StackPush, Subfield
from .nsh import CONTEXTS, ETH_TYPE_NSH, MD_TYPE1

NSH_FEATURE = "nx_nsh"
# small pools, so that writes meet matches and frames meet rules
_VALUES = {"nsh_flags": (0, 1, 2, 3, 6), "nsh_ttl": (0, 1, 2, 5, 63), "nsh_mdtype": (1, 1, 2), "nsh_np": (1, 3, 4),
           "nsh_spi": (0x10, 0x20, 0xABCDE), "nsh_si": (255, 254, 1, 0),
           **{c: (0, 0x11, 0x22000000, 0xFFFFFFFF) for c in CONTEXTS}}
_MASKS = {"nsh_flags": (1, 2, 0xFC), **{c: (0xFF, 0xFFFF0000) for c in CONTEXTS}}
_FRAME_FLAGS = (0, 1, 2, 3)  # (the header holds 2 bits)


def nsh_value(rng: random.Random, field: str) -> int:
    """A value for an NSH field from its pool."""
    return rng.choice(_VALUES[field])


def _needs_eth_type(field: object) -> bool:
    if field in ("eth_type", "ip_proto"):
        return True
    spec = FIELDS.get(field) if isinstance(field, str) else None
    return spec is not None and any(p[0] != "vlan_vid" for p in spec.prereqs + spec.prereq_any)


def nsh_match(rng: random.Random, table: int, fields: dict) -> None:
    """Turn some drawn matches into NSH ones (``fields``: IR field -> FieldMatch)."""
    if rng.random() >= (0.6 if table else 0.5):
        return
    for k in [k for k in fields if _needs_eth_type(k)]:
        del fields[k]
    fields["eth_type"] = FieldMatch(ETH_TYPE_NSH)
    names = sorted(f for f in FIELDS if f.startswith("nsh_"))
    for f in rng.sample(names, rng.choice((0, 1, 1, 2, 3))):
        v = nsh_value(rng, f)
        if f in _MASKS and rng.random() < 0.3:
            m = rng.choice(_MASKS[f])
            fields[f] = FieldMatch(v & m, m)
        else:
            fields[f] = FieldMatch(v)
    if any(c in fields for c in CONTEXTS):
        fields["nsh_mdtype"] = FieldMatch(MD_TYPE1)


NSH_OPERAND_FEATURE = "nx_nsh_operands"  # (with it: moves, pushes and pops of the NSH fields)
_READ = ("nsh_flags", "nsh_mdtype", "nsh_np", "nsh_spi", "nsh_si", *CONTEXTS)  # (nsh_ttl: generate_nsh_ttl_operand.py)
_WRITE = ("nsh_flags", "nsh_spi", "nsh_si", *CONTEXTS)
_OTHER = ("reg0", "reg1", "eth_src", "pkt_mark")  # (eth_src: a moved value shows in the frame)


def _sub(rng: random.Random, field: str, n_bits: int | None = None) -> Subfield:
    width = OPERANDS[field]
    n = n_bits if n_bits is not None else rng.choice((width, width, min(width, 8), 1, min(width, 16)))
    return Subfield(field, rng.randrange(width - n + 1), n)


def nsh_operand_actions(rng: random.Random, flow) -> list:
    """Where the flow is NSH: a move out of an NSH field (into a register, eth_src, the mark or
    another NSH field), a move into one, or a push of one popped into another field."""
    if flow.eth_type != ETH_TYPE_NSH or rng.random() >= 0.7:
        return []
    kind = rng.choice(("from", "into", "stack"))
    if kind == "from":
        src = _sub(rng, rng.choice(_READ))
        dsts = [f for f in _OTHER + _WRITE if OPERANDS[f] >= src.n_bits and f != src.field]
        return [MoveField(src, _sub(rng, rng.choice(dsts), src.n_bits))]
    if kind == "into":
        dst = _sub(rng, rng.choice(_WRITE))
        srcs = [f for f in _OTHER + _READ if OPERANDS[f] >= dst.n_bits and f != dst.field]
        return [MoveField(_sub(rng, rng.choice(srcs), dst.n_bits), dst)]
    pushed = _sub(rng, rng.choice(_READ))
    dsts = [f for f in _OTHER + _WRITE if OPERANDS[f] >= pushed.n_bits]
    return [StackPush(pushed), StackPop(_sub(rng, rng.choice(dsts), pushed.n_bits))]


def nsh_actions(rng: random.Random, flow) -> list:
    """``dec_nsh_ttl`` now and then where the flow is NSH (``flow``: ``prereq.FlowState``)."""
    return [DecNshTtl()] if flow.eth_type == ETH_TYPE_NSH and rng.random() < 0.3 else []


def fill_frame(rng: random.Random, f: dict) -> None:
    """The NSH fields a frame's hint left open, from the pools."""
    for name in sorted(x for x in FIELDS if x.startswith("nsh_")):
        if name not in f:
            f[name] = rng.choice(_FRAME_FLAGS) if name == "nsh_flags" else nsh_value(rng, name)
        if name == "nsh_ttl":
            f[name] &= 0x3F
