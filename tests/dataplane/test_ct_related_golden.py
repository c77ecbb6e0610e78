"""Golden cases of ICMP errors related to a tracked connection (dp-core's
ct_related.rs, as Open vSwitch 3.1's lib/conntrack.c): the error is ``+rel`` (``+rpl``
in the reply direction) when the packet it carries belongs to a connection, ``+inv``
otherwise; with ``nat`` its address is translated, and in the reply direction the
packet it carries is translated back too. Every run checks the verdicts, and the
frames that leave, against both one OVS bridge and dp-core.

Ports: the client's packets enter on 1 and are committed (with the case's ct), the
server's on 2; the verdict is the port a packet leaves by: 5 +new, 6 +est, 7 +rel
(original direction), 8 +rel+rpl, 9 +inv."""

import pytest

from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.generate_ct_icmp import _tuple
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_golden import ovs_and_dp_core as _run

VERDICTS = [
    "table=1,priority=20,ip,ct_state=+trk+new-inv,actions=output:5",
    "table=1,priority=20,ip,ct_state=+trk+est-inv,actions=output:6",
    "table=1,priority=20,ip,ct_state=+trk+rel-rpl-inv,actions=output:7",
    "table=1,priority=20,ip,ct_state=+trk+rel+rpl-inv,actions=output:8",
    "table=1,priority=20,ip,ct_state=+trk+inv,actions=output:9",
    "table=1,priority=20,ipv6,ct_state=+trk+new-inv,actions=output:5",
    "table=1,priority=20,ipv6,ct_state=+trk+est-inv,actions=output:6",
    "table=1,priority=20,ipv6,ct_state=+trk+rel-rpl-inv,actions=output:7",
    "table=1,priority=20,ipv6,ct_state=+trk+rel+rpl-inv,actions=output:8",
    "table=1,priority=20,ipv6,ct_state=+trk+inv,actions=output:9",
]
VERDICT = {5: "new", 6: "est", 7: "rel", 8: "rel+rpl", 9: "inv"}
C, VIP, S = 0x0A000001, 0x0A000064, 0x0A000008
C6, VIP6, S6 = ((0x20010DB8 << 96) | i for i in (1, 0x64, 8))


def _flows(commit: str, lookup: str, v6: bool = False) -> list[str]:
    plain = "ct(commit,table=1)"
    return [f"table=0,priority=1,ip,in_port=1,actions={plain if v6 else commit}",
            f"table=0,priority=1,ipv6,in_port=1,actions={commit if v6 else plain}",
            f"table=0,priority=1,ip,in_port=2,actions={lookup}",
            f"table=0,priority=1,ipv6,in_port=2,actions={lookup}"] + VERDICTS


def _error(about: bytes, cut: bool = False, v6: bool = False, ty: int | None = None) -> bytes:
    """An ICMP error from the receiver of the frame ``about`` (its destination) back to its source."""
    _, src, dst, _, _, ip = _tuple(about)
    if cut:
        ip = ip[:(40 if v6 else 20) + 8]
    if v6:
        return build_frame(ipv6_src=dst, ipv6_dst=src, icmpv6_type=ty or 1, icmpv6_code=4, payload=ip)
    return build_frame(ipv4_src=dst, ipv4_dst=src, icmpv4_type=ty or 3, icmpv4_code=3, payload=ip)


def _udp(src: int, dst: int, sport: int, dport: int, v6: bool = False) -> bytes:
    if v6:
        return build_frame(ipv6_src=src, ipv6_dst=dst, udp_src=sport, udp_dst=dport, payload=b"\x01" * 4)
    return build_frame(ipv4_src=src, ipv4_dst=dst, udp_src=sport, udp_dst=dport, payload=b"\x01" * 4)


PLAIN = _flows("ct(commit,table=1)", "ct(table=1)")
DNAT = _flows("ct(commit,nat(dst=10.0.0.8),table=1)", "ct(nat,table=1)")
DNAT6 = _flows("ct(commit,nat(dst=[2001:db8::8]),table=1)", "ct(nat,table=1)", v6=True)
DNATP = _flows("ct(commit,nat(dst=10.0.0.8:8080),table=1)", "ct(nat,table=1)")
SNAT = _flows("ct(commit,nat(src=10.0.0.9:40000),table=1)", "ct(nat,table=1)")
SYN = _tcp_frame(False, C, S, 30000, 80, 1000, 0, 0x02)
SYN6 = _tcp_frame(True, C6, S6, 30000, 80, 1000, 0, 0x02)

