"""Random connection-tracking rule sets and connection traces, for the OVS oracles.

``ct_ruleset(rng, n, ports)``: rules in tables 0..2 that every one use connection
tracking. Table 0 sends IP traffic through the tracker (``ct(table=1,zone=Z)``, the
zone immediate or loaded into ``reg0[0..15]`` first; also ``ct(commit,...)`` without
recirculation, ``ct_clear`` then ``ct``), table 1 matches the tracked state
(``ct_state`` masks of new/est/rel/rpl/inv/trk, ``ct_zone``, ``ct_mark``, ``ct_label``
and the original tuple ``ct_nw_*``/``ct_ipv6_*``/``ct_nw_proto``/``ct_tp_*``) and
commits (``exec`` setting ct_mark / ct_label), outputs, clears or recirculates again
into table 2, which matches ct fields once more. Some rules write ``ct`` / ``ct_clear``
into the action set (alone, beside an output, which wins, or ct_clear beside ct, which
wins over ct), and some recirculate back into their own or an earlier table. Matches and actions are drawn from
small pools so that the traces' packets hit them.

``ct_traces(rng, pairs, n)``: connections between two virtual ports (each direction
entering on its own port): UDP exchanges, ICMP/ICMPv6 echo, TCP handshakes with data
and FIN/RST (sequence and acknowledgement numbers as a real stack sends them), some
other IP protocol, over IPv4 and IPv6, plus a few stray packets (a SYN-ACK or an ACK
with no connection, a reply to nothing). Returned as *rounds*: the i-th packet of
every connection, so that injecting round after round replays each connection in
order. Pure: all randomness comes from the caller's ``rng``.
"""

from __future__ import annotations

import random
import struct

from .ir import (
    CT_STATE_BITS, ApplyActions, Ct, CtClear, GotoTable, Match, Output, Rule, SetField, Subfield, WriteActions,
)
from .packets import build_frame, checksum16

ZONES = (0, 1, 7)
MARKS = (0, 1, 5, 0x10)
V4 = (0x0A000001, 0x0A000002, 0x0A000003, 0x0A000004)
V6 = tuple((0x20010DB8 << 96) | i for i in (1, 2, 3, 4))
TCP_PORTS = (80, 443, 1234)
UDP_PORTS = (53, 4789, 5000)
_S = CT_STATE_BITS


def _ct_state(rng: random.Random) -> tuple[int, int]:
    """A ct_state (value, mask): +trk with some of the other bits required set or clear."""
    value = mask = _S["trk"]
    for bit in rng.sample(["new", "est", "rel", "rpl", "inv"], rng.randint(0, 3)):
        mask |= _S[bit]
        if rng.random() < 0.6:
            value |= _S[bit]
    if rng.random() < 0.1:
        return 0, _S["trk"]  # -trk
    return value, mask


def _ct_match(rng: random.Random, newer: float = 1.0) -> dict:
    m: dict = {"eth_type": rng.choice((0x0800, 0x0800, 0x86DD))}
    v, mask = _ct_state(rng)
    m["ct_state"] = (v, mask)
    valid = mask & (_S["trk"] | _S["inv"]) == _S["trk"] | _S["inv"] and v & (_S["trk"] | _S["inv"]) == _S["trk"]
    r = rng.random()
    if r < 0.15:
        m["ct_zone"] = rng.choice(ZONES)
    elif r < 0.3:
        mk = rng.choice(MARKS)
        m["ct_mark"] = mk if rng.random() < 0.5 else (mk & 0xF, 0xF)
    elif r < 0.38:
        m["ct_label"] = (rng.choice((0, 1, 2)), 0xFF)
    if not valid and rng.random() < 0.5:  # the tuple fields need +trk-inv: make it so
        m["ct_state"] = (v & ~_S["inv"] | _S["trk"], mask | _S["trk"] | _S["inv"])
        valid = True
    if valid and rng.random() < 0.5:
        proto = rng.choice((6, 17, 1 if m["eth_type"] == 0x0800 else 58))
        m["ct_nw_proto"] = proto
        if proto in (6, 17) and rng.random() < 0.6:
            m["ct_tp_dst" if rng.random() < 0.7 else "ct_tp_src"] = rng.choice(TCP_PORTS if proto == 6 else UDP_PORTS)
            if rng.random() < min(0.25 * newer, 0.9):
                del m["ct_nw_proto"]  # still matched, though Open vSwitch no longer shows it (ct_shown.py)
        if rng.random() < 0.4:
            if m["eth_type"] == 0x0800:
                m[rng.choice(("ct_nw_src", "ct_nw_dst"))] = rng.choice(V4) if rng.random() < 0.7 else (V4[0] & 0xFFFFFF00, 0xFFFFFF00)
            else:
                m[rng.choice(("ct_ipv6_src", "ct_ipv6_dst"))] = rng.choice(V6)
    return m


