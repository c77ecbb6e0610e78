"""ICMP errors about tracked connections in the connection traces, for the OVS
oracles (``tandem bench ct_oracle -- --icmp-errors P``).

``with_error(rng, conn)``: one connection's packets with an ICMP error put in after
one of them (destination / port unreachable, time exceeded, parameter problem;
ICMPv6 1, 3, 4): from the server's side about a packet as the server received it,
from the client's side about a reply as the client received it (the trace's
translated addresses, whatever flavour), or about a tuple no connection has; the
embedded packet whole, or cut to its IP header and 8 octets (a TCP or longer UDP
header then cut short). ``icmp_traces`` draws the connections as ``ct_traces`` /
``nat_traces`` do and gives about ``share`` of them an error. ``with_rel_rules`` adds
a rule per IP version in table 1 that outputs ``+rel`` packets, so that related ones
leave the switch whatever the random rules say. Pure: all randomness from ``rng``.
"""

from __future__ import annotations

import random
import struct

from .generate_ct import _S, as_rounds
from .generate_ct_nat import _flavour, _rewrite
from .generate_ct_tcp import mixed_connections
from .ir import ApplyActions, Match, Output, Rule
from .packets import build_frame

ERRORS4 = ((3, 3), (3, 1), (11, 0), (12, 0))
ERRORS6 = ((1, 4), (3, 0), (4, 0))


def _tuple(frame: bytes) -> tuple[bool, int, int, int | None, int | None, bytes]:
    """(IPv6?, source, destination, source port, destination port, IP packet) of a frame."""
    v6 = frame[12:14] == b"\x86\xdd"
    if v6:
        ip = frame[14:54 + struct.unpack_from("!H", frame, 18)[0]]
        src, dst, proto, l4 = int.from_bytes(ip[8:24], "big"), int.from_bytes(ip[24:40], "big"), ip[6], 40
    else:
        ip = frame[14:14 + struct.unpack_from("!H", frame, 16)[0]]
        src, dst, proto, l4 = int.from_bytes(ip[12:16], "big"), int.from_bytes(ip[16:20], "big"), ip[9], (ip[0] & 15) * 4
    ports = struct.unpack_from("!HH", ip, l4) if proto in (6, 17) else (None, None)
    return v6, src, dst, ports[0], ports[1], ip


def with_error(rng: random.Random, conn: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """``conn`` with one ICMP error about one of its packets, put in after a random one."""
    at = rng.randrange(len(conn))
    port, frame = conn[at]
    v6, src, dst, sport, dport, _ = _tuple(frame)
    if rng.random() < 0.5:  # from the packet's sender, about a packet it answers (the packet reversed)
        about, outer, in_port = _rewrite(frame, src=dst, dst=src, sport=dport, dport=sport), (src, dst), port
    else:  # from its receiver, about the packet as it was sent
        peers = [p for p, _ in conn if p != port]
        if not peers:
            return conn
        about, outer, in_port = frame, (dst, src), peers[0]
    if rng.random() < 0.15:  # about a tuple no connection has
        about = _rewrite(about, dst=_tuple(about)[2] ^ 0x20)
    inner = _tuple(about)[5]
    if rng.random() < 0.2:  # cut to the IP header and 8 octets
        inner = inner[:(40 if v6 else (inner[0] & 15) * 4) + 8]
    ty, code = rng.choice(ERRORS6 if v6 else ERRORS4)
    if v6:
        err = build_frame(ipv6_src=outer[0], ipv6_dst=outer[1], icmpv6_type=ty, icmpv6_code=code, payload=inner)
    else:
        err = build_frame(ipv4_src=outer[0], ipv4_dst=outer[1], icmpv4_type=ty, icmpv4_code=code, payload=inner)
    return conn[:at + 1] + [(in_port, err)] + conn[at + 1:]


def icmp_traces(rng: random.Random, pairs: list[tuple[int, int]], n: int, tcp_odd: float = 0.0,
                share: float = 0.3, nat: bool = False) -> list[list[tuple[int, bytes]]]:
    """``mixed_connections`` (in ``nat_traces``' flavours with ``nat``), about ``share`` of
    them with an ICMP error, as rounds."""
    conns = mixed_connections(rng, pairs, n, tcp_odd)
    if nat:
        conns = [_flavour(rng, c) for c in conns]
    return as_rounds([with_error(rng, c) if rng.random() < share else c for c in conns])


def with_rel_rules(rng: random.Random, rules: list[Rule], ports: list[int]) -> list[Rule]:
    """``rules`` and, per IP version, a table-1 rule sending ``+rel`` packets to a port."""
    rel = (_S["trk"] | _S["rel"], _S["trk"] | _S["rel"] | _S["inv"])
    used = {(r.table, r.priority) for r in rules}
    out = list(rules)
    for eth in (0x0800, 0x86DD):
        prio = 12
        while (1, prio) in used:
            prio += 1
        used.add((1, prio))
        out.append(Rule(Match.of(eth_type=eth, ct_state=rel), (ApplyActions((Output(rng.choice(ports)),)),), 1, prio))
    return out

