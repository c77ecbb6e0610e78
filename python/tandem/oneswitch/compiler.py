"""The incremental translation engine behind ``translate`` and ``OneSwitchState``.

``Compiler`` holds, for one topology and flow-id allocation, the physical copies
of every virtual rule and the reference-counted shared items (dispatch,
delivery and transit rules, groups), and journals every change so callers can
diff (translate.py describes the scheme, docs/oneswitch.md argues it). Inputs:
virtual rules added or removed one at a time. State: the physical rules and
groups per switch. Cost: O(copies x actions) per rule.
"""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from typing import Iterable, Sequence

from tandem.rules.ir import (
    ClearActions, MeterInstruction, WriteMetadata, OFPP_ALL, OFPP_ANY, OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, RESERVED_PORT_NAMES, Action,
    ApplyActions, Bucket, GotoTable, Group, GroupAction, Instruction, Match, Output, Rule, SetField, WriteActions,
    _new_rule,
)

from .topology import Topology
from .ids import (
    DELIVERY_PRIORITY, DELIVERY_TABLE, DISPATCH_TABLE, INFRA_COOKIE, INTERNAL_GROUP_BASE, MAX_VIRTUAL_TABLE,
    TABLE_OFFSET, TAG_FIELD, Dest, FlowIds, PKey, TranslationError, VKey, pkey,
)

from .ir_intern import (
    _RESTORE_MARK, _SAVE_MARK, _apply, _copy_rule, _goto, _group_action, _match_of, _output, _ports, _replace_in_port,
    _set_mark, _write,
)
from .rule_analysis import _NO_FACTS, _analyze, _facts, _live, mark_read_after, pin_in_port, reads_in_port

Item = tuple  # ("rule", switch, pkey) | ("group", switch, gid)


