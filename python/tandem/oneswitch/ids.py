"""OneSwitch's identifiers and constants: physical table layout, flow-id tags and
internal group ids (``FlowIds``), rule keys and ``TranslationError``.

A leaf module of ``oneswitch``: ``translate`` (batch entry point), ``compiler``
(incremental engine) and ``ir_intern`` all import it, and it imports none of
them, so the three form no import cycle. State: only a ``FlowIds`` instance's
own allocation tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tandem.rules.ir import Rule

from .topology import Topology

TAG_FIELD = "pkt_mark"  # the packet mark (metadata, not frame bytes) carries the flow id over a PCIe hop
# Virtual table t is physical table t, for every table Open vSwitch offers (0..253;
# it hides 254). Delivery and transit rules share table 0 with virtual table 0:
# they match a flow id (pkt_mark != 0), which a packet from a virtual port never
# carries there, and the copies of virtual table 0 that could see a PCIe arrival
# match pkt_mark=0 (docs/oneswitch.md section 3).
N_TABLES = 254
MAX_VIRTUAL_TABLE = N_TABLES - 1
HIDDEN_TABLE = 254  # Open vSwitch's own table: a goto there is accepted and drops (as on one bridge)
N_PHYSICAL_TABLES = HIDDEN_TABLE + 1  # an emulated switch's tables: 0..253 and an empty 254
DELIVERY_TABLE = 0
WIRE_PRIORITY = 0xFFFF  # in_port-only infrastructure rules in table 0 (extension wires, untagged links)
NO_PORT = 0  # a physical port number no switch has: a written output there sends nothing
MAX_OFPORT = 0xFEFF  # port numbers Open vSwitch accepts below the reserved range
MAX_TAG = 0xFFFF_FFFF  # pkt_mark is 32 bits; 0 means "no flow id"
INTERNAL_GROUP_BASE = 0xF000_0000  # physical group ids >= this are OneSwitch's own
INFRA_COOKIE = 0x0F5E_0000_0000_0000
DELIVERY_PRIORITY = 100

Dest = tuple  # ("port", vport) | ("switch", name) | ("flood", vport) | ("except", vport) | ("trunc", vport, max_len), see Compiler
PKey = tuple  # (table, priority, match): identifies a flow entry in one switch
VKey = tuple  # (table, priority, match) of a virtual rule


class TranslationError(ValueError):
    """A virtual rule (or group) that cannot be translated; names it and why."""

    def __init__(self, what: "str | Rule", reason: str, of_error: tuple[int, int] | None = None) -> None:
        what = rule_text(what) if isinstance(what, Rule) else what
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason
        self.of_error = of_error  # the OpenFlow (type, code) an endpoint answers with, if not FLOW_MOD_FAILED


def rule_text(rule: Rule) -> str:
    try:
        from tandem.rules.ofctl import format_rule

        return format_rule(rule)
    except Exception:  # formatting must never hide the real error
        return repr(rule)


def vkey(rule: Rule) -> VKey:
    """The key of a virtual rule: ``Match`` caches its hash, so these plain
    tuples hash with one cached lookup."""
    return (rule.table, rule.priority, rule.match)


def pkey(rule: Rule) -> PKey:
    return (rule.table, rule.priority, rule.match)


def is_delivery_key(key: PKey) -> bool:
    """A delivery or transit rule's key: table 0, its priority, a match on a flow
    id alone. No copy of a virtual rule has one (table-0 copies match in_port or
    pkt_mark=0)."""
    if key[0] != DELIVERY_TABLE or key[1] != DELIVERY_PRIORITY or len(key[2]) != 1:
        return False
    name, fm = key[2].fields[0]
    return name == TAG_FIELD and fm.mask is None and fm.value != 0


# ---------------------------------------------------------------- id allocation


@dataclass
class FlowIds:
    """Flow ids (1..2^32-1, carried in pkt_mark) for delivery destinations and ids for internal groups.
    Freed ids are reused lowest-first. Change ``tags`` only through these methods."""

    tags: dict[Dest, int] = field(default_factory=dict)
    groups: dict[tuple, int] = field(default_factory=dict)
    # len(tags) when the tags were last known to be exactly 1..len (then len+1 is
    # the lowest free tag without scanning them all); -1: unknown
    _dense_size: int = field(default=-1, init=False, repr=False, compare=False)

    @classmethod
    def for_topology(cls, topo: Topology) -> "FlowIds":
        ids = cls()
        for v in sorted(topo.port_map):
            ids.tag(("port", v))
        for s in topo.ingress_switches:
            ids.tag(("switch", s))
        return ids

    def tag(self, dest: Dest) -> int:
        t = self.tags.get(dest)
        if t is None:
            n = len(self.tags)  # tags are distinct; if they are exactly 1..n, n+1 is the lowest free one
            if n == 0 or (n < MAX_TAG and (n == self._dense_size or max(self.tags.values()) == n)):
                t = n + 1
                self._dense_size = t
            else:
                used = set(self.tags.values())
                t = next((i for i in range(1, MAX_TAG + 1) if i not in used), None)
                self._dense_size = -1
            if t is None:
                raise TranslationError(f"destination {dest}", f"more than {MAX_TAG} delivery tags needed")
            self.tags[dest] = t
        return t

    def retag(self, dest: Dest) -> int:
        """Give ``dest`` a fresh tag (the old one stays reserved until ``release``)."""
        old = self.tags.pop(dest, None)
        if old is not None:
            self.tags[("retired", dest, old)] = old
        return self.tag(dest)

    def release_retired(self) -> None:
        for k in [k for k in self.tags if k[0] == "retired"]:
            del self.tags[k]
        self._dense_size = -1

    def group(self, key: tuple) -> int:
        g = self.groups.get(key)
        if g is None:
            used = set(self.groups.values())
            g = next(INTERNAL_GROUP_BASE + i for i in range(len(used) + 1) if INTERNAL_GROUP_BASE + i not in used)
            self.groups[key] = g
        return g

    def copy(self) -> "FlowIds":
        return FlowIds(dict(self.tags), dict(self.groups))
