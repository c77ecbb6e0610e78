"""Port extensions: a virtual port whose pipeline runs on the host switch.

What: *extending* virtual port V, whose wire (its real physical port) is on an
sNIC switch S, moves V's whole virtual pipeline to the host. V gets a chain of
extra port pairs (SR-IOV-style functions), one on each PCIe link of the path
from S to the host (one pair when S is linked to the host; through the sNICs in
between otherwise), and V is remapped (``OneSwitchState.remap_ports``, the
consistent update NF migration uses) to the chain's host end. Two rules in
table 0 of every switch on the path make the chain a wire between V's real
port and the host::

    table=0,priority=65535,in_port=<toward the wire>,actions=output:<toward the host>   (ingress)
    table=0,priority=65535,in_port=<toward the host>,actions=output:<toward the wire>   (egress)

(on S, "toward the wire" is V's port). From then on V's frames run the whole
virtual pipeline on the host with the chain's host end standing for V: an
output to V leaves there and the egress rules put it on V's wire;
``output:IN_PORT``, an output to V itself (dropped: it is the in_port) and
FLOOD behave as on any host port, because for the translator V *is* a host
port. The virtual tables of the switches on the path are never consulted for
V's frames. Nothing crosses in the packet mark, so this works on any link that
carries frames (a mark a host frame still carries is not looked at: the wire
rules match ``in_port`` alone and beat the delivery rules).

Table 0 is shared: wire rules sit beside the copies of virtual table 0 and the
delivery rules (priority 100), at the highest priority (``WIRE_PRIORITY``), so
nothing below can take a frame from them. At their own priority the translator
gives every wildcard table-0 rule one copy per in_port on an sNIC
(``Compiler._expanded``), so no copy matches a pair port (the egress rules
and every rule of a transit switch never tie), and the copies that match V's
port at 65535 (*tied copies*) exist exactly while V's pipeline runs on S. The
switch-over hands them over in one step, in both directions:

* extend: the ingress rule is added and the old tied copies are modified to
  send to the pair too, so a frame from V meets one of them and goes to the
  host whichever it is; a tied copy whose match is the ingress rule's own
  (``in_port=<V's port>`` alone) is *replaced* by the add (same match and
  priority), so the remap's later delete of it is dropped from the plan;
* retract: the remap back adds the new tied copies with the wire's actions
  (frames that meet them still go to the host), and the switch-over step
  deletes the ingress rule and modifies them to their own instructions; a new
  copy with the ingress rule's own match is not added early (it would replace
  the wire, and the delete would then remove the copy): the switch-over adds it
  in place of the wire.

Every frame from V therefore runs exactly one complete pipeline, the old one
or the new one, at every step (``tests/oneswitch/test_extension_oracle.py``
checks each step against OVS).

Why: OneSwitch runs a meter on one switch so a virtual meter is one token
bucket (``endpoint_meters.py``; a rule names meter M by its meter instruction or
by a ``controller(meter_id=M)``, whose packet-ins M meters: ``controller_meter.py``), and connection tracking on one switch so the
two directions of a connection meet one tracker (``CT``: while any virtual rule
has a ``ct`` action, every virtual port's pipeline runs on the host), and learning
on one switch so one table holds every learned flow (``LEARN``: while a virtual
rule learns, and after, see ``_meter_ports``), and NORMAL on one switch so one MAC
table serves every port (``NORMAL``); ``ONE_SWITCH`` lists these reasons. A resubmit
with another in_port needs its rule's ports and that port on one switch, a group's
bucket resubmit with one every port (``cross_port.py``). ``ports_to_extend`` finds the ports to move so
that every meter's rules run on one switch (the host); ``ports_to_release``
the extended ports no meter needs any more, which ``retract`` moves back
(``release``: one sNIC at a time, keeping extended the ports whose return the
translator refuses).

Pairs: built on request (``PairOp`` in the plan's first step) the first time
a wire is extended, numbered ``EXT_PORT_BASE`` + i on both ends (the lowest
numbers free on both switches), and kept for the next extension of that wire
(``OneSwitchState.pairs``). State: none here (the state holds extensions and
pairs). Cost: one remap per sNIC whose ports move.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from tandem.rules.ir import OFPP_NORMAL, ApplyActions, Bundle, Ct, Learn, Match, Output, Rule, WriteActions
from tandem.rules.ir import Clone
from .clone_translate import learns
from tandem.rules.ir import Group
from .bucket_ct import ct_groups

from .ids import INFRA_COOKIE, WIRE_PRIORITY, TranslationError
from .plan import PhysicalOp, UpdatePlan
from .topology import MAX_PHYSICAL_PORT, PortRef, Topology
from .output_reg_split import may_output_normal
from .controller_meter import controller_meters
from .cross_port import CROSS_GROUPS, cross_groups, cross_needs, homes_ports

EXT_PORT_BASE = 0xF000


@dataclass(frozen=True)
class Hop:
    """One port pair on the PCIe link between two adjacent switches of the path."""

    near: PortRef  # the end on the switch nearer the wire
    far: PortRef  # the end on the switch nearer the host


@dataclass(frozen=True)
class Extension:
    vport: int
    wire: PortRef  # V's real port (on an sNIC)
    hops: tuple[Hop, ...]  # from the wire's switch to the host

    @property
    def hosted(self) -> PortRef:
        """V's location while extended: the chain's end on the host."""
        return self.hops[-1].far

    @property
    def switch(self) -> str:
        return self.wire.switch


class ExtensionError(ValueError):
    """A port that cannot be extended (no port numbers left on a switch of its path)."""


def allocate(topo: Topology, wire: PortRef, taken: dict[str, set[int]]) -> tuple[Hop, ...]:
    """A new chain of pairs from ``wire``'s switch to the host (``taken``: port numbers in
    use per switch, updated)."""
    path = topo.path(wire.switch, topo.host)
    hops = []
    for a, b in zip(path, path[1:]):
        n = EXT_PORT_BASE
        while n in taken.setdefault(a, set()) or n in taken.setdefault(b, set()):
            n += 1
        if n > MAX_PHYSICAL_PORT:
            raise ExtensionError(f"no port numbers left on {a} and {b} for an extension of {wire}")
        taken[a].add(n)
        taken[b].add(n)
        hops.append(Hop(PortRef(a, n), PortRef(b, n)))
    return tuple(hops)


def taken_ports(topo: Topology, pairs: dict[PortRef, tuple[Hop, ...]]) -> dict[str, set[int]]:
    """Port numbers in use per switch: the topology's ports and links, and the pairs so far."""
    taken: dict[str, set[int]] = {sw: set() for sw in topo.switch_names}
    for l in topo.links:
        taken[l.a.switch].add(l.a.port)
        taken[l.b.switch].add(l.b.port)
    for ref in topo.port_map.values():
        taken[ref.switch].add(ref.port)
    for hops in pairs.values():
        for h in hops:
            taken[h.near.switch].add(h.near.port)
            taken[h.far.switch].add(h.far.port)
    return taken


