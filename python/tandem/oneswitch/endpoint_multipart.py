"""MULTIPART replies of the OneSwitch endpoint, in virtual terms.

``answer(ep, xid, req)`` reads what it needs from the backend (flow stats of
every physical switch, port stats/descriptions of the switches owning virtual
ports) and folds it into the virtual view with ``endpoint_stats``: a virtual
rule's counters come from its ingress-side physical rules only, port
counters from the physical port a virtual port maps onto.
State: none. Cost: one stats round trip per physical switch involved.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from tandem.oneswitch import endpoint_stats as V
from tandem.oneswitch.carried_counters import add_carried
from tandem.oneswitch.learn_translate import learned_flows
from tandem.oneswitch.fin_timeouts import virtual_timeouts
from tandem.rules import ir
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S

if TYPE_CHECKING:
    from tandem.oneswitch.endpoint import OneSwitchEndpoint


async def _flow_counters(ep: "OneSwitchEndpoint", vrules: list[ir.Rule]) -> tuple[dict[V.Key, tuple[int, int]],
                                                                                 dict[V.Key, tuple[int, int]]]:
    """Each virtual rule's (packets, bytes), and (idle, hard) of those a fin_timeout may have shrunk."""
    if not vrules:
        return {}, {}
    phys = {sw: await ep.backend.flow_stats(sw) for sw in ep.backend.switches()}
    counters = add_carried(ep, V.virtual_counters(ep.state, vrules, phys))  # (moves: carried_counters.py)
    return counters, virtual_timeouts(ep.state, vrules, phys)


async def _learned(ep: "OneSwitchEndpoint", req: "S.FlowStatsRequest | None") -> list[S.FlowStatsEntry]:
    """The flows the host switch learned (learn_translate.learned_flows) that ``req``
    selects (all if None)."""
    comp = getattr(ep.state, "comp", None)
    if comp is None or not comp.learning:
        return []
    out = learned_flows(ep.state, await ep.backend.flow_stats(ep.state.topo.host))  # type: ignore[attr-defined]
    if req is None:
        return out
    chosen = {id(r) for r in V.select_rules([e.rule for e in out], req)}
    return [e for e in out if id(e.rule) in chosen]


