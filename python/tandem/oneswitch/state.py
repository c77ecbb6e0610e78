"""OneSwitch state machine (pure): virtual flow tables in, consistent physical update plans out.

Inputs: ``FlowMod``s from the controller (add / modify / modify_strict /
delete / delete_strict with OpenFlow 1.3 matching by match, priority,
cookie/mask, out_port, out_group, table or all tables), port remaps from
the NF agent and port extensions (extension.py), and virtual ports' liveness
from the switches' port status (``set_port_live``). Outputs: ``UpdatePlan``s (plan.py) that move the physical
switches from the old translation to the new one so that every packet, at
every intermediate state, is forwarded as the old or the new virtual
configuration would forward it. Also maps physical packet-ins back to virtual
ports and physical rules back to virtual rules for stats.

State: the virtual rules (inside a translate.Compiler, which also holds the
physical rules and groups per switch and the ports known down), the flow-id
allocation, the extended ports and the port pairs built for extensions. No I/O: the
OpenFlow endpoint and backends apply the plans. Cost: a flow mod touching m
virtual rules costs O(m x copies) plus O(n) for the non-strict selection scan;
a remap re-translates all n rules (O(n)).
"""

from __future__ import annotations

from typing import Iterable

from tandem.rules.ir import (
    OFPCML_NO_BUFFER, OFPG_ANY, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_LOCAL, ApplyActions, FlowMod, Group,
    GroupAction, Rule, WriteActions,
)

from tandem.rules.matching import covers, overlaps

from .extension import Extension, wire_rules
from .learn_translate import delete_learned_keys
from .plan import PhysicalOp, UpdatePlan, plan_changes, plan_remap
from .topology import PortRef, Topology
from .packet_out_ct_group import pin_host_groups
from .translate import (
    MAX_VIRTUAL_TABLE, Compiler, FlowIds, Item, Translation, TranslationError, VKey, compiler_result, vkey,
)