def wire_rules(e: Extension) -> list[tuple[str, Rule, Rule]]:
    """(switch, egress rule, ingress rule) on every switch of ``e``'s path, the wire's first."""
    out = []
    toward_wire = e.wire.port
    for i, h in enumerate(e.hops):
        sw, toward_host = h.near.switch, h.near.port
        out.append((sw, _pass(sw, toward_host, toward_wire), _pass(sw, toward_wire, toward_host)))
        toward_wire = h.far.port  # on the next switch, the frame from the wire arrives here
    return out


def _pass(sw: str, in_port: int, out_port: int) -> Rule:
    return Rule(Match.of(in_port=in_port), (ApplyActions((Output(out_port),)),), 0, WIRE_PRIORITY, INFRA_COOKIE)


def _ties(rules: Iterable[Rule], ingress: Rule) -> tuple[list[Rule], list[Rule]]:
    """Of ``rules`` (copies on the wire's switch), those a frame from V's port may meet at
    the ingress wire rule's priority (table 0, priority 65535, in_port = V's port;
    wildcard copies there are one per in_port, see the module doc), as (the one with
    the ingress rule's own match, if any; the others)."""
    port = ingress.match.get("in_port").value
    same, overlapping = [], []
    for r in rules:
        if r.table == 0 and r.priority == WIRE_PRIORITY:
            fm = r.match.get("in_port")
            if fm is not None and fm.value == port:
                (same if r.match == ingress.match else overlapping).append(r)
    return same, overlapping