async def answer(ep: "OneSwitchEndpoint", xid: int, req: S.MultipartRequest) -> list[bytes]:
    t = req.type
    entries: list[bytes]
    if t == S.OFPMP_DESC:
        switches = ", ".join(ep.backend.switches())
        entries = [S.encode_desc(V.DESC["mfr"], V.DESC["hw"], V.DESC["sw"], V.DESC["serial"],
                                 f"OneSwitch {ep.dpid:016x} over {switches}")]
    elif t in (S.OFPMP_FLOW, S.OFPMP_AGGREGATE):
        assert req.flow is not None
        if req.flow.table_id != ir.OFPTT_ALL and req.flow.table_id >= ep.n_tables:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_TABLE_ID, f"table {req.flow.table_id} does not exist")
        vrules = V.select_rules(ep.state.virtual_rules(), req.flow)  # type: ignore[attr-defined]
        counters, shrunk = await _flow_counters(ep, vrules)
        learned = await _learned(ep, req.flow)
        if t == S.OFPMP_AGGREGATE:
            p = sum(counters[V.rule_key(r)][0] for r in vrules) + sum(e.packet_count for e in learned)
            b = sum(counters[V.rule_key(r)][1] for r in vrules) + sum(e.byte_count for e in learned)
            entries = [S.encode_aggregate(p, b, len(vrules) + len(learned))]
        else:
            now = time.monotonic()
            entries = []
            for r in vrules:
                installed, flags = ep.rule_meta.get(V.rule_key(r), (now, 0))
                age = max(0.0, now - installed)
                p, b = counters[V.rule_key(r)]
                if V.rule_key(r) in shrunk:  # (fin_timeouts.py)
                    r = replace(r, idle_timeout=shrunk[V.rule_key(r)][0], hard_timeout=shrunk[V.rule_key(r)][1])
                entries.append(S.encode_flow_stats(S.FlowStatsEntry(r, int(age), int(age % 1 * 1e9), flags & 0x1F, p, b)))
            entries += [S.encode_flow_stats(e) for e in learned]
    elif t == S.OFPMP_TABLE:
        active = [0] * ep.n_tables
        for r in ep.state.virtual_rules():  # type: ignore[attr-defined]
            if r.table < ep.n_tables:
                active[r.table] += 1
        for e in await _learned(ep, None):
            if e.rule.table < ep.n_tables:
                active[e.rule.table] += 1
        virtual_table = getattr(ep.state, "virtual_table", None)
        crossed = 0
        if virtual_table is not None:  # OneSwitch: table 0 also holds the delivery, transit and wire rules
            # (read before the table stats: packets that arrive in between then add to the
            # lookups, never to the crossings subtracted from them, so no count goes negative)
            crossed = V.crossings(ep.state, {sw: await ep.backend.flow_stats(sw) for sw in ep.backend.switches()})
        phys = {sw: await ep.backend.table_stats(sw) for sw in ep.backend.switches()}
        counts = V.virtual_table_counts(virtual_table, phys, crossed)
        entries = [S.encode_table_stats(table, active[table], *counts.get(table, (0, 0))) for table in range(ep.n_tables)]
    elif t == S.OFPMP_PORT_STATS:
        if req.port_no == ir.OFPP_ANY:
            wanted = list(ep.vports)
        elif req.port_no in ep.vports:
            wanted = [req.port_no]
        else:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_PORT, f"port {req.port_no} does not exist")
        per_switch = {}
        for sw in {ep.vports[v].switch for v in wanted}:
            per_switch[sw] = {ps.port_no: ps for ps in await ep.backend.port_stats(sw)}
        entries = [S.encode_port_stats(V.port_stats_entry(ep.vports[v], per_switch[ep.vports[v].switch].get(ep.vports[v].port)))
                   for v in wanted]
    elif t == S.OFPMP_PORT_DESC:
        infos = {(sw, p.port): p for sw in ep.backend.switches() for p in ep.backend.ports(sw)}
        entries = [W.encode_port(V.wire_port(vp, infos.get((vp.switch, vp.port)))) for vp in ep.vports.values()]
    elif t == S.OFPMP_GROUP:
        if req.group_id != M.OFPG_ALL and req.group_id not in ep.groups:
            raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_MULTIPART, f"group {req.group_id} does not exist")
        ids = sorted(ep.groups) if req.group_id == M.OFPG_ALL else [req.group_id]
        refs = {g: sum(1 for r in ep.state.virtual_rules() if g in V.groups_of(r)) for g in ids}  # type: ignore[attr-defined]
        # a virtual group runs only on the packet's ingress switch, so its physical
        # copies (same id) add up without double counting
        totals = {g: [0, 0, [[0, 0] for _ in ep.groups[g].buckets]] for g in ids}
        for sw in ep.backend.switches():
            for gs in await ep.backend.group_stats(sw):
                tot = totals.get(gs.group_id)
                if tot is None:
                    continue
                tot[0] += gs.packet_count
                tot[1] += gs.byte_count
                if len(gs.bucket_counts) == len(tot[2]):  # buckets kept one to one
                    for acc, (p, b) in zip(tot[2], gs.bucket_counts):
                        acc[0] += p
                        acc[1] += b
        entries = [S.encode_group_stats(g, refs[g], totals[g][0], totals[g][1], [tuple(x) for x in totals[g][2]]) for g in ids]
    elif t == S.OFPMP_GROUP_DESC:
        entries = [S.encode_group_desc(ep.groups[g]) for g in sorted(ep.groups)]
    elif t == S.OFPMP_GROUP_FEATURES:
        entries = [S.encode_group_features()]
    elif t == S.OFPMP_TABLE_FEATURES:
        entries = V.table_features(ep.n_tables)
    elif t in (S.OFPMP_METER, S.OFPMP_METER_CONFIG, S.OFPMP_METER_FEATURES):
        from tandem.oneswitch.endpoint_meters import meter_multipart

        entries = await meter_multipart(ep, req)
    else:  # decode_multipart_request only lets supported types through
        raise W.OFError(W.OFPET_BAD_REQUEST, W.OFPBRC_BAD_MULTIPART, f"multipart type {t} is not supported")
    return S.encode_multipart_replies(xid, t, entries)