class Compiler:
    """Incremental translation state: physical copies of each virtual rule plus
    reference-counted shared items (dispatch, delivery, transit rules, groups).
    ``journal`` records the old value of every physical item touched since the
    last ``take_journal`` so callers can diff."""

    def __init__(self, topo: Topology, ids: FlowIds | None = None, groups: Iterable[Group] = ()) -> None:
        self.topo = topo
        self.ids = ids if ids is not None else FlowIds.for_topology(topo)
        self.vgroups: dict[int, Group] = {}
        self.track = True  # record old values for take_journal (batch translate turns it off)
        self._tag_cache: dict[tuple, tuple[tuple[Action, ...], tuple[Item, ...]]] = {}
        self._out_cache: dict[tuple, _OutEntry] = {}
        self._saved_cache: dict[tuple, _OutEntry] = {}  # the same, the packet's mark restored after a PCIe output
        self._out_by_port: dict[str, dict[int, _OutEntry]] = {sw: {} for sw in topo.switch_names}  # not CONTROLLER
        self._tag_dest: dict[int, Dest] = {}  # tag -> destination, for tags handed out by _delivery_item
        self._hops: dict[tuple[str, str], tuple[list[Item], str]] = {}  # (src, dst switch) -> see _path_items
        self._catch_all = {sw: ("rule", sw, _CATCH_ALL) for sw in topo.switch_names}
        self.copies_on: dict[str, int] = {sw: 0 for sw in topo.switch_names}  # switch -> rule copies on it
        for g in groups:
            if g.group_id >= INTERNAL_GROUP_BASE:
                raise TranslationError(f"group {g.group_id:#x}", f"group ids >= {INTERNAL_GROUP_BASE:#x} are reserved for OneSwitch")
            self.vgroups[g.group_id] = g
        for g in self.vgroups.values():
            for b in g.buckets:
                if reads_in_port(b.actions):
                    pin_in_port(b.actions, None, f"group {g.group_id}")  # (refuses: a group does not know the port)
        for sw in topo.ingress_switches:  # reject bad groups now, not halfway through an add
            for gid in self.vgroups:
                self._build_group(sw, gid)
        self.copies: dict[VKey, list[tuple[str, Rule]]] = {}
        self.needs: dict[VKey, list[Item]] = {}
        self.vrules: dict[VKey, Rule] = {}
        self.rules: dict[str, dict[PKey, Rule]] = {s: {} for s in topo.switch_names}
        self.groups: dict[str, dict[int, Group]] = {s: {} for s in topo.switch_names}
        self.refs: dict[Item, int] = {}
        self.shared: dict[Item, object] = {}
        self.shared_deps: dict[Item, list[Item]] = {}
        self.journal: dict[Item, object] = {}
        # pipeline facts (see _facts): name -> table -> number of rules
        self.pipeline: dict[str, Counter] = {k: Counter() for k in ("wgroup", "wout")}

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
        info = _analyze(rule)
        copies, needs = self._translate_rule(rule, info)
        facts = info[1]
        replacing = self.vrules.get(key)
        if facts:
            self._check_pipeline(rule, facts, replacing)
        if replacing is not None:
            self.remove(key)
        track, rules, copies_on, refs, journal = self.track, self.rules, self.copies_on, self.refs, self.journal
        if copies:
            p = copies[0][1]
            pk = (p.table, p.priority, p.match)  # = pkey of every copy: they share one match object
        for sw, prule in copies:
            table = rules[sw]
            if track:  # = self._set(("rule", sw, pk), prule)
                item = ("rule", sw, pk)
                if item not in journal:
                    journal[item] = table.get(pk)
            table[pk] = prule
            n = copies_on[sw] = copies_on[sw] + 1
            if n == 1:  # the first copy on a switch needs the dispatch catch-all
                self._acquire(self._catch_all[sw])
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
        if facts:
            self._count(facts, +1)

    def add_single_copy(self, rule: Rule, sw: str, prule: Rule, needs: tuple[Item, ...]) -> VKey | None:
        """The bookkeeping of ``add(rule)`` for a rule whose translation is known to be
        the one copy ``prule`` on ``sw`` needing the shared ``needs`` (fastlane.py), when
        that add changes exactly one physical item: no rule with ``rule``'s key or
        ``prule``'s key exists, every shared item it needs is already installed, no
        pipeline fact, nothing journaled. Returns None, changing nothing, otherwise
        (the caller then takes the general path), else the rule's key. The physical
        change is then ("rule", sw, pkey(prule)): None -> prule, and nothing is journaled."""
        refs = self.refs
        if self.journal:
            return None
        for item in needs:
            if not refs.get(item):
                return None
        n = self.copies_on[sw]
        if n == 0 and not refs.get(self._catch_all[sw]):
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
        self.copies_on[sw] = n + 1
        if n == 0:
            refs[self._catch_all[sw]] += 1  # = _acquire of an item already built
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
        for sw, prule in self.copies.pop(key):
            self._set(("rule", sw, pkey(prule)), None)
            n = self.copies_on[sw] = self.copies_on[sw] - 1
            if n == 0:
                self._release(self._catch_all[sw])
        for item in self.needs.pop(key, ()):
            self._release(item)
        self._count(_facts(rule), -1)
        return rule

    def _count(self, facts: dict[str, int], delta: int) -> None:
        pipeline = self.pipeline
        for name, table in facts.items():
            pipeline[name][table] += delta

    def _check_pipeline(self, rule: Rule, facts: dict[str, int], replacing: Rule | None) -> None:
        """Reject a pipeline where a written group is followed (later table) by a
        written output: OpenFlow runs the group and ignores the output, but outputs
        become internal groups here and the later one would win. The tables
        already installed satisfy this (every add is checked and removals only
        shrink the sets), so only a check involving the new rule's facts can fail."""
        if not facts:
            return  # nothing added to the pipeline-wide facts
        old = _facts(replacing) if replacing is not None else _NO_FACTS
        pipe = self.pipeline
        if ("wgroup" in facts or "wout" in facts) and (pipe["wgroup"] or "wgroup" in facts) \
                and (pipe["wout"] or "wout" in facts):
            g, o = _live(pipe, "wgroup", facts, old), _live(pipe, "wout", facts, old)
            if g and o and min(g) <= max(o):
                raise TranslationError(rule, f"a rule writes a group and continues at table {min(g)}, and a rule in "
                                       f"table {max(o)} writes an output: OpenFlow would run the group and ignore the "
                                       "output, which this translation cannot express")

    # ------------------------------------------------------------ shared items
    def _acquire(self, item: Item) -> None:
        n = self.refs[item] = self.refs.get(item, 0) + 1
        if n == 1:
            if item[0] == "path":  # a bundle: the rules that carry tagged frames src -> dest
                value, deps = None, self._path_items(item[1], item[2])
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
        table, prio, match = key
        if table == DISPATCH_TABLE:
            goto = DELIVERY_TABLE if prio == 1 else TABLE_OFFSET
            return _new_rule(match, (GotoTable(goto),), 0, prio, INFRA_COOKIE, 0, 0), []
        # delivery table: key match is the tag; find the destination
        return self._delivery_rule(sw, match)

    def _delivery_rule(self, sw: str, match: Match) -> tuple[Rule, list[Item]]:
        tag = match.get(TAG_FIELD).value
        dest = self._tag_dest.get(tag)
        if dest is None:
            dest = next(d for d, t in self.ids.tags.items() if t == tag and d[0] != "retired")
        dst_sw = self._dest_switch(dest)
        deps: list[Item] = []
        if dst_sw == sw:
            if dest[0] == "port":
                actions: tuple[Action, ...] = (_output(self.topo.port_map[dest[1]].port),)
            else:
                actions = tuple([_output(self.topo.port_map[v].port) for v in self.topo.local_vports(sw)])
        else:
            nxt, port = self.topo.next_hop(sw, dst_sw)
            actions = (_output(port),)
            deps.append(self._delivery_item(nxt, dest))
        rule = _new_rule(match, (_apply(actions),), DELIVERY_TABLE, DELIVERY_PRIORITY, INFRA_COOKIE, 0, 0)
        return rule, deps

    def _dest_switch(self, dest: Dest) -> str:
        return self.topo.port_map[dest[1]].switch if dest[0] == "port" else dest[1]

    def _delivery_item(self, sw: str, dest: Dest) -> Item:
        """The delivery (or transit) rule on ``sw`` for ``dest``."""
        tag = self.ids.tag(dest)
        self._tag_dest[tag] = dest  # a compiler's tags never change (retagging builds a new compiler)
        return ("rule", sw, (DELIVERY_TABLE, DELIVERY_PRIORITY, _match_of(TAG_FIELD, tag)))

    def _path_items(self, src: str, dest: Dest) -> list[Item]:
        """Items needed for ``src`` to send tagged frames toward ``dest``."""
        dst_sw = self._dest_switch(dest)
        hops = self._hops.get((src, dst_sw))
        if hops is None:  # the dispatch rules along the path and the first hop: per switch pair
            dispatch = []
            prev = src
            for sw in self.topo.path(src, dst_sw)[1:]:
                # arrival port on sw of the link from prev
                _, out_port = self.topo.next_hop(prev, sw)
                arrive = self._far_end(prev, out_port)
                dispatch.append(("rule", sw, (DISPATCH_TABLE, 1, _match_of("in_port", arrive))))
                prev = sw
            hops = self._hops[(src, dst_sw)] = (dispatch, self.topo.next_hop(src, dst_sw)[0])
        return [*hops[0], self._delivery_item(hops[1], dest)]

    def _far_end(self, sw: str, port: int) -> int:
        for l in self.topo.links:
            mine, far = l.end_on(sw)
            if mine.switch == sw and mine.port == port:
                return far.port
        raise KeyError((sw, port))

    # ------------------------------------------------------------ groups
    def _build_group(self, sw: str, gid: int) -> tuple[Group, list[Item]]:
        deps: list[Item] = []
        if gid >= INTERNAL_GROUP_BASE:
            key = next(k for k, v in self.ids.groups.items() if v == gid)
            if key[0] == "split":  # ("split", virtual gid, bucket index): one bucket's outputs
                vb = self.vgroups[key[1]].buckets[key[2]]
                segs = self._bucket_segments(sw, vb.actions, deps, f"group {key[1]}")
                return Group(gid, "all", tuple(Bucket(seg) for seg in segs)), deps
            what = key[1:]  # ("out", ...): a written output
            if what[0] == "flood":
                buckets = []
                for v in self.topo.local_vports(sw):
                    buckets.append(Bucket((Output(self.topo.port_map[v].port),)))
                for r in self.topo.ingress_switches:
                    if r != sw:
                        buckets.append(Bucket(tuple(self._tagged(sw, ("switch", r), deps))))
                return Group(gid, "all", tuple(buckets)), deps
            if what[0] == "port":
                acts = self._out(sw, what[1], 0xFFFF, deps, "write_actions")
            else:  # ("reserved", port, max_len)
                acts = [Output(what[1], what[2])]
            return Group(gid, "indirect", (Bucket(tuple(acts)),)), deps
        vg = self.vgroups[gid]
        what = f"group {gid}"
        buckets = []
        for i, b in enumerate(vg.buckets):
            watch = b.watch_port
            if watch != OFPP_ANY and watch < 0xFFFFFF00:
                ref = self.topo.port_map.get(watch)
                if ref is None or ref.switch != sw:
                    raise TranslationError(what, f"watch_port {watch} is not a virtual port on every ingress switch")
                watch = ref.port
            segments = self._bucket_segments(sw, b.actions, deps, what)
            if len(segments) <= 1 or vg.type == "all":
                buckets += [Bucket(seg, b.weight, watch) for seg in segments or [()]]
            else:
                split = self.ids.group(("split", gid, i))
                deps.append(("group", sw, split))
                buckets.append(Bucket((GroupAction(split),), b.weight, watch))
        return Group(gid, vg.type, tuple(buckets)), deps

    def _bucket_segments(self, sw: str, actions: Sequence[Action], deps: list[Item], what: str) -> list[tuple[Action, ...]]:
        """A bucket's actions as one action list per output, each with the changes made
        before that output and ending at it (an all-group of these lists is
        equivalent). Kept from the VLAN-tag scheme, under which Open vSwitch
        mishandled a pop followed by more actions in a bucket; it also keeps
        every translated bucket free of flow-id marks set for an earlier output."""
        segments: list[tuple[Action, ...]] = []
        prefix: list[Action] = []
        for a in actions:
            if isinstance(a, (Output, GroupAction)):  # (a bucket runs on a copy: its mark is not seen after)
                segments.append(tuple(self._actions(sw, [*prefix, a], deps, what, True)))
            else:
                prefix.append(a)
        return segments

    # ------------------------------------------------------------ one rule
    def _translate_rule(self, rule: Rule, info: tuple | None = None) -> tuple[list[tuple[str, Rule]], list[Item]]:
        what = rule  # formatted only if an error is raised
        if rule.table > MAX_VIRTUAL_TABLE:
            raise TranslationError(what, f"table {rule.table} > {MAX_VIRTUAL_TABLE} (physical tables {MAX_VIRTUAL_TABLE + 2}.. are OneSwitch's)")
        goto, _, inm, sends, plain, single_out, reads = _analyze(rule) if info is None else info
        if goto is not None and goto > MAX_VIRTUAL_TABLE:
            raise TranslationError(what, f"goto_table:{goto} > {MAX_VIRTUAL_TABLE}")
        instructions = self._pinned(rule, inm) if reads else rule.instructions
        if inm is not None:
            ref = self.topo.port_map.get(inm.value)
            if ref is None:
                raise TranslationError(what, f"in_port={inm.value} is not a virtual port (known: {_ports(self.topo)})")
            targets: Sequence[str] = (ref.switch,)
            # the copy matches the physical in_port (same match object if the numbers agree)
            match = rule.match if ref.port == inm.value and inm.mask is None else _replace_in_port(rule.match, ref.port)
        else:
            targets = self.topo.ingress_switches
            match = rule.match
        copies: list[tuple[str, Rule]] = []
        needs: list[Item] = []
        # A PCIe output sets the flow id in the packet mark; the packet's own mark is saved
        # and restored around it unless nothing can see it after: no later action of the
        # list reads it and the rule is in table 0 (whose action set is empty) and goes
        # nowhere else (``ends``).
        ends = rule.table == 0 and ((len(instructions) == 1 and type(instructions[0]) is ApplyActions)
                                    or all(type(i) in _ENDS_HERE for i in instructions))
        if not sends:  # nothing switch-specific: translate once, share the instructions
            ins = tuple([self._instruction(targets[0], i, needs, what, ends) for i in instructions])
            return [(sw, _copy_rule(rule, match, ins)) for sw in targets], needs
        table, priority, cookie = rule.table + TABLE_OFFSET, rule.priority, rule.cookie
        idle, hard = rule.idle_timeout, rule.hard_timeout
        if len(instructions) == 1 and type(instructions[0]) is ApplyActions:  # the common shape
            actions = instructions[0].actions
            if single_out >= 0 and instructions is rule.instructions:  # one output, no group: only it changes
                a = actions[single_out]
                head, tail = actions[:single_out], actions[single_out + 1:]
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
            ins = tuple([self._instruction(sw, i, needs, what, ends) for i in instructions])
            copies.append((sw, _new_rule(match, ins, table, priority, cookie, idle, hard)))
        return copies, needs

    def _pinned(self, rule: Rule, inm) -> tuple[Instruction, ...]:
        """The rule's instructions with its reads of in_port replaced (``pin_in_port``)."""
        vport = inm.value if inm is not None and inm.mask is None else None
        return tuple([type(i)(pin_in_port(i.actions, vport, rule)) if type(i) in (ApplyActions, WriteActions) else i
                      for i in rule.instructions])

    def _instruction(self, sw: str, ins: Instruction, deps: list[Item], what: Rule | str, ends: bool) -> Instruction:
        t = type(ins)
        if t is GotoTable:
            return _goto(ins.table)
        if t is ApplyActions:
            return _apply(tuple(self._actions(sw, ins.actions, deps, what, ends)))
        if t is WriteActions:
            has_group = any(type(a) is GroupAction for a in ins.actions)
            out: list[Action] = []
            for a in ins.actions:
                if isinstance(a, Output):
                    if has_group:
                        continue  # OpenFlow: a written group wins over a written output
                    gid = self.ids.group(self._write_out_key(a, what))
                    deps.append(("group", sw, gid))
                    out.append(_group_action(gid))
                elif isinstance(a, GroupAction):
                    out.append(self._group_ref(sw, a, deps, what))
                else:
                    out.append(a)
            return _write(tuple(out))
        return ins

    def _write_out_key(self, a: Output, what: str) -> tuple:
        if a.port in (OFPP_FLOOD, OFPP_ALL):
            return ("out", "flood")
        if a.port in (OFPP_IN_PORT, OFPP_CONTROLLER):
            return ("out", "reserved", a.port, a.max_len if a.port == OFPP_CONTROLLER else 0xFFFF)
        if a.port not in self.topo.port_map:
            raise self._bad_port(a.port, what)
        return ("out", "port", a.port)

    def _group_ref(self, sw: str, a: GroupAction, deps: list[Item], what: str) -> GroupAction:
        if a.group_id not in self.vgroups:
            raise TranslationError(what, f"group:{a.group_id} refers to a group that does not exist")
        deps.append(("group", sw, a.group_id))
        return a

    def _actions(self, sw: str, actions: Sequence[Action], deps: list[Item], what: Rule | str,
                 ends: bool) -> list[Action]:
        """Translate an action list: only outputs change (a local output becomes the
        physical port, a remote one sets the flow-id mark and outputs to the PCIe
        port, saving and restoring the packet's own mark around it unless the list
        ``ends`` the pipeline and no later action reads the mark); group actions are
        checked. The mark is packet metadata, not bytes, so VLAN pushes and pops of
        the rule need no special handling."""
        out: list[Action] = []
        by_port = self._out_by_port[sw]
        read_after = mark_read_after(actions) if ends else None
        for i, a in enumerate(actions):
            t = type(a)
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
            else:
                out.append(a)
        return out

    def _bad_port(self, port: int, what: str) -> TranslationError:
        if port in RESERVED_PORT_NAMES:
            return TranslationError(what, f"output to reserved port {RESERVED_PORT_NAMES[port]} has no meaning on the virtual switch")
        return TranslationError(what, f"output:{port} is not a virtual port (known: {_ports(self.topo)})")

    def _out(self, sw: str, port: int, max_len: int, deps: list[Item], what: str) -> list[Action]:
        e = self._out_entry(sw, port, max_len, what)
        deps += e[1]
        return list(e[0])

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

    def _out_uncached(self, sw: str, port: int, max_len: int, deps: list[Item], what: str) -> list[Action]:
        if port == OFPP_IN_PORT:
            return [Output(OFPP_IN_PORT)]
        if port == OFPP_CONTROLLER:
            return [Output(OFPP_CONTROLLER, max_len)]
        if port in (OFPP_FLOOD, OFPP_ALL):
            acts: list[Action] = [_output(self.topo.port_map[v].port) for v in self.topo.local_vports(sw)]
            for r in self.topo.ingress_switches:
                if r != sw:
                    acts += self._tagged(sw, ("switch", r), deps)
            return acts
        ref = self.topo.port_map.get(port)
        if ref is None:
            raise self._bad_port(port, what)
        if ref.switch == sw:
            return [_output(ref.port)]
        return self._tagged(sw, ("port", port), deps)

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
_CATCH_ALL = (DISPATCH_TABLE, 0, Match())
_OutEntry = tuple  # see Compiler._out_entry
# Instructions after which nothing of the pipeline runs but the (in table 0: empty) action set.
_ENDS_HERE = frozenset({ApplyActions, MeterInstruction, WriteMetadata, ClearActions})