def _as_wire(r: Rule, ingress: Rule) -> Rule:
    """Tied copy ``r`` doing what the ingress wire rule does (its own match and metadata)."""
    return Rule(r.match, ingress.instructions, r.table, r.priority, r.cookie, r.idle_timeout, r.hard_timeout)


def _edit(plan: UpdatePlan, edit: Callable[[PhysicalOp], PhysicalOp | None]) -> UpdatePlan:
    """``plan`` with every op passed through ``edit`` (an op, or None to drop it); steps
    left empty are dropped and the plan's step indices follow."""
    out = UpdatePlan()
    index: dict[int, int] = {}  # old step index -> new (a dropped step: the next one kept)
    modifies = plan.modify_step
    for i, step in enumerate(plan.steps):
        index[i] = len(out.steps)
        ops = [o for o in map(edit, step) if o is not None]
        if ops:
            out.steps.append(ops)
        elif i == modifies:
            modifies = None
    index[len(plan.steps)] = len(out.steps)
    out.new_ingress_ready = None if plan.new_ingress_ready is None else index[plan.new_ingress_ready]
    out.old_ingress_until = None if plan.old_ingress_until is None else index[plan.old_ingress_until]
    out.modify_step = None if modifies is None else index[modifies]
    return out


def pair_ops(hops: Iterable[Hop]) -> list[object]:
    from tandem.backends.base import PairOp

    return [PairOp(h.near.switch, h.near.port, h.far.switch, h.far.port) for h in hops]


def _by_switch(exts: Iterable[Extension]) -> dict[str, list[Extension]]:
    out: dict[str, list[Extension]] = {}
    for e in exts:
        out.setdefault(e.wire.switch, []).append(e)
    return out


def _weave(plan: UpdatePlan, first: list, at_switch_over: list, last: list) -> UpdatePlan:
    """``plan`` with a step in front, one at its switch-over point (where both the old and the
    new location can carry the ports' traffic) and one at the end."""
    at = plan.old_ingress_until if plan.old_ingress_until is not None else len(plan.steps)
    head = [first] if first else []
    steps = [*head, *plan.steps[:at], at_switch_over, *plan.steps[at:], *([last] if last else [])]
    out = UpdatePlan(steps)
    out.new_ingress_ready = out.old_ingress_until = len(head) + at + 1  # the switch-over step moves the ports
    if plan.modify_step is not None:
        out.modify_step = plan.modify_step + len(head) + (plan.modify_step >= at)
    return out


def extend(state: object, vports: Iterable[int]) -> list[UpdatePlan]:
    """Plans that move the pipelines of ``vports`` (on sNICs, not extended) to the host, one
    per sNIC: port pairs built where missing, the egress rules and the transit switches'
    ingress rules (inert until the wire's switch sends into them), the remap, and the
    ingress rule on the wire's switch as its own step at the remap's switch-over point."""
    topo = state.topo  # type: ignore[attr-defined]
    pairs: dict[PortRef, tuple[Hop, ...]] = state.pairs  # type: ignore[attr-defined]
    taken = taken_ports(topo, pairs)
    exts, new_hops = [], []
    for v in sorted(vports):
        wire = state.wire_of(v)  # type: ignore[attr-defined]
        if wire.switch == topo.host or v in state.extensions:  # type: ignore[attr-defined]
            raise ExtensionError(f"virtual port {v} ({wire}) is on the host or extended already")
        hops = pairs.get(wire)
        if hops is None:
            hops = allocate(topo, wire, taken)
            new_hops += hops
        exts.append(Extension(v, wire, hops))
    plans = []
    built = pair_ops(new_hops)
    for sw, es in sorted(_by_switch(exts).items()):
        rules = [x for e in es for x in wire_rules(e)]
        egress = [PhysicalOp(s, "add", rule=eg) for s, eg, _ in rules]
        transit = [PhysicalOp(s, "add", rule=ing) for s, _, ing in rules if s != sw]
        ingress = [ing for s, _, ing in rules if s == sw]
        switch_over = [PhysicalOp(sw, "add", rule=ing) for ing in ingress]
        replaced = set()  # old copies the ingress rules replace (same match and priority)
        for ing in ingress:
            same, overlapping = _ties(state.comp.rules[sw].values(), ing)  # type: ignore[attr-defined]
            replaced.update((r.table, r.priority, r.match) for r in same)
            switch_over += [PhysicalOp(sw, "modify_strict", rule=_as_wire(r, ing)) for r in overlapping]
        plan = state.remap_ports({e.vport: e.hosted for e in es}, extensions={e.vport: e for e in es})  # type: ignore[attr-defined]
        if replaced:  # gone with the switch-over: deleting "them" later would delete the wire
            plan = _edit(plan, lambda o: None if o.switch == sw and o.op == "delete_strict"
                         and (o.rule.table, o.rule.priority, o.rule.match) in replaced else o)
        for e in es:
            pairs[e.wire] = e.hops
        if built:
            plans.append(UpdatePlan([built]))
            built = []
        plans.append(_weave(plan, egress + transit, switch_over, []))
    return plans


