"""Virtual-to-physical rule translation (pure): ingress-side pipelines + tagged delivery.

Inputs: virtual rules (rule IR, virtual port numbers), the ``Topology`` and the
virtual groups. Output: a ``Translation`` - physical rules and groups per
switch, which virtual rule produced which physical rules, and counts.

Scheme (docs/oneswitch.md has the argument and worked examples):

* Every packet runs the *whole* virtual pipeline on the switch where it enters
  (its ingress switch). A virtual rule is copied onto each switch that has a
  virtual port it can match: the ingress switch of its ``in_port``, or every
  switch with virtual ports when ``in_port`` is wildcarded. Virtual table t is
  physical table t+1; priorities, masks, metadata and action order are kept,
  so each copy selects the same rule and does the same things as the virtual
  switch would.
* Only outputs change. ``output:V`` to a port on the same switch becomes the
  physical port; to a port on another switch it becomes ``push_vlan:0x88a8,
  set_field:<tag>->vlan_vid, output:<PCIe port>, pop_vlan`` - the tag (a
  "flow id") names the *destination* (one virtual port, or every virtual port
  of one switch for FLOOD/ALL); the pop restores the packet for the actions
  that follow. Outputs in write_actions become internal indirect/all groups.
* Physical table 0 dispatches: frames from PCIe ports go to the delivery
  table 253 (match tag -> pop + output, or forward on toward the destination's
  switch), everything else to table 1. Delivery and transit rules depend only
  on the destination, so all virtual rules share them.

State: none here except the caller's ``FlowIds`` (tag and internal group id
allocation). ``Compiler`` is the incremental core used by ``translate`` and by
``state.OneSwitchState``. Cost: O(copies x actions) per rule; delivery rules
are reference counted.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from tandem.rules.ir import Group, Rule

from .topology import Topology

TAG_TPID = 0x88A8  # 802.1ad S-tag: the flow-id tag on PCIe hops
DISPATCH_TABLE = 0
DELIVERY_TABLE = 253  # OVS reserves 254
TABLE_OFFSET = 1
MAX_VIRTUAL_TABLE = 251
MAX_TAG = 4094
INTERNAL_GROUP_BASE = 0xF000_0000  # physical group ids >= this are OneSwitch's own
INFRA_COOKIE = 0x0F5E_0000_0000_0000
DELIVERY_PRIORITY = 100

Dest = tuple  # ("port", vport) | ("switch", name), + lifted tenant tags as plain tuples (compiler._replay_key)
PKey = tuple  # (table, priority, match): identifies a flow entry in one switch
VKey = tuple  # (table, priority, match) of a virtual rule


class TranslationError(ValueError):
    """A virtual rule (or group) that cannot be translated; names it and why."""

    def __init__(self, what: "str | Rule", reason: str) -> None:
        what = rule_text(what) if isinstance(what, Rule) else what
        super().__init__(f"{what}: {reason}")
        self.what = what
        self.reason = reason


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


# ---------------------------------------------------------------- id allocation


@dataclass
class FlowIds:
    """Tags (1..4094) for delivery destinations and ids for internal groups.
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


# ---------------------------------------------------------------- batch translation


@dataclass(frozen=True)
class TranslationStats:
    virtual: int
    physical: dict[str, int]
    groups: dict[str, int]
    shared: int  # dispatch + delivery + transit rules (not derived from one virtual rule)

    @property
    def total(self) -> int:
        return sum(self.physical.values())

    @property
    def ratio(self) -> float:
        return self.total / self.virtual if self.virtual else 0.0

    def as_dict(self) -> dict:
        return {"virtual": self.virtual, "physical": dict(self.physical), "physical_total": self.total,
                "ratio": round(self.ratio, 4), "groups": dict(self.groups), "shared_rules": self.shared}


@dataclass(frozen=True)
class Translation:
    per_switch: dict[str, list[Rule]]
    groups: dict[str, list[Group]]
    derived: dict[VKey, list[tuple[str, Rule]]]  # virtual rule key -> its physical copies
    virtual: dict[VKey, Rule]
    stats: TranslationStats

    def derived_rules(self, rule: Rule) -> list[tuple[str, Rule]]:
        return list(self.derived[vkey(rule)])

    def ingress_rules(self, rule: Rule) -> list[tuple[str, Rule]]:
        """The copies that count packets of ``rule``: each packet hits exactly one of
        them (on its ingress switch), so summing their counters never double counts."""
        return self.derived_rules(rule)


def translate(rules: Sequence[Rule], topo: Topology, groups: Sequence[Group] = (), ids: FlowIds | None = None) -> Translation:
    """Translate a virtual rule set (later rules replace earlier ones with the same
    table, priority and match, as OpenFlow add does). Raises TranslationError."""
    with bulk():
        comp = Compiler(topo, ids, groups)
        comp.track = False
        for r in rules:
            comp.add(r)
        comp.track = True
        return compiler_result(comp, handover=True)


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while translating many rules, then hand
    what was built straight to the oldest generation.

    A translation is long-lived state (thousands of rules, about six objects
    each). With the collector running, young collections would scan them over
    and over (about a third of the run time); with it paused, re-enabling it
    makes the next young collection scan all of them once more (15-20% of the
    run) just to promote them. ``gc.freeze()`` + ``gc.unfreeze()`` moves every
    tracked object into the oldest generation in O(1) instead, where full
    collections scan them as they would after promotion anyway. The price:
    cyclic garbage that was still young when the batch ended (the caller's too)
    waits for the next full collection. Skipped if the process keeps objects
    frozen itself (``gc.freeze`` before fork), which unfreezing would undo."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if was:
            gc.enable()


def compiler_result(comp: Compiler, handover: bool = False) -> Translation:
    """The compiler's current output. ``handover``: the caller drops ``comp`` now,
    so the result may take its dicts instead of copying them."""
    per_switch = {s: comp.physical_rules(s) for s in comp.topo.switch_names}
    groups = {s: comp.physical_groups(s) for s in comp.topo.switch_names}
    copies = sum(len(c) for c in comp.copies.values())
    total = sum(len(v) for v in per_switch.values())
    stats = TranslationStats(len(comp.vrules), {s: len(v) for s, v in per_switch.items()},
                             {s: len(v) for s, v in groups.items()}, total - copies)
    if handover:
        return Translation(per_switch, groups, comp.copies, comp.vrules, stats)
    return Translation(per_switch, groups, {k: list(v) for k, v in comp.copies.items()}, dict(comp.vrules), stats)


from .compiler import Compiler, Item  # noqa: E402  (the engine imports this module's names)

__all__ = [
    "Compiler", "FlowIds", "Item", "Translation", "TranslationError", "TranslationStats", "compiler_result",
    "pkey", "rule_text", "translate", "vkey", "DELIVERY_TABLE", "DISPATCH_TABLE", "INTERNAL_GROUP_BASE",
    "MAX_VIRTUAL_TABLE", "TABLE_OFFSET", "TAG_TPID",
]
