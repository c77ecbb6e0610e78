"""Random rule sets that learn, and traffic that fills and reads what they learn,
for the OVS oracles.

``learn_ruleset(rng, n, ports)``: table 0 holds learning rules (each a ``learn``
into table 1..3 with random specs, priority, timeouts, cookie, flags, sometimes a
``limit`` whose result a later table reads, then an output or a goto), tables
1..3 hold plain rules below and between the learned flows' priorities (so a
learned flow sometimes replaces one, sometimes loses to one), some reading the
registers and metadata learned flows load. Specs are the forms OneSwitch takes
(learn_translate.py): MAC learning (``eth_dst`` from ``eth_src``, output to
in_port), in_port copied or given (``in_port=V``), IPv4 fields after an
``eth_type`` immediate, register and metadata immediates, loads of immediates
and of header bits. Addresses come from small pools so traffic meets them.

``learn_traffic(rng, ports, n)``: UDP/IPv4 (and a few ARP) frames between the
pools' hosts, each from a random virtual port. Pure: randomness from ``rng``.
"""

from __future__ import annotations

import random

from .ir import (
    LEARN_LOAD, LEARN_MATCH, LEARN_OUTPUT, ApplyActions, GotoTable, Learn, LearnSpec, Match, Output, Rule, Subfield,
    OFPP_FLOOD, OFPP_IN_PORT,
)
from .packets import build_frame

MACS = tuple(0x0200_0000_0000 | i for i in (1, 2, 3, 4, 5))
IPS = (0x0A000001, 0x0A000002, 0x0A000003, 0x0A000004)
UDP_PORTS = (53, 5000)
LEARN_TABLES = (1, 2, 3)


def _port_sf(rng: random.Random) -> Subfield:
    return Subfield("in_port", 0, rng.choice((16, 32)))


def _specs(rng: random.Random, ip: bool, ports: list[int]) -> tuple[LearnSpec, ...]:
    out: list[LearnSpec] = []
    kinds = rng.sample(["mac", "in_port", "port_imm", "ip", "reg", "meta", "load_imm", "load_hdr", "partial"],
                       rng.randint(1, 4))
    for k in kinds:
        if k == "mac":
            out.append(LearnSpec(LEARN_MATCH, Subfield.whole("eth_src"), dst=Subfield.whole("eth_dst")))
        elif k == "in_port":
            sf = _port_sf(rng)
            out.append(LearnSpec(LEARN_MATCH, sf, dst=sf))
        elif k == "port_imm":
            v = rng.choice(ports + [99])  # 99: no such virtual port
            out.append(LearnSpec(LEARN_MATCH, value=v, dst=_port_sf(rng)))
        elif k == "ip" and ip:
            out.append(LearnSpec(LEARN_MATCH, value=0x0800, dst=Subfield.whole("eth_type")))
            src, dst = rng.choice((("ipv4_src", "ipv4_dst"), ("ipv4_src", "ipv4_src"), ("ipv4_dst", "ipv4_dst")))
            out.append(LearnSpec(LEARN_MATCH, Subfield.whole(src), dst=Subfield.whole(dst)))
        elif k == "reg":
            out.append(LearnSpec(LEARN_MATCH, value=rng.randint(0, 3), dst=Subfield("reg0", 0, 8)))
        elif k == "meta":
            out.append(LearnSpec(LEARN_MATCH, value=rng.randint(0, 1), dst=Subfield("metadata", 0, 4)))
        elif k == "load_imm":
            out.append(LearnSpec(LEARN_LOAD, value=rng.randint(0, 7), dst=Subfield("reg1", rng.choice((0, 8)), 8)))
        elif k == "load_hdr":
            src = Subfield("ipv4_src", 0, 32) if ip and rng.random() < 0.5 else Subfield("eth_src", 0, 32)
            out.append(LearnSpec(LEARN_LOAD, src, dst=Subfield.whole("reg2")))
        elif k == "partial":
            out.append(LearnSpec(LEARN_MATCH, Subfield("eth_src", 0, 4), dst=Subfield("reg3", 4, 4)))
    if rng.random() < 0.7:
        out.append(LearnSpec(LEARN_OUTPUT, _port_sf(rng)))
    return tuple(out)


def _learn(rng: random.Random, ip: bool, ports: list[int], priority) -> Learn:
    limit = rng.choice((0, 0, 0, 1, 2, 4))
    table = rng.choice(LEARN_TABLES)
    return Learn(
        _specs(rng, ip, ports), table=table, priority=priority(table),
        idle_timeout=rng.choice((0, 0, 300)), hard_timeout=rng.choice((0, 0, 600)),
        cookie=rng.choice((0, 1, 0x77)), send_flow_rem=rng.random() < 0.3, delete_learned=rng.random() < 0.3,
        limit=limit, result_dst=Subfield("reg5", 0, 1) if limit and rng.random() < 0.6 else None)