def _exec(rng: random.Random) -> tuple:
    out = []
    if rng.random() < 0.6:
        mk = rng.choice(MARKS[1:])
        out.append(("ct_mark", mk, None) if rng.random() < 0.6 else ("ct_mark", mk & 0xF, 0xF))
    if rng.random() < 0.3:
        out.append(("ct_label", rng.choice((1, 2)), 0xFF) if rng.random() < 0.5 else ("ct_label", 1 << 70, None))
    return tuple(out)


def _zone_actions(rng: random.Random, zone: int) -> tuple[list, dict]:
    """Actions that put ``zone`` in reg0[0..15] and the ct arguments naming it there (or,
    now and then, the zone given immediately, reg0 untouched)."""
    if rng.random() < 0.7:
        return [SetField("reg0", zone, 0xFFFF)], {"zone_src": Subfield("reg0", 0, 16)}
    return [], {"zone": zone}


def _commit_zone(rng: random.Random) -> dict:
    """A commit's zone: mostly the one table 0 looked the packet up in (reg0[0..15])."""
    if rng.random() < 0.8:
        return {"zone_src": Subfield("reg0", 0, 16)}
    return {"zone": rng.choice(ZONES)}


def _priority(match: dict) -> int:
    """More specific matches get higher priorities (so that general rules do not hide them)."""
    n = len(match) + bin(match.get("ct_state", (0, 0))[1]).count("1")
    return min(65000, 1000 * n) + random.Random(str(sorted(match.items()))).randrange(1000)


def _outputs(rng: random.Random, ports: list[int]) -> list:
    return [Output(p) for p in rng.sample(ports, rng.choice((1, 1, 1, 2)))]