def retract(state: object, vports: Iterable[int]) -> list[UpdatePlan]:
    """Plans that move extended ``vports`` back to their wires, one per sNIC: the remap
    (its new tied copies added with the wire's actions), then at its switch-over point
    one step that deletes the ingress rule on the wire's switch and gives the tied
    copies their own instructions (or adds the copy that replaces the ingress rule),
    and the other wire rules deleted last (the pairs stay for the next extension)."""
    exts = [state.extensions[v] for v in sorted(vports)]  # type: ignore[attr-defined]
    plans = []
    for sw, es in sorted(_by_switch(exts).items()):
        rules = [x for e in es for x in wire_rules(e)]
        rest = [PhysicalOp(s, "delete_strict", rule=r) for s, eg, ing in rules for r in (eg, ing) if r is eg or s != sw]
        plan = state.remap_ports({e.vport: e.wire for e in es})  # type: ignore[attr-defined]
        added = [o.rule for o in plan.ops() if o.switch == sw and o.op == "add"]
        switch_over = []
        early: dict[Rule, Rule] = {}  # a new tied copy -> what the remap adds instead (None: nothing)
        for ing in (ing for s, _, ing in rules if s == sw):
            same, overlapping = _ties(added, ing)
            if same:  # the copy replaces the ingress rule at the switch-over
                early[same[0]] = None
                switch_over.append(PhysicalOp(sw, "add", rule=same[0]))
            else:
                switch_over.append(PhysicalOp(sw, "delete_strict", rule=ing))
            for r in overlapping:
                early[r] = _as_wire(r, ing)
                switch_over.append(PhysicalOp(sw, "modify_strict", rule=r))
        if early:
            plan = _edit(plan, lambda o: o if o.switch != sw or o.op != "add" or o.rule not in early
                         else None if early[o.rule] is None else PhysicalOp(sw, "add", rule=early[o.rule]))
        plans.append(_weave(plan, [], switch_over, rest))
    return plans


# ---------------------------------------------------------------- which ports must move (meters)


def rule_ports(topo: Topology, r: Rule) -> set[int]:
    """The virtual ports whose packets may meet virtual rule ``r`` (its ``in_port``, or all)."""
    fm = r.match.get("in_port")
    if fm is not None and fm.value in topo.port_map:
        return {fm.value}
    return set(topo.port_map)


# The "meter" of connection tracking: while a virtual rule has a ct action, every
# virtual port is in it, so every pipeline runs on one switch (the host) and the
# host's tracker sees both directions of every connection, in the order the
# virtual switch's one tracker would (docs/oneswitch.md section 6).
CT = "ct"


def uses_ct(r: Rule) -> bool:
    """Does ``r`` send packets through the connection tracker (a ct action in its
    apply-actions or write-actions, or in a clone there)?"""
    return any(type(a) is Ct or (type(a) is Clone and _clone_ct(a)) for i in r.instructions
               if type(i) in (ApplyActions, WriteActions) for a in i.actions)


def _clone_ct(a: Clone) -> bool:
    return any(type(b) is Ct or (type(b) is Clone and _clone_ct(b)) for b in a.actions)


# The "meter" of learning: while a virtual rule learns, every virtual port is in it,
# so every packet that may fill or read a learned flow runs on the host, whose table
# holds the learned flows (learn_translate.py).
LEARN = "learn"


