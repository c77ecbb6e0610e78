"""The incremental translation engine behind ``translate`` and ``OneSwitchState``.

``Compiler`` holds, for one topology and flow-id allocation, the physical copies
of every virtual rule and the reference-counted shared items (delivery and
transit rules, groups), and journals every change so callers can diff
(translate.py describes the scheme, docs/oneswitch.md argues it). Inputs:
virtual rules added or removed one at a time. State: the physical rules and
groups per switch. Cost: O(copies x actions) per rule.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Iterable, Sequence

from tandem.rules.ir import (
    OFPG_ANY, OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, OFPP_LOCAL, OFPP_NORMAL, RESERVED_PORT_NAMES, Action,
    ApplyActions, Bucket, ClearActions, GotoTable, Group, GroupAction, Instruction, Match, MeterInstruction, Output,
    OutputReg, Resubmit, Rule, SetField, WriteActions, WriteMetadata, _new_rule,
)
from tandem.rules.ir import Learn
from tandem.rules.ir import Controller as NxController
from .packet_in_ext import physical_controller, physical_controllers
from .table_miss import explicit_miss
from .overlap_share import SharedEntries
from tandem.rules.ir import Clone, OutputTrunc
from tandem.rules.ir import CheckPktLarger
from tandem.rules.ir import Bundle, Multipath
from tandem.rules.ir import OFPP_TABLE

from .topology import PortRef, Topology
from .ids import (
    DELIVERY_PRIORITY, DELIVERY_TABLE, HIDDEN_TABLE, INFRA_COOKIE, INTERNAL_GROUP_BASE, MAX_OFPORT, MAX_VIRTUAL_TABLE,
    NO_PORT, TAG_FIELD, WIRE_PRIORITY, Dest, FlowIds, PKey, TranslationError, VKey, pkey,
)
from .ids import rule_text

from .ir_intern import (
    _RESTORE_MARK, _SAVE_MARK, _apply, _copy_rule, _goto, _match_of, _output, _ports, _replace_in_port, _set_mark,
    _with_zero_mark, _write,
)
from .conj_ledger import ConjLedger, conj_facts
from .output_reg_split import leaves, merged_facts
from .bucket_resubmit import bucket_resubmit, resubmit_groups
from .mark_ledger import MarkLedger
from .table0_lookup import WRITTEN_TABLE, bucket_table0, looks_up_table0
from .rule_analysis import _ZERO_MARK
from .learn_translate import check_learn, translate_learn
from .bucket_ct import bucket_ct_actions, holds_ct
from .clone_translate import clone_actions
from .actset_translate import ActsetLedger, checked_value, matched_port, physical_copies, physical_form
from .clone_translate import check_clone, learns
from .hashsel_translate import BUNDLE_GROUP, bundle_group, bundle_on
from .trunc_translate import pending_change, remote_max_len
from .rule_analysis import (
    MarkFacts, _analyze, check_ct, kept_output, mark_read_after, output_reg_port, pin_in_port, reads_in_port,
    resubmits_translated,
)

Item = tuple  # ("rule", switch, pkey) | ("group", switch, gid) | ("path", switch, dest)

_BAD_OUT_PORT = (2, 4)  # OFPET_BAD_ACTION, OFPBAC_BAD_OUT_PORT
_BAD_VALUE = (4, 7)  # OFPET_BAD_MATCH, OFPBMC_BAD_VALUE
_OVERLAP = (5, 3)  # OFPET_FLOW_MOD_FAILED, OFPFMFC_OVERLAP
_BAD_TABLE = (5, 2)  # OFPET_FLOW_MOD_FAILED, OFPFMFC_BAD_TABLE_ID
_BAD_GOTO = (3, 2)  # OFPET_BAD_INSTRUCTION, OFPBIC_BAD_TABLE_ID
_FLOODS = (OFPP_FLOOD, OFPP_ALL)
_NO_OUTPUT = (Output(NO_PORT),)
_IN_PORT = Output(OFPP_IN_PORT)


class Compiler:
    """Incremental translation state: physical copies of each virtual rule plus
    reference-counted shared items (delivery and transit rules, groups).
    ``journal`` records the old value of every physical item touched since the
    last ``take_journal`` so callers can diff.

    Ports: the virtual ports of the topology, plus the virtual switch's LOCAL
    port, which is the host switch's LOCAL port (its bridge's own interface),
    and CONTROLLER as an in_port (a PACKET_OUT's frames, run on the host)."""

    def __init__(self, topo: Topology, ids: FlowIds | None = None, groups: Iterable[Group] = (),
                 down: Iterable[int] = (), wires: dict[int, PortRef] | None = None) -> None:
        """``down``: virtual ports known not live (port status); ``wires``: virtual ports
        whose location in ``topo`` is a stand-in (a port extension's host end) -> the
        physical port whose state is theirs. Both only matter to watched buckets."""
        self.topo = topo
        self.ids = ids if ids is not None else FlowIds.for_topology(topo)
        self.down: set[int] = set(down)
        self.wires: dict[int, PortRef] = dict(wires or {})
        self.vgroups: dict[int, Group] = {}
        self.track = True  # record old values for take_journal (batch translate turns it off)
        self.learning = False  # a rule with a learn action was added (its learned flows outlive it)
        host = topo.host
        # outputs: virtual ports and LOCAL; in_ports: also CONTROLLER
        self.ports: dict[int, PortRef] = {**topo.port_map, OFPP_LOCAL: PortRef(host, OFPP_LOCAL)}
        self.in_ports: dict[int, PortRef] = {**self.ports, OFPP_CONTROLLER: PortRef(host, OFPP_CONTROLLER)}
        # the in_ports of each switch (what a per-port expansion of a wildcard copy lists)
        self.switch_in_ports: dict[str, tuple[int, ...]] = {sw: topo.local_vports(sw) for sw in topo.switch_names}
        self.switch_in_ports[host] += (OFPP_LOCAL, OFPP_CONTROLLER)
        self.ingress: tuple[str, ...] = topo.ingress_switches
        self.single = not topo.links  # one switch: nothing crosses PCIe
        self._tag_cache: dict[tuple, tuple[tuple[Action, ...], tuple[Item, ...]]] = {}
        self._out_cache: dict[tuple, _OutEntry] = {}
        self._saved_cache: dict[tuple, _OutEntry] = {}  # the same, the packet's mark restored after a PCIe output
        self._out_by_port: dict[str, dict[int, _OutEntry]] = {sw: {} for sw in topo.switch_names}  # not CONTROLLER
        self._tag_dest: dict[int, Dest] = {}  # tag -> destination, for tags handed out by _delivery_item
        for g in groups:
            if g.group_id >= INTERNAL_GROUP_BASE:
                raise TranslationError(f"group {g.group_id:#x}", f"group ids >= {INTERNAL_GROUP_BASE:#x} are reserved for OneSwitch")
            self.vgroups[g.group_id] = g
        for g in self.vgroups.values():
            for b in g.buckets:
                check_ct(None, b.actions, f"group {g.group_id}")
                for a in b.actions:
                    if type(a) is Learn:
                        check_learn(None, a, f"group {g.group_id}")
                if reads_in_port(b.actions):
                    pin_in_port(b.actions, None, f"group {g.group_id}")  # (refuses: a group does not know the port)
        for sw in self.ingress:  # reject bad groups now, not halfway through an add
            for gid in self.vgroups:
                self._build_group(sw, gid)
        self.copies: dict[VKey, list[tuple[str, Rule]]] = {}
        self.shared = SharedEntries()  # copies of two rules that are one physical entry (overlap_share.py)
        self.needs: dict[VKey, list[Item]] = {}
        self.vrules: dict[VKey, Rule] = {}
        self.rules: dict[str, dict[PKey, Rule]] = {s: {} for s in topo.switch_names}
        self.groups: dict[str, dict[int, Group]] = {s: {} for s in topo.switch_names}
        self.refs: dict[Item, int] = {}
        self.shared_deps: dict[Item, list[Item]] = {}
        self.journal: dict[Item, object] = {}
        # what the virtual rules do with the packet mark (mark_ledger.py)
        self.marks = MarkLedger(self.vgroups.values(), self.single)
        self.resubmit_groups = resubmit_groups(self.vgroups.values())
        self.mark_facts: dict[VKey, MarkFacts] = {}
        # conjunctive flows and the rules whose copies reshape their match (conj_ledger.py)
        self.conjs = ConjLedger()
        self.conj_facts: dict[VKey, tuple[bool, bool]] = {}
        # written outputs and actset_output matches (actset_translate.py)
        self._actset_forms: dict[tuple[str, int], int] = {}
        self.actsets = ActsetLedger(self._actset_physical)
        self.actset_facts: dict[VKey, tuple] = {}

    # ------------------------------------------------------------ journal
    def _get(self, item: Item) -> object:
        kind, sw, key = item
        return (self.rules if kind == "rule" else self.groups)[sw].get(key)

    def _set(self, item: Item, value: object) -> None:
        kind, sw, key = item
        if self.track and item not in self.journal:
            self.journal[item] = self._get(item)
        table = self.rules[sw] if kind == "rule" else self.groups[sw]
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value

    def take_journal(self) -> dict[Item, tuple[object, object]]:
        """{item: (old, new)} for items that changed since the last call."""
        out = {}
        for item, old in self.journal.items():
            new = self._get(item)
            if old != new:
                out[item] = (old, new)
        self.journal = {}
        return out

    # ------------------------------------------------------------ virtual rules
    def add(self, rule: Rule) -> None:
        """Add (or replace, same table/priority/match) a virtual rule. On error nothing changes."""
        key = (rule.table, rule.priority, rule.match)  # = vkey(rule)
        xrule = explicit_miss(rule)  # (a table-miss flow's packet-ins are no_match: table_miss.py)
        info = _analyze(xrule)
        parts = None if info[4] else leaves(xrule, self.ports)
        if parts is None:
            copies, needs = self._translate_rule(xrule, info)
        else:  # (an output_reg of a number known at run time: one part per value, output_reg_split.py)
            copies, needs, part_facts = self._translate_parts(xrule, parts)
            info = info[:7] + (part_facts,)
        replacing = self.vrules.get(key)
        aport = matched_port(rule)
        if aport is not None:  # (the physical form of actset_output on each switch: actset_translate.py)
            checked_value(rule)
            copies = physical_copies(copies, aport, self._actset_physical)
        afacts = self.actsets.facts(rule, {sw for sw, _ in copies})
        if afacts is not None or key in self.actset_facts:
            self.actsets.check(rule, afacts, self.actset_facts.get(key) if replacing is not None else None)
        rules = self.rules
        tied = False
        for sw, prule in copies:  # two virtual rules whose copies would be one physical rule: one stands for both
            other = rules[sw].get((prule.table, prule.priority, prule.match))
            if other is not None and (replacing is None or (sw, other) not in self.copies[key]):
                if self.shared.owner(self, sw, (prule.table, prule.priority, prule.match)) is None:
                    raise TranslationError(rule, f"on {sw} its copy would have the same priority and match as one "
                                           "of OneSwitch's own rules", _OVERLAP)
                tied = True
        facts = info[7]
        old_facts = self.mark_facts.get(key) if replacing is not None else None
        if facts is not None or old_facts is not None:
            self.marks.check(rule, facts, (replacing, old_facts) if old_facts is not None else None)
        cfacts = conj_facts(rule, info, self.single)
        if parts is not None:  # the parts' matches are not the rule's
            cfacts = (bool(cfacts and cfacts[0]), True)
        if aport is not None and any(c.match.get("actset_output").value != aport for _, c in copies):
            cfacts = (bool(cfacts and cfacts[0]), True)  # (two ports may share a physical form: actset_translate.py)
        if cfacts is not None:
            self.conjs.check(rule, cfacts, self.conj_facts.get(key) if replacing is not None else None)
        if replacing is not None:
            self.remove(key)
        if tied:  # (overlap_share.py)
            copies = self.shared.place(self, key, copies)
        track, refs, journal = self.track, self.refs, self.journal
        for sw, prule in copies:
            table = rules[sw]
            pk = (prule.table, prule.priority, prule.match)
            if track:  # = self._set(("rule", sw, pk), prule)
                item = ("rule", sw, pk)
                if item not in journal:
                    journal[item] = table.get(pk)
            table[pk] = prule
        for item in needs:
            n = refs.get(item)
            if n:  # already built: just count this use (the common case)
                refs[item] = n + 1
            else:
                self._acquire(item)
        self.copies[key] = copies
        if needs:
            self.needs[key] = needs
        self.vrules[key] = rule
        if facts is not None:
            self.mark_facts[key] = facts
            self.marks.count(rule, facts, +1)
        if cfacts is not None:
            self.conj_facts[key] = cfacts
            self.conjs.count(rule, cfacts, +1)
        if afacts is not None:
            self.actset_facts[key] = afacts
            self.actsets.count(afacts, +1)
        if not info[4] and not self.learning:  # (plain rules have no learn action)
            self.learning = bool(learns(rule.apply_actions))  # (in clones too)

    def add_single_copy(self, rule: Rule, sw: str, prule: Rule, needs: tuple[Item, ...]) -> VKey | None:
        """The bookkeeping of ``add(rule)`` for a rule whose translation is known to be
        the one copy ``prule`` on ``sw`` needing the shared ``needs`` (fastlane.py), when
        that add changes exactly one physical item: no rule with ``rule``'s key or
        ``prule``'s key exists, every shared item it needs is already installed,
        nothing journaled. Returns None, changing nothing, otherwise (the caller then
        takes the general path), else the rule's key. The physical change is then
        ("rule", sw, pkey(prule)): None -> prule, and nothing is journaled."""
        refs = self.refs
        if self.journal:
            return None
        for item in needs:
            if not refs.get(item):
                return None
        key = (rule.table, rule.priority, rule.match)
        vrules = self.vrules
        if vrules.setdefault(key, rule) is not rule:  # a rule with this key exists (left as it was)
            return None
        pk = (prule.table, prule.priority, prule.match)
        table = self.rules[sw]
        if table.setdefault(pk, prule) is not prule:
            del vrules[key]
            return None
        for item in needs:
            refs[item] += 1
        self.copies[key] = [(sw, prule)]
        if needs:
            self.needs[key] = list(needs)
        return key

    def remove(self, key: VKey) -> Rule | None:
        rule = self.vrules.pop(key, None)
        if rule is None:
            return None
        removed = self.copies.pop(key)
        for sw, prule in removed:
            self._set(("rule", sw, pkey(prule)), None)
        if self.shared.claims:  # (an entry it shared with another rule's copy: overlap_share.py)
            self.shared.release(self, key, removed)
        for item in self.needs.pop(key, ()):
            self._release(item)
        facts = self.mark_facts.pop(key, None)
        if facts is not None:
            self.marks.count(rule, facts, -1)
        cfacts = self.conj_facts.pop(key, None)
        if cfacts is not None:
            self.conjs.count(rule, cfacts, -1)
        self.actsets.count(self.actset_facts.pop(key, None), -1)
        return rule

    # ------------------------------------------------------------ shared items
    def _acquire(self, item: Item) -> None:
        n = self.refs[item] = self.refs.get(item, 0) + 1
        if n == 1:
            if item[0] == "path":  # a bundle: the rules that carry tagged frames src -> dest
                value, deps = None, [self._delivery_item(self.topo.next_hop(item[1], self._dest_switch(item[2]))[0],
                                                         item[2])]
            else:
                value, deps = self._build_shared(item)
            self.shared_deps[item] = deps
            for d in deps:
                self._acquire(d)
            if value is not None:
                self._set(item, value)

    def _release(self, item: Item) -> None:
        n = self.refs[item] = self.refs[item] - 1
        if n == 0:
            del self.refs[item]
            if item[0] != "path":
                self._set(item, None)
            for d in self.shared_deps.pop(item):
                self._release(d)

    def _build_shared(self, item: Item) -> tuple[object, list[Item]]:
        kind, sw, key = item
        if kind == "group":
            return self._build_group(sw, key)
        return self._delivery_rule(sw, key[2])  # a delivery rule: its key's match is the tag

    def _delivery_rule(self, sw: str, match: Match) -> tuple[Rule, list[Item]]:
        """The rule on ``sw`` for frames marked with the tag in ``match``: outputs on
        the destination's switch, else the next PCIe hop toward it (the mark kept)."""
        tag = match.get(TAG_FIELD).value
        dest = self._tag_dest.get(tag)
        if dest is None:
            dest = next(d for d, t in self.ids.tags.items() if t == tag and d[0] != "retired")
        dst_sw = self._dest_switch(dest)
        deps: list[Item] = []
        if dst_sw != sw:
            nxt, port = self.topo.next_hop(sw, dst_sw)
            actions: tuple[Action, ...] = (_output(port),)
            deps.append(self._delivery_item(nxt, dest))
        elif dest[0] == "port":
            actions = (_output(self.ports[dest[1]].port),)
        elif dest[0] == "trunc":  # ("trunc", vport, max_len): cut on the port's switch (trunc_translate.py)
            actions = (OutputTrunc(self.ports[dest[1]].port, dest[2]),)
        elif dest[0] == "switch":
            actions = tuple([_output(p) for p in self._flood_ports(sw)])
        elif dest[0] == "except":  # every port of sw but the flooding packet's in_port
            skip = self.in_ports[dest[1]].port
            actions = tuple([_output(p) for p in self._flood_ports(sw) if p != skip])
        else:  # ("flood", v) on the switch next to v's: its ports, every other switch, and v's switch but v
            acts = [_output(p) for p in self._flood_ports(sw)]
            home = self.in_ports[dest[1]].switch
            for r in self.ingress:
                if r != sw:
                    acts += self._tagged(sw, ("except", dest[1]) if r == home else ("switch", r), deps)
            # the frame came from v's switch over the link toward it: what goes back leaves on IN_PORT
            back = _output(self.topo.next_hop(sw, home)[1])
            actions = tuple([_IN_PORT if a is back else a for a in acts])
        rule = _new_rule(match, (_apply(actions),), DELIVERY_TABLE, DELIVERY_PRIORITY, INFRA_COOKIE, 0, 0)
        return rule, deps

    def _flood_ports(self, sw: str) -> list[int]:
        """Physical ports a FLOOD reaches on ``sw``: its virtual ports and, on the host, LOCAL."""
        ports = [self.ports[v].port for v in self.topo.local_vports(sw)]
        if sw == self.topo.host:
            ports.append(OFPP_LOCAL)
        return ports

    def _dest_switch(self, dest: Dest) -> str:
        kind, what = dest[0], dest[1]
        if kind == "switch":
            return what
        if kind == "trunc":
            return self.ports[what].switch
        home = self.in_ports[what].switch
        return self._flood_via(home) if kind == "flood" else home

    def _flood_via(self, sw: str) -> str:
        """The switch that fans out a FLOOD written by a packet entering ``sw``: the
        next one toward the host (from the host: its first neighbour)."""
        host = self.topo.host
        if sw != host:
            return self.topo.next_hop(sw, host)[0]
        return min(l.end_on(host)[1].switch for l in self.topo.links if host in (l.a.switch, l.b.switch))

    def _delivery_item(self, sw: str, dest: Dest) -> Item:
        """The delivery (or transit) rule on ``sw`` for ``dest``."""
        tag = self.ids.tag(dest)
        self._tag_dest[tag] = dest  # a compiler's tags never change (retagging builds a new compiler)
        return ("rule", sw, (DELIVERY_TABLE, DELIVERY_PRIORITY, _match_of(TAG_FIELD, tag)))

    # ------------------------------------------------------------ groups
    def _build_group(self, sw: str, gid: int) -> tuple[Group, list[Item]]:
        deps: list[Item] = []
        if gid >= INTERNAL_GROUP_BASE:  # OneSwitch's own groups, by their key in ids.groups
            key = next(k for k, v in self.ids.groups.items() if v == gid)
            if key[0] == "split":  # ("split", virtual gid, bucket index): one bucket's outputs
                vb = self.vgroups[key[1]].buckets[key[2]]
                segs = self._bucket_segments(sw, vb.actions, deps, f"group {key[1]}")
                return Group(gid, "all", tuple(Bucket(seg) for seg in segs)), deps
            if key[0] == "live":  # ("live", virtual port): live exactly while that port is
                return self._live_group(sw, gid, key[1]), deps
            if key[0] == BUNDLE_GROUP:  # ("bundle", members[, i]): an active_backup bundle (hashsel_translate)
                return bundle_group(self, sw, gid, key, deps), deps
            # ("either", virtual port, virtual group): live while one of them is
            live = self.ids.group(("live", key[1]))
            deps.append(("group", sw, live))
            if key[2] in self.vgroups:
                deps.append(("group", sw, key[2]))
            return Group(gid, "fast_failover", (Bucket(watch_group=live), Bucket(watch_group=key[2]))), deps
        vg = self.vgroups[gid]
        what = f"group {gid}"
        buckets = []
        for i, b in enumerate(vg.buckets):
            watch, watch_group = self._watch(sw, b.watch_port, b.watch_group, deps, gid)
            segments = self._bucket_segments(sw, b.actions, deps, what)
            if len(segments) <= 1 or vg.type == "all":
                buckets += [Bucket(seg, b.weight, watch, watch_group) for seg in segments or [()]]
            else:
                split = self.ids.group(("split", gid, i))
                deps.append(("group", sw, split))
                buckets.append(Bucket((GroupAction(split),), b.weight, watch, watch_group))
        return Group(gid, vg.type, tuple(buckets)), deps

    # ------------------------------------------------------------ liveness
    def _watch(self, sw: str, port: int, group: int, deps: list[Item], owner: int) -> tuple[int, int]:
        """A virtual bucket's (watch_port, watch_group) on switch ``sw``. A watched virtual
        port whose wire is on ``sw`` is watched there directly (the switch sees its state
        at once). Any other watched port (its wire on another switch, or no such virtual
        port) becomes the watch group ``("live", port)``: an internal fast-failover group
        that has one bucket, watching a PCIe port (always live), while OneSwitch knows the
        port is live, and none otherwise (``set_port_live`` rewrites it). A watched group
        is the virtual group's copy on ``sw`` (built there for the purpose); a bucket
        watching both a remote port and a group watches ``("either", port, group)``, live
        while one of the two is (Open vSwitch: either watch makes the bucket live). A
        watched group that is no virtual group stays as it is: no such group, never live."""
        if group in self.vgroups and group != owner:
            watched: list[Item] = [("group", sw, group)]
        else:
            watched = []
        if port == OFPP_ANY or port >= 0xFFFFFF00:  # not watched, or a reserved port (its own meaning)
            deps += watched
            return port, group
        wire = self.wires.get(port) or self.topo.port_map.get(port)
        if wire is not None and wire.switch == sw:
            deps += watched
            return wire.port, group
        if group == OFPG_ANY:
            live = self.ids.group(("live", port))
            deps.append(("group", sw, live))
            return OFPP_ANY, live
        either = self.ids.group(("either", port, group))
        deps.append(("group", sw, either))
        return OFPP_ANY, either

    def _live_group(self, sw: str, gid: int, vport: int) -> Group:
        if vport in self.down or vport not in self.topo.port_map:
            return Group(gid, "fast_failover")
        return Group(gid, "fast_failover", (Bucket(watch_port=min(self.topo.link_ports(sw))),))

    def set_port_live(self, vport: int, live: bool) -> None:
        """Record virtual port ``vport``'s liveness and rewrite its ``("live", vport)`` group
        on every switch that holds it (journaled: ``take_journal`` gives the modifies)."""
        if (vport not in self.down) == live:
            return
        (self.down.discard if live else self.down.add)(vport)
        gid = self.ids.groups.get(("live", vport))
        if gid is None:
            return
        for sw in self.topo.switch_names:
            item = ("group", sw, gid)
            if self.refs.get(item):
                self._set(item, self._live_group(sw, gid, vport))

    def _bucket_segments(self, sw: str, actions: Sequence[Action], deps: list[Item], what: str) -> list[tuple[Action, ...]]:
        """A bucket as action lists that each end in one physical output (an all-group of
        them is equivalent). Open vSwitch runs a bucket as an action set: its changes,
        then its last group, else its last output, else its last resubmit (measured: a
        bucket ``output:2,output:3`` sends to 3 only). That one is translated; where it
        becomes several outputs (FLOOD, ALL) each gets its own list with every change,
        the set_field of its flow id just before it, so no translated bucket carries a
        flow id set for another output."""
        prefix: list[Action] = []
        last: Action | None = None
        for a in actions:
            if isinstance(a, Resubmit):
                a = bucket_resubmit(a, what, self, sw)
                if a is None:
                    continue
                if last is None or type(last) is Resubmit:
                    last = a
            elif isinstance(a, (Bundle, Multipath)):  # (Open vSwitch runs a bucket as an action set: it ignores them)
                continue
            elif isinstance(a, (Clone, CheckPktLarger, OutputTrunc)):  # (so these too: measured)
                continue
            elif type(a) is Learn:  # (so learn too: measured, bucket_ct.py)
                continue
            elif isinstance(a, GroupAction) or (isinstance(a, Output) and not isinstance(last, GroupAction)):
                last = a
            else:
                prefix.append(a)
        if last is None:  # (a final ct or ct_clear is the bucket's one list: bucket_ct.py)
            return [tuple(self._actions(sw, bucket_ct_actions(prefix), deps, what, True))] if holds_ct(prefix) else []
        segments: list[tuple[Action, ...]] = []
        pending: list[Action] = []
        if looks_up_table0(last):  # with the mark at 0 after the bucket's own set-fields (table0_lookup.py)
            acts = [*self._actions(sw, prefix, deps, what, True), *bucket_table0(last)]
        else:
            acts = self._actions(sw, [*prefix, last], deps, what, True)  # (the changes translate one to one)
        head = acts[:len(prefix)]
        for a in acts[len(prefix):]:
            if isinstance(a, (Output, GroupAction, Resubmit)):  # (a bucket runs on a copy: its mark is not seen after)
                segments.append((*head, *pending, a))
                pending = []
            else:
                pending.append(a)
        return segments

    # ------------------------------------------------------------ one rule
    def _translate_parts(self, rule: Rule, parts: list[Rule]) -> tuple[list[tuple[str, Rule]], list[Item],
                                                                       MarkFacts | None]:
        """The copies and shared items of ``rule``'s per-value parts (``output_reg_split``),
        and what they do with the mark together."""
        copies: list[tuple[str, Rule]] = []
        needs: list[Item] = []
        facts = []
        for part in parts:
            info = _analyze(part)
            try:
                c, n = self._translate_rule(part, info)
            except TranslationError as e:
                raise TranslationError(rule, f"its output_reg, split per value of the register, has the part "
                                       f"{rule_text(part)}: {e.reason}", e.of_error) from None
            copies += c
            needs += n
            facts.append(info[7])
        return copies, needs, merged_facts(facts)

    def _translate_rule(self, rule: Rule, info: tuple) -> tuple[list[tuple[str, Rule]], list[Item]]:
        what = rule  # formatted only if an error is raised
        if rule.table > MAX_VIRTUAL_TABLE:
            raise TranslationError(what, f"table {rule.table} > {MAX_VIRTUAL_TABLE} (254 is Open vSwitch's own)", _BAD_TABLE)
        goto, wflood, inm, sends, plain, single_out, reads, _ = info
        if goto is not None and goto > HIDDEN_TABLE:
            raise TranslationError(what, f"goto_table:{goto} > {HIDDEN_TABLE}", _BAD_GOTO)
        # (a wildcard-in_port rule that reads in_port is pinned per in_port: ``_expanded``)
        instructions = rule.instructions
        if reads and inm is not None:
            instructions = self._pinned(rule, inm.value if inm.mask is None else None, instructions)
        resubmits = info[7] is not None and info[7].resubmits
        if resubmits:
            instructions = self._resubmits(rule, instructions, inm)
        table0 = rule.table == 0
        # A PCIe output sets the flow id in the packet mark; the packet's own mark is saved
        # and restored around it unless nothing can see it after: no later action of the
        # list reads it and the rule is in table 0 (where a packet from a virtual port
        # starts, with an empty action set) and goes nowhere else (``ends``).
        # (A rule that resubmits does not end there: rules it finds may write actions.)
        ends = table0 and not resubmits and ((len(instructions) == 1 and type(instructions[0]) is ApplyActions)
                                             or all(type(i) in _ENDS_HERE for i in instructions))
        if ends and self.resubmit_groups and not info[4]:  # (a bucket's resubmit may write the action set)
            ends = False
        if table0:  # a packet from a virtual port has no flow id, and mark 0, in table 0
            fm = rule.match.get(TAG_FIELD)
            if fm is not None and not fm.matches(0):
                return [], []  # so this rule never matches there
        if inm is not None:
            ref = self.in_ports.get(inm.value)
            if ref is None:
                if MAX_OFPORT < inm.value < 0xFFFFFF00:
                    raise TranslationError(what, f"in_port={inm.value:#x} is outside 0..{MAX_OFPORT:#x} and the "
                                           "reserved ports", _BAD_VALUE)
                return [], []  # no port of the switch has this number: the rule never matches
            targets: Sequence[str] = (ref.switch,)
            # the copy matches the physical in_port (same match object if the numbers agree)
            match = rule.match if ref.port == inm.value and inm.mask is None else _replace_in_port(rule.match, ref.port)
            vin = inm.value if wflood else None
        else:
            targets = self.ingress
            match = rule.match
            if table0:  # keep marked PCIe arrivals (delivery rules' frames) out of the copies
                match = _with_zero_mark(match)
            if wflood and not self.single or table0 and rule.priority == WIRE_PRIORITY or reads:
                return self._expanded(rule, instructions, wflood, ends, reads)
            vin = None
        copies: list[tuple[str, Rule]] = []
        needs: list[Item] = []
        if not sends:  # nothing switch-specific: translate once, share the instructions
            ins = tuple([self._instruction(targets[0], i, needs, what, ends) for i in instructions])
            return [(sw, _copy_rule(rule, match, ins)) for sw in targets], needs
        table, priority, cookie = rule.table, rule.priority, rule.cookie
        idle, hard = rule.idle_timeout, rule.hard_timeout
        if len(instructions) == 1 and type(instructions[0]) is ApplyActions:  # the common shape
            actions = instructions[0].actions
            if single_out >= 0 and instructions is rule.instructions:  # one output, no group: only it changes
                a = actions[single_out]
                head, tail = actions[:single_out], actions[single_out + 1:]
                if head or tail:  # (a controller(...) among them becomes its physical form)
                    head, tail = physical_controllers(head), physical_controllers(tail)
                bare_out = ends and not (tail and mark_read_after(actions)[single_out])
                for sw in targets:
                    e = self._out_by_port[sw].get(a.port) if bare_out else None
                    if e is None:
                        e = self.out_entry(sw, a.port, a.max_len, what, bare_out)
                    if e[1]:
                        needs += e[1]
                    if head or tail:
                        ins = (_apply(head + e[0] + tail),)
                    else:  # "output:X" alone: every such rule on sw shares one instructions tuple
                        ins = e[2]
                    copies.append((sw, _new_rule(match, ins, table, priority, cookie, idle, hard)))
                return copies, needs
            for sw in targets:
                acts = self._actions(sw, actions, needs, what, ends)
                copies.append((sw, _new_rule(match, (_apply(tuple(acts)),), table, priority, cookie, idle, hard)))
            return copies, needs
        for sw in targets:
            ins = tuple([self._instruction(sw, i, needs, what, ends, vin) for i in instructions])
            copies.append((sw, _new_rule(match, ins, table, priority, cookie, idle, hard)))
        return copies, needs

    def _expanded(self, rule: Rule, instructions: tuple[Instruction, ...], wflood: bool,
                  ends: bool, pin: bool = False) -> tuple[list[tuple[str, Rule]], list[Item]]:
        """Copies of a wildcard-in_port rule, one per in_port of each switch, where one
        copy per switch will not do: the rule writes FLOOD/ALL into the action set
        (whose translation must name the in_port to leave out), or it sits in table 0
        at priority 65535 on an sNIC, where a port's wire rule (extension.py) must
        win over every virtual rule without a tie, or (``pin``) a move reads in_port,
        which each copy knows is its own virtual port (``pin_in_port``)."""
        copies: list[tuple[str, Rule]] = []
        needs: list[Item] = []
        host = self.topo.host
        for sw in self.ingress:
            if not wflood and not pin and sw == host:  # only the priority: the host has no wires
                ins = tuple([self._instruction(sw, i, needs, rule, ends) for i in instructions])
                copies.append((sw, _copy_rule(rule, _with_zero_mark(rule.match), ins)))
                continue
            for v in self.switch_in_ports[sw]:
                port = self.in_ports[v].port
                own = self._pinned(rule, v, instructions) if pin else instructions
                ins = tuple([self._instruction(sw, i, needs, rule, ends, v) for i in own])
                copies.append((sw, _copy_rule(rule, rule.match.with_field("in_port", port), ins)))
        return copies, needs

    def _pinned(self, rule: Rule, vport: int | None, instructions: tuple[Instruction, ...]) -> tuple[Instruction, ...]:
        """``instructions`` with the rule's reads of in_port replaced (``pin_in_port``)."""
        return tuple([type(i)(pin_in_port(i.actions, vport, rule)) if type(i) in (ApplyActions, WriteActions) else i
                      for i in instructions])

    def _resubmits(self, rule: Rule, instructions: tuple[Instruction, ...], inm) -> tuple[Instruction, ...]:
        """The instructions with their resubmits translated (``resubmits_translated``).
        A rule matching ``in_port=V`` may be found by a resubmit with another in_port and
        then runs with the packet's own (Open vSwitch restores it after the lookup), so
        its ``resubmit(V,T)`` keeps V (``_resubmit``: V's number here) whenever some
        rule's resubmit may name V: V is a port here."""
        vport = inm.value if inm is not None and inm.mask is None and inm.value not in self.in_ports else None
        out: list[Instruction] = []
        for i in instructions:
            if type(i) is ApplyActions:
                i = ApplyActions(resubmits_translated(i.actions, rule, vport, written=False))
            elif type(i) is WriteActions:
                i = WriteActions(resubmits_translated(i.actions, rule, vport, written=True))
            out.append(i)
        return tuple(out)

    def _instruction(self, sw: str, ins: Instruction, deps: list[Item], what: Rule | str, ends: bool,
                     in_port: int | None = None) -> Instruction:
        t = type(ins)
        if t is GotoTable:
            return _goto(ins.table)
        if t is ApplyActions:
            return _apply(tuple(self._actions(sw, ins.actions, deps, what, ends)))
        if t is WriteActions:
            # the one output the list leaves in the action set goes last: a flow id it sets
            # in the mark then follows the list's own reads and writes of the mark
            out: list[Action] = []
            for a in ins.actions:
                if isinstance(a, GroupAction):
                    out.append(self._group_ref(sw, a, deps, what))
                elif type(a) is Resubmit and a.in_port != OFPP_IN_PORT:
                    out.append(self._resubmit(sw, a, what))
                elif not isinstance(a, Output):
                    out.append(a)
            kept = kept_output(ins.actions)
            if kept >= 0:
                out += self._written_output(sw, ins.actions[kept], in_port, deps, what)
            return _write(tuple(out))
        return ins

    def _written_output(self, sw: str, a: Output, in_port: int | None, deps: list[Item], what: Rule | str) -> list[Action]:
        """An output in write_actions, as the action set's output (never its group, so
        a written group still wins over it as OpenFlow says): a local port, or the
        flow id's set_field and the PCIe port (the action set runs set-fields before
        the output). An output that sends nothing becomes an output to a port no
        switch has, so it still replaces an earlier written output. FLOOD/ALL: the
        frame goes marked to the next switch, which fans it out and sends it back
        for this switch's other ports (``in_port`` is the virtual in_port); on a
        single switch, physical ALL is FLOOD exactly."""
        if a.port in _FLOODS:
            if self.single:
                return [Output(OFPP_ALL)]
            return self._tagged(sw, ("flood", in_port), deps)
        if a.port == OFPP_CONTROLLER:
            return [Output(OFPP_CONTROLLER, a.max_len)]
        if a.port == OFPP_TABLE:  # a lookup in table 0, which needs the mark at 0 (table0_lookup.py)
            return list(WRITTEN_TABLE)
        e = self._out_by_port[sw].get(a.port)
        if e is None:
            e = self._out_entry(sw, a.port, a.max_len, what)
        deps += e[1]
        return list(e[0]) or list(_NO_OUTPUT)

    def _group_ref(self, sw: str, a: GroupAction, deps: list[Item], what: Rule | str) -> GroupAction:
        if a.group_id not in self.vgroups:
            raise TranslationError(what, f"group:{a.group_id} refers to a group that does not exist")
        deps.append(("group", sw, a.group_id))
        return a

    def _actions(self, sw: str, actions: Sequence[Action], deps: list[Item], what: Rule | str,
                 ends: bool, in_clone: bool = False, prefix: Sequence[Action] = (),
                 outer: Sequence[Action] | None = None, outer_last: bool = False) -> list[Action]:
        """Translate an action list: only outputs change (a local output becomes the
        physical port, a remote one sets the flow-id mark and outputs to the PCIe
        port, saving and restoring the packet's own mark around it unless the list
        ``ends`` the pipeline and no later action reads the mark); group actions are
        checked. The mark is packet metadata, not bytes, so VLAN pushes and pops of
        the rule need no special handling. ``prefix``: in a clone, the actions that ran
        before it (the rule's, and the enclosing clones'), which an output_reg's number
        may come from; ``outer``: the rule's actions before a clone that may end the
        translation, ``outer_last`` if it surely does (its output_trunc: trunc_translate.pending_change)."""
        out: list[Action] = []
        by_port = self._out_by_port[sw]
        read_after = mark_read_after(actions) if ends else None
        for i, a in enumerate(actions):
            t = type(a)
            if t is OutputReg:
                if not isinstance(what, Rule):
                    raise TranslationError(what, "output_reg in a group bucket: the port number it holds is not "
                                           "fixed by a rule's match", (2, 5))
                a = output_reg_port((*prefix, *actions), len(prefix) + i, what.match, what) if in_clone \
                    else output_reg_port(actions, i, what.match, what)
                if a is None:
                    continue
                if in_clone and a.port == OFPP_NORMAL:
                    check_clone(Clone((a,)), what)  # (NORMAL inside clone: refused as such)
                if a.port == OFPP_TABLE:  # the lookup in table 0 Open vSwitch makes of it (as output:TABLE)
                    out += (_ZERO_MARK, Resubmit(OFPP_IN_PORT, 0))
                    continue
                t = Output
            if t is Output:
                bare = ends and not read_after[i]  # type: ignore[index]
                e = by_port.get(a.port) if bare else None
                if e is None:
                    e = self.out_entry(sw, a.port, a.max_len, what, bare)
                if e[1]:
                    deps += e[1]
                out += e[0]
            elif t is GroupAction:
                out.append(self._group_ref(sw, a, deps, what))
            elif t is Resubmit and a.in_port != OFPP_IN_PORT:
                out.append(self._resubmit(sw, a, what))
            elif t is Learn:
                out.append(translate_learn(a, lambda v: self._port_on(sw, v)))
            elif t is NxController:  # its virtual id, max_len and reason ride in the userdata (packet_in_ext.py)
                out.append(physical_controller(a, a.pause and isinstance(what, Rule)  # (a pause: endpoint_pause.py)
                                               and any(type(x) is WriteActions for x in what.instructions)))
            elif t is Clone:
                before = (*prefix, *actions[:i])
                # (the rule's last action, no goto or write after it: Open vSwitch may translate it inline)
                last = not in_clone and i == len(actions) - 1 and isinstance(what, Rule) and what.goto is None \
                    and not any(type(x) is WriteActions for x in what.instructions)
                out.append(clone_actions(a, lambda nested: self._actions(sw, nested, deps, what, False, True, before,
                                                                         before if last else None, last and ends)))
            elif t is Bundle:
                out += bundle_on(self, sw, a, deps, what)
            elif t is OutputTrunc:
                acts = self._output_trunc(sw, actions, i, deps, what, in_clone, outer, outer_last)
                # (the restore also keeps the PCIe output off the end when a push, pop or encap(ethernet) is
                # pending: Open vSwitch commits nothing at a patch-port output that ends the translation)
                if any(type(x) is SetField for x in acts) and (not (ends and not read_after[i])  # type: ignore[index]
                                                               or pending_change(actions, i, what, self.ports, in_clone,
                                                                                 outer, outer_last)):
                    acts = [_SAVE_MARK, *acts, _RESTORE_MARK]
                out += acts
            else:
                out.append(a)
        return out

    def _output_trunc(self, sw: str, actions: Sequence[Action], i: int, deps: list[Item], what: Rule | str,
                      in_clone: bool, outer: Sequence[Action] | None = None, outer_last: bool = False) -> list[Action]:
        """``output(port=P,max_len=N)`` (``actions[i]``): on P's switch as it is; toward another
        switch the whole frame crosses PCIe with a flow id of its own, cut on P's switch
        (trunc_translate.py). To IN_PORT, a reserved port or no port nothing is sent."""
        a = actions[i]
        ref = self.ports.get(a.port)
        if ref is None:
            if a.port <= MAX_OFPORT or a.port == OFPP_IN_PORT:  # (no such port, or the in_port: nothing is sent)
                return []
            raise self._bad_port(a.port, what)  # LOCAL, as output:LOCAL
        if ref.switch == sw:
            return [OutputTrunc(ref.port, a.max_len)]
        return self._tagged(sw, ("trunc", a.port, remote_max_len(actions, i, what, self.ports, in_clone, outer,
                                                                 outer_last)), deps)

    def _resubmit(self, sw: str, a: Resubmit, what: Rule | str) -> Resubmit:
        """A resubmit with another in_port V on switch ``sw``: the lookup with V's
        physical port finds there exactly the copies the virtual lookup finds (those of
        rules naming V, and the wildcard ones) when V is a port of ``sw``; a port of
        another switch has its rules' copies there only, and no port has no copy."""
        ref = self.in_ports.get(a.in_port)
        if ref is None or ref.switch != sw:
            where = "no port has that number" if ref is None else f"it is a port of {ref.switch}, not of {sw}"
            raise TranslationError(what, f"resubmit with in_port {RESERVED_PORT_NAMES.get(a.in_port, a.in_port)} from a "
                                   f"rule that runs on {sw}: {where}, so the copies of the rules naming it are not "
                                   "there (docs/oneswitch.md section 7)", (2, 5))
        return Resubmit(ref.port, a.table)

    def _actset_physical(self, sw: str, vport: int) -> int:
        """The physical output an action set on ``sw`` holds for written output ``vport``."""
        form = self._actset_forms.get((sw, vport))
        if form is None:
            form = self._actset_forms[sw, vport] = physical_form(self, sw, vport)
        return form

    def _port_on(self, sw: str, vport: int) -> int | None:
        """Virtual port ``vport``'s number on switch ``sw``; a number that is no virtual
        port's stays itself unless a virtual port of ``sw`` has it there (None)."""
        ref = self.in_ports.get(vport)
        if ref is not None:
            return ref.port if ref.switch == sw else None
        return None if any(r.switch == sw and r.port == vport for r in self.in_ports.values()) else vport

    def out_entry(self, sw: str, port: int, max_len: int, what: Rule | str, bare: bool) -> _OutEntry:
        """``_out_entry``, or with ``bare`` False its variant that restores the packet's
        mark after the PCIe outputs it contains (the same when it has none)."""
        if bare:
            return self._out_entry(sw, port, max_len, what)
        key = (sw, port, max_len)
        hit = self._saved_cache.get(key)
        if hit is None:
            acts, items, alone = self._out_entry(sw, port, max_len, what)
            if any(type(a) is SetField for a in acts):
                acts = (_SAVE_MARK, *acts, _RESTORE_MARK)
                alone = (_apply(acts),)
            hit = self._saved_cache[key] = (acts, items, alone)
        return hit

    def _out_entry(self, sw: str, port: int, max_len: int, what: Rule | str) -> _OutEntry:
        """Cached translation of one virtual output: (actions, shared items, the
        instructions of a rule whose only action is this output)."""
        key = (sw, port, max_len)
        hit = self._out_cache.get(key)
        if hit is None:
            items: list[Item] = []
            acts = tuple(self._out_uncached(sw, port, max_len, items, what))
            hit = self._out_cache[key] = (acts, tuple(items), (_apply(acts),))
            if port != OFPP_CONTROLLER:  # max_len only matters for CONTROLLER
                self._out_by_port[sw][port] = hit
        return hit

    def _out_uncached(self, sw: str, port: int, max_len: int, deps: list[Item], what: Rule | str) -> list[Action]:
        if port == OFPP_IN_PORT:
            return [Output(OFPP_IN_PORT)]
        if port == OFPP_CONTROLLER:
            return [Output(OFPP_CONTROLLER, max_len)]
        if port == OFPP_NORMAL:  # the host's MAC-learning switch (every pipeline runs there: extension.NORMAL)
            if sw == self.topo.host:
                return [Output(OFPP_NORMAL)]
            raise TranslationError(what, "output:NORMAL runs on the host switch only (while a rule outputs to "
                                   "NORMAL every port's pipeline runs there: docs/oneswitch.md section 6)", _BAD_OUT_PORT)
        if port in _FLOODS:
            acts: list[Action] = [_output(p) for p in self._flood_ports(sw)]
            for r in self.ingress:
                if r != sw:
                    acts += self._tagged(sw, ("switch", r), deps)
            return acts
        ref = self.ports.get(port)
        if ref is None:
            if port <= MAX_OFPORT:
                return []  # no port of the switch has this number: the output sends nothing
            raise self._bad_port(port, what)
        if ref.switch == sw:
            return [_output(ref.port)]
        return self._tagged(sw, ("port", port), deps)

    def _bad_port(self, port: int, what: Rule | str) -> TranslationError:
        if port in RESERVED_PORT_NAMES:
            name = RESERVED_PORT_NAMES[port]
            why = {"NORMAL": "NORMAL is one bridge's MAC-learning switch, which the physical switches cannot share "
                             "(docs/oneswitch.md section 7)"}
            return TranslationError(what, why.get(name, f"output to {name} is not a port"), _BAD_OUT_PORT)
        return TranslationError(what, f"output:{port:#x} is outside 0..{MAX_OFPORT:#x} and the reserved ports "
                                f"(virtual ports: {_ports(self.topo)})", _BAD_OUT_PORT)

    def _tagged(self, sw: str, dest: Dest, deps: list[Item]) -> list[Action]:
        """``set_field:<flow id>->pkt_mark, output:<PCIe port toward dest>``."""
        hit = self._tag_cache.get((sw, dest))
        if hit is None:
            tag = self.ids.tag(dest)
            _, link = self.topo.next_hop(sw, self._dest_switch(dest))
            hit = self._tag_cache[(sw, dest)] = ((_set_mark(tag), _output(link)), (("path", sw, dest),))
        deps += hit[1]
        return list(hit[0])

    # ------------------------------------------------------------ results
    def physical_rules(self, sw: str) -> list[Rule]:
        # by table, then priority descending; both sorts are stable, so ties keep insertion order
        by_priority = sorted(self.rules[sw].values(), key=_PRIORITY, reverse=True)
        return sorted(by_priority, key=_TABLE)

    def physical_groups(self, sw: str) -> list[Group]:
        return [self.groups[sw][g] for g in sorted(self.groups[sw])]


_PRIORITY = attrgetter("priority")
_TABLE = attrgetter("table")
_OutEntry = tuple  # see Compiler._out_entry
# Instructions after which nothing of the pipeline runs but the (in table 0: empty) action set.
_ENDS_HERE = frozenset({ApplyActions, MeterInstruction, WriteMetadata, ClearActions})