class FlowModError(ValueError):
    """A flow mod OpenFlow itself refuses; ``code`` is the OFPFMFC_* name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _outputs_to(rule: Rule, port: int) -> bool:
    return port in rule.outputs()


def _sends_to_group(rule: Rule, group: int) -> bool:
    for ins in rule.instructions:
        if isinstance(ins, (ApplyActions, WriteActions)):
            if any(isinstance(a, GroupAction) and a.group_id == group for a in ins.actions):
                return True
    return False


def _pin_infrastructure(comp: Compiler) -> None:
    """Take one reference on every shared item a copy on an ingress switch may need
    for an output to a virtual port, LOCAL or FLOOD/ALL (see OneSwitchState): the
    same items the translation of "output:X" acquires, so nothing else changes. Also
    every switch's ("live", port) group of every virtual port: those groups then
    never come and go with FLOW_MODs or GROUP_MODs, so a liveness change (a modify
    of them alone) commutes with every other plan."""
    topo = comp.topo
    for sw in topo.ingress_switches:
        for port in [*sorted(topo.port_map), OFPP_LOCAL, OFPP_FLOOD]:
            for item in comp._out_entry(sw, port, OFPCML_NO_BUFFER, "pinned infrastructure")[1]:
                comp._acquire(item)
    if len(topo.switch_names) > 1:
        for v in sorted(topo.port_map):
            gid = comp.ids.group(("live", v))
            for sw in topo.switch_names:
                comp._acquire(("group", sw, gid))


class OneSwitchState:
    """The virtual switch and its physical translation, changed one FlowMod or remap at a time."""

    def __init__(self, topo: Topology, groups: Iterable[Group] = (), pin_infrastructure: bool = False) -> None:
        """``pin_infrastructure``: keep the shared rules every virtual output may need
        (the transit and delivery rules toward every virtual port, LOCAL and, for
        FLOOD, every other ingress switch) installed whether
        or not a virtual rule uses them, so that a FLOW_MOD is one step (its copies
        only) instead of two (shared rules, barrier, copies). Packets meet the same
        fate either way: an unused delivery rule matches a tag no copy pushes. The
        first plan after construction installs them (``take_plan``)."""
        self.topo = topo
        self._groups = list(groups)
        self.pinned = pin_infrastructure
        self.ids = FlowIds.for_topology(topo)
        # extended virtual ports (extension.py): their location in ``topo`` stands in for their wire
        self.extensions: dict[int, Extension] = {}
        self.pairs: dict[PortRef, tuple] = {}  # extension port pairs built so far, by wire (reused)
        self.comp = self._compiler(topo, self.ids, self._groups)

    @property
    def wires(self) -> dict[int, PortRef]:
        """Virtual port -> its wire, for ports located at a stand-in (extended ports)."""
        return {v: e.wire for v, e in self.extensions.items()}

    def _compiler(self, topo: Topology, ids: FlowIds, groups: list[Group], wires: dict[int, PortRef] | None = None) -> Compiler:
        down = self.comp.down if hasattr(self, "comp") else ()
        comp = Compiler(topo, ids, groups, down, self.wires if wires is None else wires)
        comp.learning = hasattr(self, "comp") and self.comp.learning  # flows learned so far stay
        if self.pinned:
            _pin_infrastructure(comp)
        pin_host_groups(comp)  # (for a PACKET_OUT that applies a group with ct: packet_out_ct_group.py)
        return comp

    # ------------------------------------------------------------ port liveness
    def wire_of(self, vport: int) -> PortRef:
        """The physical port whose link state is ``vport``'s (its location, unless that
        stands in for it)."""
        return self.wires.get(vport) or self.topo.port_map[vport]

    def port_live(self, vport: int) -> bool:
        return vport not in self.comp.down

    def set_port_live(self, vport: int, live: bool) -> UpdatePlan:
        """Record a virtual port's liveness (its wire's link and admin state, from the
        physical switch's PORT_STATUS). Fast-failover buckets watching it on its own
        switch already follow the switch; on every other switch they watch its
        ("live", port) group, whose modifies are the plan (one step). Empty if the
        liveness is unchanged."""
        if vport not in self.topo.port_map:
            raise ValueError(f"virtual port {vport} does not exist")
        self.comp.set_port_live(vport, live)
        return plan_changes(self.comp.take_journal(), ordered=True)

    def take_plan(self) -> UpdatePlan:
        """The plan for physical changes not yet handed out (the pinned rules after
        construction); empty otherwise."""
        return plan_changes(self.comp.take_journal(), ordered=True)

    # ------------------------------------------------------------ views
    def virtual_rules(self) -> list[Rule]:
        return sorted(self.comp.vrules.values(), key=lambda r: (r.table, -r.priority))

    def physical_rules(self, switch: str) -> list[Rule]:
        """The switch's rules: the translation's and the wire rules of extended ports (table 0)."""
        wired = [r for e in self.extensions.values() for sw, eg, ing in wire_rules(e) if sw == switch for r in (eg, ing)]
        rules = self.comp.physical_rules(switch)
        return sorted(wired, key=lambda r: -r.priority) + rules if wired else rules

    def physical_groups(self, switch: str) -> list[Group]:
        return self.comp.physical_groups(switch)

    def translation(self) -> Translation:
        return compiler_result(self.comp)

    def ingress_rules(self, virtual_rule: Rule) -> list[tuple[str, Rule]]:
        """Physical copies whose counters add up to ``virtual_rule``'s (each packet
        is counted on its ingress switch only)."""
        return list(self.comp.copies.get(vkey(virtual_rule), ()))

    def virtual_rule_of(self, switch: str, physical: Rule) -> Rule | None:
        """The virtual rule a physical rule was copied from (None for shared rules)."""
        for key, copies in self.comp.copies.items():
            if (switch, physical) in copies:
                return self.comp.vrules[key]
        return None

    @property
    def mark_used(self) -> bool:
        """May the virtual mark be non-zero (a virtual rule or group uses it)? If not,
        packet-ins leave pkt_mark out (``translate.packet_in_state``)."""
        return self.comp.marks.used

    @staticmethod
    def virtual_table(physical_table: int) -> int | None:
        """Virtual table t is physical table t (0..253)."""
        return physical_table if 0 <= physical_table <= MAX_VIRTUAL_TABLE else None

    def to_virtual_packet_in(self, switch: str, phys_in_port: int, frame: bytes) -> tuple[int, bytes]:
        """Map a packet-in from a physical switch to (virtual in_port, frame).
        Virtual rules run on the packet's ingress switch, where its frame is the
        virtual switch's (the flow id rides in the mark, not the frame). The host's
        LOCAL and CONTROLLER are the virtual switch's."""
        v = self.topo.physical_to_virtual.get(PortRef(switch, phys_in_port))
        if v is None and switch == self.topo.host and phys_in_port in (OFPP_LOCAL, OFPP_CONTROLLER):
            v = phys_in_port
        if v is None:
            raise ValueError(f"packet-in from {switch}:{phys_in_port}, which is not mapped to a virtual port")
        return v, frame

    # ------------------------------------------------------------ flow mods
    def apply(self, mod: FlowMod) -> UpdatePlan:
        """Apply one controller FlowMod; returns the physical plan. Raises
        TranslationError / FlowModError and then leaves the state unchanged."""
        undo: list[tuple[VKey, Rule | None]] = []
        try:
            if mod.command == "add":
                self._add(mod, undo)
            elif mod.command in ("modify", "modify_strict"):
                for old in self._select(mod):
                    new = Rule(old.match, mod.rule.instructions, old.table, old.priority, old.cookie,
                               old.idle_timeout, old.hard_timeout)
                    undo.append((vkey(old), old))
                    self.comp.add(new)
            else:
                for old in self._select(mod):
                    undo.append((vkey(old), old))
                    self.comp.remove(vkey(old))
            if self.comp.learning:
                self._flush_learned(undo)
        except (TranslationError, FlowModError):
            for key, old in reversed(undo):
                self.comp.remove(key)
                if old is not None:
                    self.comp.add(old)
            self.comp.take_journal()
            self.comp.shared.take_reowned()
            raise
        return plan_changes(self.comp.take_journal(), replace=mod.command == "add", ordered=True,
                            fresh=self.comp.shared.take_reowned())

    def _flush_learned(self, undo: list) -> None:
        """What Open vSwitch does when the last rule with a ``learn(delete_learned)`` of
        a (table, cookie) goes: the rules of that table with that cookie go too (the
        learned flows; on the host, which holds them, the switch deletes them itself)."""
        gone = delete_learned_keys(old for _, old in undo if old is not None)
        while gone:
            gone -= delete_learned_keys(self.comp.vrules.values())
            doomed = [r for r in self.comp.vrules.values() if (r.table, r.cookie) in gone]
            for r in doomed:
                undo.append((vkey(r), r))
                self.comp.remove(vkey(r))
            gone = delete_learned_keys(doomed)

    def _add(self, mod: FlowMod, undo: list) -> None:
        r = mod.rule
        if mod.check_overlap:
            for other in self.comp.vrules.values():
                if other.table == r.table and other.priority == r.priority and other.match != r.match \
                        and overlaps(other.match, r.match):
                    raise FlowModError("OFPFMFC_OVERLAP", f"overlaps an existing rule at priority {r.priority} in table {r.table}")
        undo.append((vkey(r), self.comp.vrules.get(vkey(r))))
        self.comp.add(r)

    def _select(self, mod: FlowMod) -> list[Rule]:
        r = mod.rule
        strict = mod.command.endswith("_strict")
        deleting = mod.command.startswith("delete")
        if strict and not mod.all_tables:
            cand = self.comp.vrules.get(vkey(r))
            pool = [cand] if cand is not None else []
        else:
            pool = [x for x in self.comp.vrules.values() if mod.all_tables or x.table == r.table]
        out = []
        for x in pool:
            if strict and (x.priority != r.priority or x.match != r.match):
                continue
            if not strict and not covers(r.match, x.match):
                continue
            if mod.cookie_mask and (x.cookie & mod.cookie_mask) != (r.cookie & mod.cookie_mask):
                continue
            if deleting and mod.out_port != OFPP_ANY and not _outputs_to(x, mod.out_port):
                continue
            if deleting and mod.out_group != OFPG_ANY and not _sends_to_group(x, mod.out_group):
                continue
            out.append(x)
        return sorted(out, key=lambda x: (x.table, x.priority))

    # ------------------------------------------------------------ groups
    def set_groups(self, groups: Iterable[Group]) -> UpdatePlan:
        """Replace the virtual group table (a GROUP_MOD's outcome). Flow ids are kept,
        so delivery rules never change meaning mid-plan. Raises TranslationError
        (state unchanged) if a group or a rule using it cannot be translated."""
        groups = list(groups)
        comp = self._compiler(self.topo, self.ids.copy(), groups)
        for rule in self.comp.vrules.values():
            comp.add(rule)
        comp.take_journal()
        plan = plan_changes(self._diff(comp))
        self._groups, self.ids, self.comp = groups, comp.ids, comp
        return plan

    def _diff(self, comp: Compiler) -> dict[Item, tuple[object, object]]:
        changes: dict[Item, tuple[object, object]] = {}
        for kind, old_tables, new_tables in (("rule", self.comp.rules, comp.rules), ("group", self.comp.groups, comp.groups)):
            for sw in comp.topo.switch_names:
                o, n = old_tables[sw], new_tables[sw]
                for key in o.keys() | n.keys():
                    if o.get(key) != n.get(key):
                        changes[(kind, sw, key)] = (o.get(key), n.get(key))
        return changes

    # ------------------------------------------------------------ remap
    def remap(self, vport: int, new: PortRef) -> UpdatePlan:
        """Move virtual port ``vport`` to physical port ``new`` (NF migration).
        Destinations whose delivery changes get fresh flow ids, so old and new
        delivery paths coexist while senders switch over; see plan.py."""
        return self.remap_ports({vport: new})

    def remap_ports(self, moves: dict[int, PortRef], extensions: dict[int, Extension] | None = None) -> UpdatePlan:
        """``remap`` of several virtual ports at once, all from one switch to one
        other (the ports of one NF that migrates), as one plan. ``extensions``: moved
        ports whose new location is an extension's host end (extension.py); every
        other moved port's new location is its wire. An extended port moved to a wire
        (an NF migration) stops being extended: its wire rules go in a last step."""
        olds = {v: self.topo.port_map.get(v) for v in moves}
        missing = [v for v, r in olds.items() if r is None]
        if missing or not moves:
            raise ValueError(f"virtual port {missing[0] if missing else '(none)'} does not exist")
        if len({r.switch for r in olds.values()}) > 1 or len({p.switch for p in moves.values()}) > 1:
            raise ValueError("ports moved together must all leave one switch for one other")
        old_ref, new = next(iter(olds.values())), next(iter(moves.values()))
        topo = self.topo
        for vport, ref in moves.items():
            topo = topo.with_port(vport, ref)
        ids = self.ids.copy()
        # a FLOOD written into the action set (("flood", x), ("except", x)) fans out from a
        # switch next to x's and reaches every switch: any remap may change it
        moved = [d for d in ids.tags if d[0] in ("port", "trunc") and d[1] in moves
                 or d[0] == "switch" and d[1] in (old_ref.switch, new.switch) or d[0] in ("flood", "except")]
        for dest in moved:
            ids.retag(dest)
        exts = {v: e for v, e in self.extensions.items() if v not in moves} | dict(extensions or {})
        comp = self._compiler(topo, ids, self._groups, {v: e.wire for v, e in exts.items()})
        for rule in self.comp.vrules.values():
            comp.add(rule)  # TranslationError leaves self untouched
        comp.take_journal()
        plan = plan_remap(self._diff(comp), old_ref.switch, new.switch)
        ids.release_retired()  # the plan's last step deletes the retired tags' rules
        # an extended port moved to another wire (an NF migration, not extension.retract): its
        # wire rules go once nothing uses them
        away = [e for v, e in self.extensions.items() if v in moves and v not in exts and moves[v] != e.wire]
        if away:
            plan.steps.append([PhysicalOp(sw, "delete_strict", rule=r) for e in away for sw, eg, ing in wire_rules(e)
                               for r in (eg, ing)])
        self.topo, self.ids, self.comp, self.extensions = topo, ids, comp, exts
        return plan