def uses_learn(r: Rule) -> bool:
    """Does ``r`` learn (a learn action; OneSwitch takes learn in apply-actions only)?"""
    return bool(learns(r.apply_actions))  # (in clones too)


# The "meter" of NORMAL: Open vSwitch's MAC-learning switch, one MAC table filled
# and read by every packet that runs it, runs on the host (whose ports other than
# the virtual ports' are no-flood, backends/ovs.py).
NORMAL = "normal"


def uses_normal(r: Rule) -> bool:
    """Does ``r`` output to NORMAL (in apply- or write-actions, by a ``bundle`` whose
    member it is, or by an output_reg whose register may hold NORMAL's number at run time)?"""
    return any((type(a) is Output and a.port == OFPP_NORMAL) or bundles_normal(a) for ins in r.instructions
               if type(ins) in (ApplyActions, WriteActions) for a in ins.actions) or may_output_normal(r)


def bundles_normal(a) -> bool:
    """Is ``a`` a ``bundle`` (not ``bundle_load``) with NORMAL among its members?"""
    return type(a) is Bundle and a.dst is None and OFPP_NORMAL in a.members


# Why a rule needs every virtual port's pipeline on one switch: one tracker or one
# table that every packet fills and reads.
ONE_SWITCH: dict[str, Callable[[Rule], bool]] = {CT: uses_ct, LEARN: uses_learn, NORMAL: uses_normal}
ONE_SWITCH_NAMES = {CT: "connection tracking", LEARN: "learn", NORMAL: "output:NORMAL"}


def one_switch(r: Rule) -> list[str]:
    """The reasons (``ONE_SWITCH``) ``r`` needs every pipeline on one switch."""
    return [k for k, uses in ONE_SWITCH.items() if uses(r)]


def homed(r: Rule | None) -> bool:
    """Does ``r`` pin pipelines to one switch (a meter, also ``controller(meter_id=…)``'s,
    or a ``ONE_SWITCH`` reason)?"""
    return r is not None and (r.meter is not None or bool(one_switch(r)) or bool(controller_meters(r))
                              or homes_ports(r))


def _meter_ports(topo: Topology, rules: Iterable[Rule], learned: bool = False,
                 groups: Iterable[Group] = ()) -> dict[int | str, set[int]]:
    """Meter (or ``ONE_SWITCH`` reason) -> the virtual ports whose pipelines it needs on
    one switch; ``learned``: flows may have been learned (they outlive their learning
    rules, so every port stays on the host); ``groups``: a group with ct in a bucket
    needs one tracker, as a ct rule does (bucket_ct.py)."""
    need: dict[int | str, set[int]] = {LEARN: set(topo.port_map)} if learned else {}
    groups = list(groups)
    if ct_groups(groups):
        need[CT] = set(topo.port_map)
    if cross_groups(groups):  # (a bucket resubmit with another in_port: cross_port.py)
        need[CROSS_GROUPS] = set(topo.port_map)
    for r in rules:
        if r.meter is not None:
            need.setdefault(r.meter, set()).update(rule_ports(topo, r))
        for m in controller_meters(r):  # (its packet-ins pass meter m: controller_meter.py)
            need.setdefault(m, set()).update(rule_ports(topo, r))
        for why in one_switch(r):
            need.setdefault(why, set(topo.port_map))
        need.update(cross_needs(topo, r, rule_ports(topo, r)))  # (resubmits with another in_port)
    return need


def _settle(topo: Topology, need: dict[int, set[int]], home: dict[int, str], moved: set[int]) -> set[int]:
    """Grow ``moved`` (ports whose pipeline runs on the host) until every meter's ports run
    on one switch: a meter split over several switches moves all its ports to the host,
    which can split another meter."""
    def switch(v: int) -> str:
        return topo.host if v in moved else home[v]

    changed = True
    while changed:
        changed = False
        for ports in need.values():
            if len({switch(v) for v in ports}) > 1:
                for v in ports:
                    if switch(v) != topo.host:
                        moved.add(v)
                        changed = True
    return moved


def _groups(state: object, groups: Iterable[Group] | None) -> Iterable[Group]:
    """``groups``, or the state's virtual groups when None."""
    if groups is not None:
        return groups
    return getattr(getattr(state, "comp", None), "vgroups", {}).values()