def _out(rng: random.Random, ports: list[int]) -> Output:
    r = rng.random()
    if r < 0.1:
        return Output(OFPP_FLOOD)
    if r < 0.2:
        return Output(OFPP_IN_PORT)
    return Output(rng.choice(ports))


def learn_ruleset(rng: random.Random, n: int, ports: list[int]) -> list[Rule]:
    """``n`` rules: about half learning rules in table 0, the rest plain rules in 1..3.
    No two rules of a table, and no two learn actions' flows, share a priority: flows
    of equal priority that overlap meet packets in an order OpenFlow leaves undefined
    (a learn action's own flows all match the same fields, so never overlap). Rules
    that match nothing sit below priority 100, under every other rule and learned
    flow (else the highest of them would take all the traffic)."""
    rules: list[Rule] = [Rule(Match(), (GotoTable(1),), 0, 0)]
    free = {t: rng.sample(range(100, 60000), 4 * n + 8) for t in (0, *LEARN_TABLES)}

    # table 0: the more fields a learning rule matches, the higher it sits, so each packet
    # meets the most specific learning rule it matches (a few broad ones would take all)
    by_fields = {k: rng.sample(range(k * 12000, k * 12000 + 11000), n + 1) for k in (1, 2, 3, 4)}

    def priority(table: int) -> int:
        return free[table].pop()

    def add(r: Rule) -> None:
        rules.append(r)

    while len(rules) < n:
        if rng.random() < 0.5:  # a learning rule
            m: dict = {}
            ip = rng.random() < 0.6
            if ip:
                m["eth_type"] = 0x0800
                if rng.random() < 0.3:
                    m["ipv4_src"] = rng.choice(IPS)
            if rng.random() < 0.4:
                m["in_port"] = rng.choice(ports)
            if rng.random() < 0.3:
                m["eth_src"] = rng.choice(MACS)
            acts: list = [_learn(rng, ip, ports, priority)]
            if rng.random() < 0.2:
                acts.append(_learn(rng, ip, ports, priority))
            ins: tuple = (ApplyActions(tuple(acts)), GotoTable(rng.choice(LEARN_TABLES)))
            if rng.random() < 0.2:
                ins = (ApplyActions(tuple(acts + [_out(rng, ports)])),)
            add(Rule(Match.of(**m), ins, 0, by_fields[len(m)].pop() if m else rng.randint(1, 99)))
        else:  # a plain rule where the flows are learned
            t = rng.choice(LEARN_TABLES)
            m = {}
            r = rng.random()
            if r < 0.3:
                m["eth_dst"] = rng.choice(MACS)
            elif r < 0.45:
                m["reg5"] = (rng.randint(0, 1), 1)
            elif r < 0.6:
                m["reg1"] = (rng.randint(0, 7), 0xFF)
            elif r < 0.7:
                m["in_port"] = rng.choice(ports)
            prio = priority(t) if m else rng.randint(1, 99)
            acts = [_out(rng, ports)] if rng.random() < 0.85 else []
            nxt = (GotoTable(t + 1),) if t < LEARN_TABLES[-1] and rng.random() < 0.25 else ()
            add(Rule(Match.of(**m), (ApplyActions(tuple(acts)),) + nxt, t, prio))
    return rules


def learn_traffic(rng: random.Random, ports: list[int], n: int) -> list[tuple[int, bytes]]:
    """``n`` (virtual in_port, frame) pairs; each host (MAC, IP) keeps its port mostly,
    so learned locations are re-used and sometimes move."""
    home = {i: rng.choice(ports) for i in range(len(MACS))}
    out = []
    for _ in range(n):
        a, b = rng.sample(range(len(MACS)), 2)
        if rng.random() < 0.1:
            home[a] = rng.choice(ports)  # a host moves
        src_ip, dst_ip = IPS[a % len(IPS)], IPS[b % len(IPS)]
        if rng.random() < 0.1:
            frame = build_frame(eth_src=MACS[a], eth_dst=0xFFFF_FFFF_FFFF, eth_type=0x0806, arp_op=1,
                                arp_spa=src_ip, arp_tpa=dst_ip, arp_sha=MACS[a])
        else:
            frame = build_frame(eth_src=MACS[a], eth_dst=MACS[b], ipv4_src=src_ip, ipv4_dst=dst_ip,
                                udp_src=rng.choice(UDP_PORTS), udp_dst=rng.choice(UDP_PORTS))
        out.append((home[a], frame))
    return out
