"""Virtual view for the OpenFlow endpoint: ports, multipart replies, overlap checks.

Pure-ish helpers used by ``endpoint.py`` to answer MULTIPART requests in
virtual terms. A virtual rule's packet/byte counters are the sum over its
*ingress-side* physical rules (``state.ingress_rules``), so a packet that
crosses a PCIe link is counted once, not once per switch it visits. Port
statistics and descriptions are those of the physical port a virtual port
maps onto. Inputs: the OneSwitch state, the topology, physical stats fetched
by the caller. State: none. Cost: linear in rules x ingress rules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from tandem.backends.base import FlowStats, PortInfo, PortStats, TableStats
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import Match, Rule
from tandem.rules.matching import covers
from tandem import __version__

Key = tuple[int, int, Match]


def rule_key(r: Rule) -> Key:
    return (r.table, r.priority, r.match)


def outputs_to(r: Rule, port: int) -> bool:
    return port == ir.OFPP_ANY or port in r.outputs()


def groups_of(r: Rule) -> set[int]:
    out = set()
    for ins in r.instructions:
        if isinstance(ins, (ir.ApplyActions, ir.WriteActions)):
            out |= {a.group_id for a in ins.actions if isinstance(a, ir.GroupAction)}
    return out


def virtual_table_counts(virtual_table: "Callable[[int], int | None] | None",
                         phys: Mapping[str, Iterable[TableStats]], not_virtual: int = 0) -> dict[int, tuple[int, int]]:
    """Virtual table -> (lookups, matched): the sum over every switch of the
    physical table that implements it (``virtual_table`` maps a physical table
    to its virtual one, None for a table that implements none; without it tables
    map one to one), less ``not_virtual`` lookups of table 0 (``crossings``). A
    packet runs the virtual tables only on its ingress switch; after a PCIe hop
    it meets only a delivery or transit rule, which ``crossings`` counts, so it
    is never counted twice. Misses count as lookups, not as matches."""
    out: dict[int, list[int]] = {}
    for stats in phys.values():
        for ts in stats:
            v = virtual_table(ts.table_id) if virtual_table is not None else ts.table_id
            if v is None:
                continue
            acc = out.setdefault(v, [0, 0])
            acc[0] += ts.lookup_count
            acc[1] += ts.matched_count
    if not_virtual and 0 in out:
        out[0][0] -= not_virtual
        out[0][1] -= not_virtual
    return {v: (max(lk, 0), max(m, 0)) for v, (lk, m) in out.items()}


def crossings(state: object, flows: Mapping[str, Iterable[FlowStats]]) -> int:
    """Packets the physical tables 0 matched with a rule that is no virtual rule's
    copy: frames that arrived over PCIe or an extension pair and met a delivery,
    transit or wire rule (they share table 0 with virtual table 0)."""
    copies = {(sw, rule_key(pr)) for vr in state.virtual_rules() for sw, pr in state.ingress_rules(vr)}  # type: ignore[attr-defined]
    return sum(fs.packet_count for sw, stats in flows.items() for fs in stats
               if fs.rule.table == 0 and (sw, rule_key(fs.rule)) not in copies)


def select_rules(rules: Iterable[Rule], req: S.FlowStatsRequest) -> list[Rule]:
    out = []
    for r in rules:
        if req.table_id != ir.OFPTT_ALL and r.table != req.table_id:
            continue
        if req.cookie_mask and (r.cookie & req.cookie_mask) != (req.cookie & req.cookie_mask):
            continue
        if not outputs_to(r, req.out_port):
            continue
        if req.out_group != 0xFFFFFFFF and req.out_group not in groups_of(r):
            continue
        if not covers(req.match, r.match):
            continue
        out.append(r)
    return out


def virtual_counters(state: object, vrules: list[Rule], phys: Mapping[str, list[FlowStats]]) -> dict[Key, tuple[int, int]]:
    """(packets, bytes) per virtual rule, from its ingress-side physical rules."""
    index: dict[tuple[str, Key], tuple[int, int]] = {}
    for sw, stats in phys.items():
        for fs in stats:
            k = (sw, rule_key(fs.rule))
            p, b = index.get(k, (0, 0))
            index[k] = (p + fs.packet_count, b + fs.byte_count)
    out: dict[Key, tuple[int, int]] = {}
    for vr in vrules:
        p = b = 0
        for sw, pr in state.ingress_rules(vr):  # type: ignore[attr-defined]
            cp, cb = index.get((sw, rule_key(pr)), (0, 0))
            p, b = p + cp, b + cb
        out[rule_key(vr)] = (p, b)
    return out


@dataclass(frozen=True)
class VirtualPort:
    vport: int
    switch: str
    port: int
    name: str


def virtual_ports(topo: object) -> dict[int, VirtualPort]:
    return {v: VirtualPort(v, ref.switch, ref.port, f"v{v}") for v, ref in sorted(topo.port_map.items())}  # type: ignore[attr-defined]


def wire_port(vp: VirtualPort, info: PortInfo | None) -> W.WirePort:
    hw = info.hw_addr if info and info.hw_addr else 0x02_7A_4D_00_00_00 + vp.vport
    state = 0 if info is None or info.link_up else W.OFPPS_LINK_DOWN
    config = 0 if info is None or info.admin_up else W.OFPPC_PORT_DOWN
    speed = info.curr_speed_kbps if info else 10_000_000
    return W.WirePort(vp.vport, vp.name, hw, config, state, curr_speed=speed, max_speed=speed)


def port_stats_entry(vp: VirtualPort, ps: PortStats | None) -> S.PortStatsEntry:
    if ps is None:
        return S.PortStatsEntry(vp.vport)
    return dataclasses.replace(ps, port_no=vp.vport)


DESC = dict(mfr="Tandem project", hw="OneSwitch: host switch + sNIC switches as one OpenFlow 1.3 switch",
            sw=f"tandem {__version__}", serial="oneswitch-0")

MATCH_FIELDS = sorted(ir.FIELDS)
MASKABLE = sorted(f for f, spec in ir.FIELDS.items() if spec.maskable)
SET_FIELDS = sorted(f for f, spec in ir.FIELDS.items() if spec.settable)
INSTRUCTIONS = [W.OFPIT_GOTO_TABLE, W.OFPIT_WRITE_METADATA, W.OFPIT_WRITE_ACTIONS, W.OFPIT_APPLY_ACTIONS, W.OFPIT_CLEAR_ACTIONS]
ACTIONS = [W.OFPAT_OUTPUT, W.OFPAT_PUSH_VLAN, W.OFPAT_POP_VLAN, W.OFPAT_GROUP, W.OFPAT_DEC_NW_TTL, W.OFPAT_SET_FIELD,
           W.OFPAT_SET_MPLS_TTL, W.OFPAT_DEC_MPLS_TTL, W.OFPAT_PUSH_MPLS, W.OFPAT_POP_MPLS, W.OFPAT_SET_QUEUE,
           W.OFPAT_SET_NW_TTL]


def table_features(n_tables: int, max_entries: int = 1_000_000) -> list[bytes]:
    return [S.encode_table_features(t, f"table{t}", max_entries, n_tables, MATCH_FIELDS, MASKABLE, SET_FIELDS,
                                    INSTRUCTIONS if t < n_tables - 1 else [i for i in INSTRUCTIONS if i != W.OFPIT_GOTO_TABLE],
                                    ACTIONS)
            for t in range(n_tables)]
