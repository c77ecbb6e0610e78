"""Virtual-to-physical rule translation (pure): ingress-side pipelines + tagged delivery.

Inputs: virtual rules (rule IR, virtual port numbers), the ``Topology`` and the
virtual groups. Output: a ``Translation`` - physical rules and groups per
switch, which virtual rule produced which physical rules, and counts.

Scheme (docs/oneswitch.md has the argument and worked examples):

* Every packet runs the *whole* virtual pipeline on the switch where it enters
  (its ingress switch). A virtual rule is copied onto each switch that has a
  virtual port it can match: the ingress switch of its ``in_port``, or every
  switch with virtual ports (and the host, for LOCAL) when ``in_port`` is
  wildcarded. Virtual table t is physical table t; priorities, masks, metadata
  and action order are kept, so each copy selects the same rule and does the
  same things as the virtual switch would.
* Only outputs change. ``output:V`` to a port on the same switch becomes the
  physical port; to a port on another switch it becomes ``set_field:<id>->
  pkt_mark, output:<PCIe port>`` - the id (a "flow id") names the
  *destination* (one virtual port, or every virtual port of one switch for
  FLOOD/ALL) and travels in the packet mark, metadata that crosses the PCIe
  hop with the frame but is not part of its bytes, so the frame itself is
  never changed. Virtual rules may use the mark too: where a later action,
  table or packet-in could read it, ``push``/``pop`` save and restore it
  around the PCIe output. Outputs in write_actions stay the action set's
  output (a written group still wins).
* Delivery and transit rules live in table 0 beside virtual table 0: they
  match the mark (``pkt_mark=<id> -> output``, or forward on toward the
  destination's switch), which is never set on a frame entering from a virtual
  port, and table-0 copies without an in_port match ``pkt_mark=0`` (a virtual
  rule's own pkt_mark match that admits 0 becomes exactly 0; one that does not
  gets no copy: a packet from a virtual port has mark 0 in table 0). They
  depend only on the destination, so all virtual rules share them.

State: none here except the caller's ``FlowIds`` (tag and internal group id
allocation). ``Compiler`` is the incremental core used by ``translate`` and by
``state.OneSwitchState``. Cost: O(copies x actions) per rule; delivery rules
are reference counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from tandem.rules.ir import Group, Rule

from .compiler import Compiler, Item
from .ids import (  # noqa: F401  (part of this module's API, see __all__)
    DELIVERY_TABLE, INTERNAL_GROUP_BASE, MAX_VIRTUAL_TABLE, N_TABLES, TAG_FIELD, FlowIds, TranslationError, VKey,
    is_delivery_key, pkey, rule_text, vkey,
)
from .topology import Topology

# ---------------------------------------------------------------- batch translation


@dataclass(frozen=True)
class TranslationStats:
    virtual: int
    physical: dict[str, int]
    groups: dict[str, int]
    shared: int  # delivery + transit rules (not derived from one virtual rule)

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
    mark_used: bool = True  # may the virtual mark be non-zero (``packet_in_state``)?

    def derived_rules(self, rule: Rule) -> list[tuple[str, Rule]]:
        return list(self.derived[vkey(rule)])

    def ingress_rules(self, rule: Rule) -> list[tuple[str, Rule]]:
        """The copies that count packets of ``rule``: each packet hits exactly one of
        them (on its ingress switch), so summing their counters never double counts."""
        return self.derived_rules(rule)


def translate(rules: Sequence[Rule], topo: Topology, groups: Sequence[Group] = (), ids: FlowIds | None = None,
              down: Sequence[int] = ()) -> Translation:
    """Translate a virtual rule set (later rules replace earlier ones with the same
    table, priority and match, as OpenFlow add does); ``down``: virtual ports known
    not live. Raises TranslationError."""
    comp = Compiler(topo, ids, groups, down=down)
    comp.track = False
    for r in rules:
        comp.add(r)
    comp.track = True
    return compiler_result(comp, handover=True)


def compiler_result(comp: Compiler, handover: bool = False) -> Translation:
    """The compiler's current output. ``handover``: the caller drops ``comp`` now,
    so the result may take its dicts instead of copying them."""
    per_switch = {s: comp.physical_rules(s) for s in comp.topo.switch_names}
    groups = {s: comp.physical_groups(s) for s in comp.topo.switch_names}
    copies = sum(len(c) for c in comp.copies.values())
    total = sum(len(v) for v in per_switch.values())
    stats = TranslationStats(len(comp.vrules), {s: len(v) for s, v in per_switch.items()},
                             {s: len(v) for s, v in groups.items()}, total - copies)
    used = comp.marks.used
    if handover:
        return Translation(per_switch, groups, comp.copies, comp.vrules, stats, used)
    return Translation(per_switch, groups, {k: list(v) for k, v in comp.copies.items()}, dict(comp.vrules), stats, used)


def packet_in_state(fields: Iterable[tuple[str, int]], mark_used: bool) -> list[tuple[str, int]]:
    """The pipeline state a physical packet-in lists ((field, value) pairs, zeros left
    out as Open vSwitch leaves them out) as the virtual switch lists it: the virtual
    pipeline ran on the ingress switch with its own mark restored after every PCIe
    output, except that a written output's flow id may stay in the mark where no
    virtual rule or group uses the mark (``mark_used`` False: the virtual mark is 0,
    so pkt_mark is left out; mark_ledger.py). The ct_* fields are listed as they come, 0 too
    (an ICMP echo's ct_tp_dst: Open vSwitch lists the original direction's ports whatever they are),
    and so are the tun_metadata options (Open vSwitch lists a present option at 0 too, measured)."""
    return [(k, v) for k, v in fields if (v or k.startswith(("ct_", "tun_metadata"))) and (mark_used or k != TAG_FIELD)]


__all__ = [
    "Compiler", "FlowIds", "Item", "Translation", "TranslationError", "TranslationStats", "compiler_result",
    "is_delivery_key", "packet_in_state", "pkey", "rule_text", "translate", "vkey", "DELIVERY_TABLE", "INTERNAL_GROUP_BASE",
    "MAX_VIRTUAL_TABLE", "N_TABLES", "TAG_FIELD",
]