def ct_ruleset(rng: random.Random, n: int, ports: list[int], newer: float = 1.0) -> list[Rule]:
    """``n`` rules (or a few more: a fixed skeleton) that all use ct. ``newer`` scales
    the share of the forms added last (ct / ct_clear written into the action set,
    recirculation back, ct_tp_* without ct_nw_proto)."""
    rules: dict[tuple, Rule] = {}
    used: set[tuple[int, int]] = set()  # (table, priority): two overlapping rules of one priority are undefined

    def add(table: int, m: dict, ins: tuple, prio: int | None = None) -> None:
        prio = _priority(m) if prio is None else prio
        while (table, prio) in used:
            prio += 1
        used.add((table, prio))
        r = Rule(Match.of(**m), ins, table, prio)
        rules.setdefault((r.table, r.priority, r.match), r)

    a, b = rng.sample(ports, 2)
    for eth in (0x0800, 0x86DD):  # the skeleton: track (zone 0), commit new connections, pass the rest
        add(0, {"eth_type": eth}, (ApplyActions((Ct(table=1),)),), 1)
        add(1, {"eth_type": eth, "ct_state": (_S["trk"] | _S["new"], _S["trk"] | _S["new"] | _S["inv"])},
            (ApplyActions((Ct(commit=True, exec=(("ct_mark", 1, None),), **_commit_zone(rng)), Output(a))),), 10)
        add(1, {"eth_type": eth, "ct_state": (_S["trk"] | _S["est"], _S["trk"] | _S["est"] | _S["inv"])},
            (ApplyActions((Output(b),)),), 11)
    while len(rules) < n:
        table = rng.choice((0, 1, 1, 1, 2, 2))
        eth = rng.choice((0x0800, 0x0800, 0x86DD))
        if table == 0:
            m: dict = {"eth_type": eth}
            k = rng.random()
            if k < 0.4:
                m["in_port"] = rng.choice(ports)
            elif k < 0.7:
                m["ip_proto"] = rng.choice((6, 17))
            zone = rng.choice(ZONES)
            pre, zarg = _zone_actions(rng, zone)
            if rng.random() < min(0.15 * newer, 0.9):  # ct written into the action set: it runs at the pipeline's end
                w = rng.random()
                if w < 0.6:
                    written = [Ct(table=1, **zarg)]
                elif w < 0.8:
                    written = [Ct(table=1, **zarg)] + _outputs(rng, ports)[:1]  # the output wins over ct
                else:
                    written = [CtClear(), Ct(table=rng.choice((1, 2)), **zarg)]  # ct_clear wins: nothing runs
                add(0, m, ((ApplyActions(tuple(pre)),) if pre else ()) + (WriteActions(tuple(written)),))
                continue
            kind = rng.random()
            if kind < 0.6:
                acts = pre + [Ct(table=1, **zarg)]
            elif kind < 0.75:
                acts = pre + [CtClear(), Ct(table=rng.choice((1, 2)), **zarg)]
            elif kind < 0.9:
                acts = pre + [Ct(commit=True, exec=_exec(rng), **zarg)] + _outputs(rng, ports)
            else:
                acts = pre + [Ct(**zarg), Ct(table=2, **zarg)] + _outputs(rng, ports)[:1]
            add(0, m, (ApplyActions(tuple(acts)),))
            continue
        m = _ct_match(rng, newer)
        ins: list = []
        pick = rng.random()
        if pick < min(0.1 * newer, 0.45):  # a commit written into the action set (no goto: the set runs after this rule)
            if m["ct_state"][0] & _S["inv"]:
                m["ct_state"] = (m["ct_state"][0] & ~_S["inv"], m["ct_state"][1])
            add(table, m, (WriteActions((Ct(commit=True, exec=_exec(rng), **_commit_zone(rng)),)),))
            continue
        if pick < min(0.16 * newer, 0.75):  # recirculation into this or an earlier table (dropped past 6 recirculations)
            pre, zarg = _zone_actions(rng, rng.choice(ZONES))
            acts = pre + [Ct(table=rng.randint(0, table), **zarg)] + (_outputs(rng, ports)[:1] if rng.random() < 0.3 else [])
            add(table, m, (ApplyActions(tuple(acts)),))
            continue
        kind = rng.random()
        if kind < 0.35:
            acts = [Ct(commit=True, exec=_exec(rng), **_commit_zone(rng))] + _outputs(rng, ports)
        elif kind < 0.6:
            acts = _outputs(rng, ports)
        elif kind < 0.7:
            acts = [CtClear()] + _outputs(rng, ports)
            if table == 1 and rng.random() < 0.5:
                ins.append(GotoTable(2))
        elif kind < 0.8 and table == 1:
            pre, zarg = _zone_actions(rng, rng.choice(ZONES))
            acts = pre + [Ct(table=2, **zarg)] + (_outputs(rng, ports) if rng.random() < 0.3 else [])
        elif kind < 0.9:
            acts = [Ct(commit=True, force=rng.random() < 0.2, table=2 if table == 1 else None, **_commit_zone(rng))]
        else:
            acts = []  # drop
        if any(type(x) is Ct and x.commit for x in acts) and m["ct_state"][0] & _S["inv"]:
            m["ct_state"] = (m["ct_state"][0] & ~_S["inv"], m["ct_state"][1])  # (OVS: no commit of +inv)
        add(table, m, (ApplyActions(tuple(acts)), *ins))
    return list(rules.values())


# ---------------------------------------------------------------- traces