# (name, flows, packets (in_port, frame), verdicts)
CASES = [
    ("port unreachable about a committed UDP packet", PLAIN,
     [(1, _udp(C, S, 30000, 53)), (2, _error(_udp(C, S, 30000, 53)))], ["new", "rel+rpl"]),
    ("time exceeded about a packet no connection holds", PLAIN,
     [(1, _udp(C, S, 30000, 53)), (2, _error(_udp(C, S, 30001, 53), ty=11))], ["new", "inv"]),
    ("an error from the client about the server's answer", PLAIN,
     [(1, _udp(C, S, 30000, 53)), (1, _error(_udp(S, C, 53, 30000)))], ["new", "rel"]),
    # (OVS reads 8 octets of the carried TCP header: its ports)
    ("a TCP segment cut to 8 octets", PLAIN, [(1, SYN), (2, _error(SYN, cut=True))], ["new", "rel+rpl"]),
    # (under IPv6 a whole TCP header: ct_oracle --icmp-errors 0.5 --only dp --seed 1)
    ("IPv6: a TCP segment cut to 8 octets", PLAIN, [(1, SYN6), (2, _error(SYN6, cut=True, v6=True))], ["new", "inv"]),
    ("IPv6: a TCP segment whole", PLAIN, [(1, SYN6), (2, _error(SYN6, v6=True))], ["new", "rel+rpl"]),
    ("source translation with a port, TCP cut to 8 octets", SNAT,
     [(1, SYN), (2, _error(_tcp_frame(False, 0x0A000009, S, 40000, 80, 1000, 0, 0x02), cut=True))], ["new", "rel+rpl"]),
    ("a TCP segment whole", PLAIN, [(1, SYN), (2, _error(SYN))], ["new", "rel+rpl"]),
    ("destination translation: the error and the packet it carries translated back", DNAT,
     [(1, _udp(C, VIP, 30000, 53)), (2, _error(_udp(C, S, 30000, 53)))], ["new", "rel+rpl"]),
    ("source translation with a port, TCP", SNAT,
     [(1, SYN), (2, _error(_tcp_frame(False, 0x0A000009, S, 40000, 80, 1000, 0, 0x02)))], ["new", "rel+rpl"]),
    # (OVS translates the carried packet in the original direction too: ct_oracle --nat --icmp-errors 0.5 --seed 1)
    ("destination translation with a port: the client's error about an answer", DNATP,
     [(1, _udp(C, VIP, 30000, 53)), (1, _error(_udp(VIP, C, 53, 30000)))], ["new", "rel"]),
    ("IPv6 destination translation: the client's error about an answer", DNAT6,
     [(1, _udp(C6, VIP6, 30000, 53, True)), (1, _error(_udp(VIP6, C6, 53, 30000, True), v6=True))], ["new", "rel"]),
    ("IPv6 destination translation (ICMPv6 checksum over the pseudo-header)", DNAT6,
     [(1, _udp(C6, VIP6, 30000, 53, True)), (2, _error(_udp(C6, S6, 30000, 53, True), v6=True))], ["new", "rel+rpl"]),
]


@pytest.mark.ovs
@pytest.mark.parametrize("name, flows, packets, want", CASES, ids=[c[0] for c in CASES])
def test_icmp_errors_related_golden_against_ovs_and_dp_core(name, flows, packets, want):
    ovs, dp = _run(flows, packets)
    verdicts = [[",".join(VERDICT.get(p, str(p)) for p, _ in o) or "drop" for o in outs] for outs in (ovs, dp)]
    assert verdicts[0] == want, f"{name}: OVS {verdicts[0]}"
    assert verdicts[1] == want, f"{name}: dp-core {verdicts[1]}"
    assert dp == ovs  # the frames too


def test_translated_back_error_carries_the_original_tuple():
    """dp-core alone: the DNAT case's error leaves from the VIP, about the packet to the VIP."""
    from tandem.dataplane.switch import Switch

    sw = Switch(range(1, 10), 3, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in DNAT])
    sw.process(1, _udp(C, VIP, 30000, 53))
    (port, err), = sw.process(2, _error(_udp(C, S, 30000, 53)))
    inner = err[14 + 20 + 8:]
    assert port == 8
    assert _tuple(err)[1:3] == (VIP, C)
    assert int.from_bytes(inner[12:16], "big") == C and int.from_bytes(inner[16:20], "big") == VIP


@pytest.mark.ovs
@pytest.mark.parametrize("seed", [1, 2])
def test_random_nat_rules_on_traces_with_icmp_errors_as_open_vswitch(seed):
    """Random ct rules with nat (``ct_oracle --nat --icmp-errors 0.5``'s) on connection
    traces of which half carry an ICMP error: dp-core's outputs equal one OVS bridge's."""
    import random

    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.rules.generate_ct_icmp import icmp_traces, with_rel_rules
    from tandem.rules.generate_ct_nat import nat_ruleset
    from tandem.testing.ct_oracle import dp_core_vs_ovs

    ports = [1, 2, 3, 4]
    rng = random.Random(seed)
    rules = with_rel_rules(rng, nat_ruleset(rng, 150, ports), ports)
    rounds = icmp_traces(rng, [(a, b) for a in ports for b in ports if a != b], 24, 0.2, 0.5, nat=True)
    errors = sum(f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] in (3, 11, 12) for r in rounds for _, f in r)
    assert errors >= 3
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, ports)
    assert frames > 0 and not bad, bad[:3]
