"""Rule IR -> the plain tuples ``tandem._dp.Pipeline`` takes.

The Rust pipeline knows nothing of Python classes: a match field crosses as
``(name | (offset, length), value, mask | None)``, an action as a short tuple
(``("output", port, max_len)``, ``("set_field", field, value)`` ...), a rule as
the argument list of ``Pipeline.flow_mod``. Pure functions, no state.
"""

from __future__ import annotations

from typing import Any

from tandem.rules.ir import (
    MeterInstruction, Action, ApplyActions, ClearActions, DecTtl, FieldKey, FlowMod, GotoTable, Group, GroupAction, Match, Output,
    PofAddField, PofDelField, PofField, PopVlan, PushVlan, Rule, SetField, WriteActions, WriteMetadata,
    DecMplsTtl, PopMpls, PushMpls, SetMplsTtl, SetNwTtl, SetQueue, Exit, Conjunction, MoveField, Note, StackPop, StackPush, Subfield,
    PopQueue, Sample, Clone, OutputTrunc,
    Controller as NxController, CheckPktLarger, Resubmit, OutputReg, Ct, CtClear, Learn, FieldMatch,
)
from tandem.rules.ir import BUNDLE_ALGORITHMS, HASH_FIELDS, MULTIPATH_ALGORITHMS, Bundle, Multipath
from tandem.rules.ir import FinTimeout
from tandem.rules.meters import Meter
from tandem.rules.ir import DecNshTtl
from tandem.rules.ir import EncapEthernet, EncapNsh
from tandem.rules.ir import Decap
from tandem.rules.ir import DeleteField
from tandem.rules.ir import ct_alg_port  # (ct alg)
from tandem.dataplane.tun_wide import wide_set_args


def field_arg(key: FieldKey) -> str | tuple[int, int]:
    return (key.offset, key.length) if isinstance(key, PofField) else key


def match_args(match: Match) -> list[tuple[Any, int, int | None]]:
    return [(field_arg(k), fm.value, fm.mask) for k, fm in match]


def _subfield(sf: Subfield) -> tuple[str, int, int]:
    return (sf.field, sf.ofs, sf.n_bits)


def _folded(sets: tuple, field: str) -> tuple[int, int] | None:
    """A ct exec list's set_fields of ``field`` as one (value, mask), in order."""
    value = mask = 0
    full = (1 << 32) - 1 if field == "ct_mark" else (1 << 128) - 1
    for f, v, m in sets:
        if f == field:
            m = full if m is None else m
            value, mask = (value & ~m) | (v & m), mask | m
    return (value, mask) if mask else None


def _nat_args(n):
    """A ct's nat for dp-core: None or (kind 0/1/2, (first, last address) or None, (first, last port) or None)."""
    if n is None:
        return None
    addrs = (n.addr_min, n.addr_max if n.addr_max is not None else n.addr_min) if n.addr_min is not None else None
    ports = (n.port_min, n.port_max if n.port_max is not None else n.port_min) if n.port_min is not None else None
    return ({None: 0, "src": 1, "dst": 2}[n.kind], addrs, ports)


def action_args(a: Action) -> tuple:
    if isinstance(a, Output):
        return ("output", a.port, a.max_len)
    if isinstance(a, PushVlan):
        return ("push_vlan", a.ethertype)
    if isinstance(a, PopVlan):
        return ("pop_vlan",)
    if isinstance(a, SetField):
        if (wide := wide_set_args(a)) is not None:  # (tun_metadata bits past 127)
            return wide
        if a.mask is not None:
            return ("set_masked", field_arg(a.field), a.value, a.mask)
        return ("set_field", field_arg(a.field), a.value)
    if isinstance(a, DecTtl):
        return ("dec_ttl",) if a.ids is None else ("dec_ttl", a.ids)
    if isinstance(a, GroupAction):
        return ("group", a.group_id)
    if isinstance(a, PofAddField):
        return ("pof_add", a.offset, a.length, a.value)
    if isinstance(a, PofDelField):
        return ("pof_del", a.offset, a.length)
    if isinstance(a, PushMpls):
        return ("push_mpls", a.ethertype)
    if isinstance(a, PopMpls):
        return ("pop_mpls", a.ethertype)
    if isinstance(a, SetMplsTtl):
        return ("set_mpls_ttl", a.ttl)
    if isinstance(a, DecMplsTtl):
        return ("dec_mpls_ttl",)
    if isinstance(a, SetNwTtl):
        return ("set_nw_ttl", a.ttl)
    if isinstance(a, SetQueue):
        return ("set_queue", a.queue_id)
    if isinstance(a, MoveField):
        return ("move", _subfield(a.src), _subfield(a.dst))
    if isinstance(a, StackPush):
        return ("push", _subfield(a.src))
    if isinstance(a, StackPop):
        return ("pop", _subfield(a.dst))
    if isinstance(a, (Note, PopQueue, Sample)):
        # no-ops in dp-core: pop_queue (its ports have one queue, as for set_queue) and
        # sample (no IPFIX collector is configured, so Open vSwitch's does nothing either)
        return ("note",)
    if isinstance(a, Exit):
        return ("exit",)
    if isinstance(a, DecNshTtl):
        return ("dec_nsh_ttl",)
    if isinstance(a, EncapNsh):  # (MD type 1: rules/encap.py)
        return ("encap_nsh",)
    if isinstance(a, EncapEthernet):
        return ("encap_ethernet",)
    if isinstance(a, Decap):  # (the pair decap(),decap(): rules/decap.py)
        return ("decap",)
    if isinstance(a, NxController):
        return ("controller", a.max_len, a.controller_id, a.reason, a.userdata, a.meter_id)
    if isinstance(a, CheckPktLarger):
        return ("check_pkt_larger", a.pkt_len, _subfield(a.dst))
    if isinstance(a, Clone):
        return ("clone", [action_args(x) for x in a.actions])
    if isinstance(a, OutputTrunc):
        return ("output_trunc", a.port, a.max_len)
    if isinstance(a, Conjunction):
        return ("conjunction", a.id, a.k, a.n)
    if isinstance(a, Resubmit):
        return ("resubmit", a.in_port, a.table)
    if isinstance(a, OutputReg):
        return ("output_reg", _subfield(a.src), a.max_len)
    if isinstance(a, CtClear):
        return ("ct_clear",)
    if isinstance(a, Ct):
        return ("ct", a.commit, a.force, a.zone, _subfield(a.zone_src) if a.zone_src is not None else None, a.table,
                _folded(a.exec, "ct_mark"), _folded(a.exec, "ct_label"), _nat_args(a.nat)) + ((ct_alg_port(a.alg),) if a.alg else ())
    if isinstance(a, Learn):
        return _learn_args(a)
    if isinstance(a, FinTimeout):
        return ("fin_timeout", a.idle_timeout, a.hard_timeout)
    if isinstance(a, DeleteField):
        return ("delete_field", a.field)
    if isinstance(a, Multipath):
        return ("multipath", HASH_FIELDS.index(a.fields), a.basis, MULTIPATH_ALGORITHMS.index(a.algorithm), a.n_links,
                a.arg, _subfield(a.dst))
    if isinstance(a, Bundle):
        return ("bundle", HASH_FIELDS.index(a.fields), a.basis, a.algorithm == BUNDLE_ALGORITHMS[1], list(a.members),
                _subfield(a.dst) if a.dst is not None else None)
    raise TypeError(f"not a rule IR action: {a!r}")