def _tcp_frame(v6: bool, src: int, dst: int, sport: int, dport: int, seq: int, ack: int, flags: int,
               payload: bytes = b"", win: int = 65535, options: bytes = b"") -> bytes:
    """A TCP segment in an Ethernet frame (``options`` padded to 4 octets)."""
    options += bytes(-len(options) % 4)
    hdr = struct.pack("!HHIIHHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      ((5 + len(options) // 4) << 12) | flags, win, 0, 0) + options
    seg = hdr + payload
    if v6:
        s, d = src.to_bytes(16, "big"), dst.to_bytes(16, "big")
        csum = checksum16(s + d + struct.pack("!IxxxB", len(seg), 6) + seg)
        seg = seg[:16] + struct.pack("!H", csum) + seg[18:]
        l3 = struct.pack("!IHBB", 6 << 28, len(seg), 6, 64) + s + d + seg
        eth = 0x86DD
    else:
        csum = checksum16(struct.pack("!IIBBH", src, dst, 0, 6, len(seg)) + seg)
        seg = seg[:16] + struct.pack("!H", csum) + seg[18:]
        hdr4 = struct.pack("!BBHHHBBHII", 0x45, 0, 20 + len(seg), 0, 0x4000, 64, 6, 0, src, dst)
        l3 = hdr4[:10] + struct.pack("!H", checksum16(hdr4)) + hdr4[12:] + seg
        eth = 0x0800
    frame = (0x020000000002).to_bytes(6, "big") + (0x020000000001).to_bytes(6, "big") + struct.pack("!H", eth) + l3
    return frame + bytes(max(0, 60 - len(frame)))


def _conn(rng: random.Random, a: int, b: int, k: int) -> list[tuple[int, bytes]]:
    """One connection's packets, in order: (virtual in_port, frame)."""
    v6 = rng.random() < 0.3
    addrs = V6 if v6 else V4
    ca, sa = rng.sample(addrs, 2)
    ip = {"ipv6_src": ca, "ipv6_dst": sa} if v6 else {"ipv4_src": ca, "ipv4_dst": sa}
    rev = {"ipv6_src": sa, "ipv6_dst": ca} if v6 else {"ipv4_src": sa, "ipv4_dst": ca}
    kind = rng.choice(("udp", "udp", "tcp", "tcp", "tcp", "icmp", "other", "stray"))
    cport = 20000 + k  # one connection per client port: tuples never collide
    if kind == "udp":
        sport = rng.choice(UDP_PORTS)
        out = []
        for i in range(rng.randint(2, 5)):
            if i % 2 == 0 or rng.random() < 0.3:
                out.append((a, build_frame(**ip, udp_src=cport, udp_dst=sport, payload=bytes([i]) * 4)))
            else:
                out.append((b, build_frame(**rev, udp_src=sport, udp_dst=cport, payload=bytes([i]) * 4)))
        return out
    if kind == "icmp":
        t_req, t_rep, key = (128, 129, "icmpv6_type") if v6 else (8, 0, "icmpv4_type")
        out = [(a, build_frame(**ip, **{key: t_req})), (b, build_frame(**rev, **{key: t_rep}))]
        return out + [(a, build_frame(**ip, **{key: t_req}))] * rng.randint(0, 1)
    if kind == "other":  # an IP protocol conntrack knows no ports of (GRE)
        f = dict(ip, ip_proto=47, payload=b"\x00\x00\x08\x00")
        r = dict(rev, ip_proto=47, payload=b"\x00\x00\x08\x00")
        return [(a, build_frame(**f)), (b, build_frame(**r)), (a, build_frame(**f))]
    sport = rng.choice(TCP_PORTS)
    SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08
    src, dst = (ca, sa)
    if kind == "stray":  # packets no connection explains
        return [(b, _tcp_frame(v6, dst, src, sport, cport, 5000, 1001, SYN | ACK)),
                (a, _tcp_frame(v6, src, dst, cport, sport, 1001, 5001, ACK)),
                (a, _tcp_frame(v6, src, dst, cport, sport, 1001, 0, SYN | FIN))]
    c, s = rng.randrange(1 << 31), rng.randrange(1 << 31)
    out = [(a, _tcp_frame(v6, src, dst, cport, sport, c, 0, SYN)),
           (b, _tcp_frame(v6, dst, src, sport, cport, s, c + 1, SYN | ACK)),
           (a, _tcp_frame(v6, src, dst, cport, sport, c + 1, s + 1, ACK))]
    c, s = c + 1, s + 1
    for _ in range(rng.randint(0, 2)):
        data = bytes(rng.randint(1, 20))
        if rng.random() < 0.5:
            out.append((a, _tcp_frame(v6, src, dst, cport, sport, c, s, PSH | ACK, data)))
            c += len(data)
        else:
            out.append((b, _tcp_frame(v6, dst, src, sport, cport, s, c, PSH | ACK, data)))
            s += len(data)
    end = rng.random()
    if end < 0.5:
        out += [(a, _tcp_frame(v6, src, dst, cport, sport, c, s, FIN | ACK)),
                (b, _tcp_frame(v6, dst, src, sport, cport, s, c + 1, FIN | ACK)),
                (a, _tcp_frame(v6, src, dst, cport, sport, c + 1, s + 1, ACK))]
    elif end < 0.7:
        out.append((b, _tcp_frame(v6, dst, src, sport, cport, s, c, RST | ACK)))
    return out


def ct_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int) -> list[list[tuple[int, bytes]]]:
    """``n`` connections, each between the ports of a random pair (client first), as
    rounds: round i holds the i-th packet of every connection that has one
    (``generate_ct_tcp.ct_traces``: some of them testing the TCP window checks)."""
    return as_rounds(ct_connections(rng, pairs, n))


def ct_connections(rng: random.Random, pairs: list[tuple[int, int]], n: int) -> list[list[tuple[int, bytes]]]:
    """``n`` connections, each between the ports of a random pair (client first): each a list
    of (virtual in_port, frame) in order."""
    return [_conn(rng, *rng.choice(pairs), k) for k in range(n)]


def as_rounds(conns: list[list[tuple[int, bytes]]]) -> list[list[tuple[int, bytes]]]:
    """Round i holds the i-th packet of every connection that has one."""
    return [[c[i] for c in conns if i < len(c)] for i in range(max(len(c) for c in conns))]