def split_meters(state: object, extra: Rule | None = None, groups: Iterable[Group] | None = None) -> dict[int | str, set[str]]:
    """Meters whose rules (with ``extra``; with ``groups`` as the virtual groups, None:
    the state's) would run on more than one switch -> those switches (``CT``:
    connection tracking, whose rules see every port)."""
    topo = state.topo  # type: ignore[attr-defined]
    need = _meter_ports(topo, [*state.virtual_rules(), *([extra] if extra is not None else [])],  # type: ignore[attr-defined]
                        groups=_groups(state, groups))
    out = {}
    for m, ports in need.items():
        sws = {topo.port_map[v].switch for v in ports}
        if len(sws) > 1:
            out[m] = sws
    return out


def meter_switches(state: object, meter_id: int) -> set[str]:
    """The switches the pipelines of meter ``meter_id``'s rules (its meter instruction, or a
    ``controller(meter_id=…)``) run on now: one (the port extension keeps it so) but during
    an NF move; none while no rule names it."""
    topo = state.topo  # type: ignore[attr-defined]
    ports = _meter_ports(topo, [r for r in state.virtual_rules()  # type: ignore[attr-defined]
                                if r.meter == meter_id or meter_id in controller_meters(r)]).get(meter_id, ())
    return {topo.port_map[v].switch for v in ports}


def ports_to_extend(state: object, extra: Rule | None = None, groups: Iterable[Group] | None = None) -> list[int]:
    """The virtual ports (on sNICs, not extended) to extend so that, with ``extra`` added
    (and ``groups`` as the virtual groups, None: the state's), every meter's rules run
    on one switch. Empty when they already do."""
    if all(ref.switch == state.topo.host for ref in state.topo.port_map.values()):  # type: ignore[attr-defined]
        return []  # every pipeline runs on the host already (no scan of the rules per ct FLOW_MOD)
    if not split_meters(state, extra, groups):
        return []  # the common case: nothing to move
    topo = state.topo  # type: ignore[attr-defined]
    need = _meter_ports(topo, [*state.virtual_rules(), *([extra] if extra is not None else [])],  # type: ignore[attr-defined]
                        groups=_groups(state, groups))
    home = {v: ref.switch for v, ref in topo.port_map.items()}
    start = {v for v in topo.port_map if home[v] == topo.host}
    return sorted(_settle(topo, need, home, set(start)) - start)


def ports_to_release(state: object) -> list[int]:
    """Extended virtual ports that no meter needs on the host any more: those outside the
    least set of ports that, moved from their wires, puts every meter on one switch."""
    exts: dict[int, Extension] = state.extensions  # type: ignore[attr-defined]
    if not exts or any(uses_ct(r) for r in state.virtual_rules()):  # type: ignore[attr-defined]
        return []  # (a ct rule keeps every port on the host: found at the first one)
    topo = state.topo  # type: ignore[attr-defined]
    need = _meter_ports(topo, state.virtual_rules(), state.comp.learning, _groups(state, None))  # type: ignore[attr-defined]
    home = {v: state.wire_of(v).switch for v in topo.port_map}  # type: ignore[attr-defined]
    kept = _settle(topo, need, home, set())
    return sorted(v for v in exts if v not in kept)


def release(state: object) -> list[UpdatePlan]:
    """Plans that move back the extended ports no meter needs (``ports_to_release``), one
    sNIC at a time. The ports of an sNIC whose move back the translator refuses stay
    extended: an extended port is always correct, only dearer. (Two rules whose copies
    there would coincide no longer refuse it: one entry stands for both, overlap_share.py.)"""
    plans: list[UpdatePlan] = []
    exts: dict[int, Extension] = state.extensions  # type: ignore[attr-defined]
    for _, es in sorted(_by_switch(exts[v] for v in ports_to_release(state)).items()):
        try:
            plans += retract(state, [e.vport for e in es])
        except TranslationError:  # raised before anything changed (remap_ports)
            continue
    return plans


def rebalance(state: object) -> list[UpdatePlan]:
    """Plans that make every meter's rules run on one switch again after the ports moved
    (an NF migration): the ports to extend, then the extended ports no meter needs."""
    return extend(state, ports_to_extend(state)) + release(state)