def _learn_args(a: Learn) -> tuple:
    specs = [(s.kind, s.src and _subfield(s.src), s.value, s.dst and _subfield(s.dst), s.n_bits) for s in a.specs]
    return ("learn", specs, a.table, a.priority, a.idle_timeout, a.hard_timeout, a.cookie, a.send_flow_rem,
            a.delete_learned, a.limit, a.result_dst and _subfield(a.result_dst), a.fin_idle_timeout, a.fin_hard_timeout)


def learned_rule(t: tuple) -> tuple[Rule, int, int]:
    """One of ``Pipeline.learned_flows()``'s tuples -> (the learned flow as a Rule, packets, bytes)."""
    table, priority, cookie, idle, hard, _flow_rem, matches, actions, packets, nbytes = t
    acts = tuple(Output(a[1], a[2]) if a[0] == "output" else FinTimeout(a[1], a[2]) if a[0] == "fin_timeout"
                 else SetField(a[1], a[2], a[3]) for a in actions)
    rule = Rule(Match(tuple((n, FieldMatch(v, m)) for n, v, m in matches)), (ApplyActions(acts),),
                table, priority, cookie, idle, hard)
    return rule, packets, nbytes


def removed_rule(t: tuple) -> tuple[Rule, str, int, int, int, int]:
    """One of ``Pipeline.take_removed()``'s tuples -> (rule, reason, duration_ns, packets, bytes,
    rule id); the rule carries match, priority, cookie and timeouts (FLOW_REMOVED has no actions)."""
    table, priority, cookie, reason, duration_ns, idle, hard, packets, nbytes, matches, rule_id = t
    rule = Rule(Match(tuple((n, FieldMatch(v, m)) for n, v, m in matches)), (), table, priority, cookie, idle, hard)
    return rule, reason, duration_ns, packets, nbytes, rule_id


def rule_args(rule: Rule) -> dict[str, Any]:
    """The ``Pipeline.flow_mod`` argument dict for ``rule``, without ``command`` (and without
    ``send_flow_rem``, a flag of the FLOW_MOD, not of the rule)."""
    apply: list[tuple] = []
    write: list[tuple] = []
    clear = False
    metadata = None
    goto = None
    meter = None
    for ins in rule.instructions:
        if isinstance(ins, MeterInstruction):
            meter = ins.meter_id
        elif isinstance(ins, ApplyActions):
            apply = [action_args(a) for a in ins.actions]
        elif isinstance(ins, ClearActions):
            clear = True
        elif isinstance(ins, WriteActions):
            write = [action_args(a) for a in ins.actions]
        elif isinstance(ins, WriteMetadata):
            metadata = (ins.value, ins.mask)
        elif isinstance(ins, GotoTable):
            goto = ins.table
    return dict(table=rule.table, priority=rule.priority, cookie=rule.cookie, matches=match_args(rule.match),
                apply=apply, clear=clear, write=write, write_metadata=metadata, goto=goto, meter=meter,
                idle_timeout=rule.idle_timeout, hard_timeout=rule.hard_timeout)


def flow_mod_args(fm: FlowMod) -> dict[str, Any]:
    args = rule_args(fm.rule)
    args.update(command=fm.command, out_port=fm.out_port, out_group=fm.out_group, all_tables=fm.all_tables)
    return args


def meter_args(m: Meter) -> dict[str, Any]:
    """``Pipeline.meter_mod`` keyword arguments (all but ``command``) for ``m``."""
    return dict(id=m.meter_id, pktps=m.pktps, burst=m.burst, stats=m.stats,
                bands=[(b.type, b.rate, b.burst_size, b.prec_level) for b in m.bands])


def group_args(g: Group) -> tuple[int, str, list[tuple[list[tuple], int, int, int]]]:
    return g.group_id, g.type, [([action_args(a) for a in b.actions], b.weight, b.watch_port, b.watch_group)
                                for b in g.buckets]
