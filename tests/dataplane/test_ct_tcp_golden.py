"""Golden cases of the TCP connection tracker (dp-core's conntrack_tcp.rs, as Open
vSwitch 3.1's lib/conntrack-tcp.c): each case is one connection's segments and the
ct_state each must get; the verdicts were established against OVS, and every run
checks them against both one OVS bridge and dp-core.

Ports: a segment from the client enters on 1, from the server on 2 (a +new one is
committed); on 3 / 4 it is looked up only. The verdict is the port it leaves by:
5 +new, 6 +est (original direction), 7 +est+rpl, 8 +inv."""

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.ofctl import parse_rule

FLOWS = [
    "table=0,priority=1,ip,actions=ct(table=1)",
    "table=1,priority=30,ip,in_port=1,ct_state=+trk+new-inv,actions=ct(commit),output:5",
    "table=1,priority=30,ip,in_port=2,ct_state=+trk+new-inv,actions=ct(commit),output:5",
    "table=1,priority=20,ip,ct_state=+trk+new-inv,actions=output:5",
    "table=1,priority=20,ip,ct_state=+trk+est-rpl-inv,actions=output:6",
    "table=1,priority=20,ip,ct_state=+trk+est+rpl-inv,actions=output:7",
    "table=1,priority=20,ip,ct_state=+trk+inv,actions=output:8",
]
VERDICT = {5: "new", 6: "est", 7: "rpl", 8: "inv"}
S, A, F, R, P = 0x02, 0x10, 0x01, 0x04, 0x08
C0, S0 = 1000, 5000  # the client's and server's initial sequence numbers
WSCALE7 = bytes([1, 3, 3, 7])  # NOP, window scale 7

# (name, segments, verdicts); a segment: (sender "c"/"s", with "?" looked up only,
# flags, seq, ack, payload length[, window, options])
CASES = [
    ("handshake, data both ways, FIN both ways", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1, 0),
        ("c", P | A, C0 + 1, S0 + 1, 10), ("s", P | A, S0 + 1, C0 + 11, 5),
        ("c", F | A, C0 + 11, S0 + 6, 0), ("s", F | A, S0 + 6, C0 + 12, 0), ("c", A, C0 + 12, S0 + 7, 0),
        ("c", S, C0 + 100, 0, 0)],
     ["new", "rpl", "est", "est", "rpl", "est", "rpl", "est", "new"]),
    ("a SYN retransmitted, and again after the handshake", [
        ("c", S, C0, 0, 0), ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1, 0),
        ("c", S, C0, 0, 0)],
     ["new", "new", "rpl", "est", "est"]),
    ("data past the window, data a window behind", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1, 0),
        ("c", P | A, C0 + 1 + 70000, S0 + 1, 10), ("c", P | A, C0 + 1 - 70000, S0 + 1, 10),
        ("c", P | A, C0 + 1, S0 + 1, 10)],
     ["new", "rpl", "est", "inv", "inv", "est"]),
    ("acknowledging what was never sent", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1 + 200000, 0),
        ("c", A, C0 + 1, S0 + 1, 0)],
     ["new", "rpl", "inv", "est"]),
    ("RST off the sequence, then exact", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1, 0),
        ("s", R | A, S0 + 9, C0 + 1, 0), ("s", R | A, S0 + 1, C0 + 1, 0), ("c", S, C0 + 50, 0, 0)],
     ["new", "rpl", "est", "inv", "rpl", "new"]),
    ("RST+ACK with ack 0", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("s", R | A, S0 + 1, 0, 0)],
     ["new", "rpl", "rpl"]),
    ("picked up mid-stream by an ACK", [
        ("c", A, C0 + 1, S0 + 1, 0), ("c", P | A, C0 + 1, S0 + 1, 10), ("s", P | A, S0 + 1, C0 + 11, 5),
        ("c", P | A, C0 + 11, S0 + 6, 20), ("s", A, S0 + 6, C0 + 31, 0)],
     ["new", "est", "rpl", "est", "rpl"]),
    ("picked up by data, then data far ahead", [
        ("c", P | A, C0 + 1, S0 + 1, 10), ("c", P | A, C0 + 11, S0 + 1, 10),
        ("c", P | A, C0 + 1 + 100000, S0 + 1, 10), ("s", A, S0 + 1, C0 + 21, 0)],
     ["new", "est", "inv", "rpl"]),
    ("picked up from the server's side", [
        ("s", P | A, S0 + 1, C0 + 1, 10), ("c", A, C0 + 1, S0 + 11, 0), ("c", P | A, C0 + 1, S0 + 11, 7),
        ("s", A, S0 + 11, C0 + 8, 0)],
     ["new", "rpl", "rpl", "est"]),
    ("picked up by a FIN", [
        ("c", F | A, C0 + 1, S0 + 1, 0), ("s", F | A, S0 + 1, C0 + 2, 0), ("c", A, C0 + 2, S0 + 2, 0),
        ("c", S, C0 + 9, 0, 0)],
     ["new", "rpl", "est", "est"]),
    ("window scaling on both SYNs", [
        ("c", S, C0, 0, 0, 65535, WSCALE7), ("s", S | A, S0, C0 + 1, 0, 65535, WSCALE7),
        ("c", A, C0 + 1, S0 + 1, 0, 1000), ("s", P | A, S0 + 1 + 100000, C0 + 1, 10, 1000),
        ("s", P | A, S0 + 1 + 200000, C0 + 1, 10, 1000)],
     ["new", "rpl", "est", "rpl", "inv"]),
    ("window scaling on one SYN only", [
        ("c", S, C0, 0, 0, 65535, WSCALE7), ("s", S | A, S0, C0 + 1, 0, 65535),
        ("c", A, C0 + 1, S0 + 1, 0, 1000), ("s", P | A, S0 + 1 + 100000, C0 + 1, 10, 1000)],
     ["new", "rpl", "est", "inv"]),
    ("looked up before it is committed", [
        ("c?", S, C0, 0, 0), ("s?", S | A, S0, C0 + 1, 0), ("c", S, C0, 0, 0), ("s?", S | A, S0, C0 + 1, 0),
        ("c?", A, C0 + 1, S0 + 1, 0)],
     ["new", "inv", "new", "rpl", "est"]),
    ("a small window", [
        ("c", S, C0, 0, 0, 100), ("s", S | A, S0, C0 + 1, 0, 100), ("c", A, C0 + 1, S0 + 1, 0, 100),
        ("c", P | A, C0 + 1 + 95, S0 + 1, 10, 100), ("c", P | A, C0 + 1 + 80, S0 + 1, 10, 100)],
     ["new", "rpl", "est", "inv", "est"]),
    ("flags no connection explains", [
        ("s", S | A, S0, C0 + 1, 0), ("c", 0, C0, 0, 0), ("c", S | F, C0, 0, 0), ("c", F, C0, 0, 0),
        ("c", R, C0, 0, 0), ("c", A, C0, S0, 0)],
     ["inv", "inv", "inv", "inv", "new", "est"]),
]

# The packet goes through the tracker twice in one zone: the second time OVS reuses the
# connection its metadata caches (process_one_fast): the verdict stays, the segment is
# not checked again (a second check would find the ack skew the first one skipped).
FLOWS_TWICE = FLOWS[:3] + [
    "table=1,priority=20,ip,ct_state=+trk-new,actions=ct(table=2)",
    "table=1,priority=10,ip,ct_state=+trk+new,actions=ct(commit),ct(table=2)",
] + [f.replace("table=1,", "table=2,") for f in FLOWS[3:]]
CASES_TWICE = [
    ("picked up, the server acknowledging far ahead", [
        ("c", A, C0 + 1, S0 + 1, 0), ("s", P | A, S0 + 1, C0 + 1 + 200000, 5), ("s", A, S0 + 6, C0 + 1, 0)],
     ["new", "rpl", "rpl"]),
    ("handshake and data", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", A, C0 + 1, S0 + 1, 0), ("c", P | A, C0 + 1, S0 + 1, 10)],
     ["new", "rpl", "est", "est"]),
    ("data past the window", [
        ("c", S, C0, 0, 0), ("s", S | A, S0, C0 + 1, 0), ("c", P | A, C0 + 1 + 70000, S0 + 1, 10)],
     ["new", "rpl", "inv"]),
    ("committed by an ACK, then looked up again", [("c?", A, C0 + 1, S0 + 1, 0), ("c", P | A, C0 + 1, S0 + 1, 10)],
     ["new", "est"]),
]

# The same after a commit with nat: OVS caches no connection after a ct with nat
# (set_cached_conn), so the second ct looks the translated packet up again (by its
# reversed tuple) and checks the segment anew: the ACK that opened a connection is
# +est the second time. (nat(src=10.0.0.1) translates the client to its own address:
# the replies come back to the tuple they answer.)
FLOWS_NAT_TWICE = [f.replace("ct(commit),ct(table=2)", "ct(commit,nat(src=10.0.0.1)),ct(table=2)") for f in FLOWS_TWICE]
FLOWS_NAT_TWICE_NAT = [f.replace("ct(table=2)", "ct(table=2,nat)") for f in FLOWS_NAT_TWICE]
CASES_NAT_TWICE = [
    ("handshake and data", [
        ("c?", S, C0, 0, 0), ("s?", S | A, S0, C0 + 1, 0), ("c?", A, C0 + 1, S0 + 1, 0), ("c?", P | A, C0 + 1, S0 + 1, 10)],
     ["new", "rpl", "est", "est"]),
    ("committed by an ACK, then looked up again", [("c?", A, C0 + 1, S0 + 1, 0), ("c", P | A, C0 + 1, S0 + 1, 10)],
     ["est", "est"]),
    ("picked up by an ACK, answered, reset", [
        ("c?", A, C0 + 1, S0 + 1, 0), ("s?", P | A, S0 + 1, C0 + 1, 5), ("c?", A, C0 + 1, S0 + 6, 0),
        ("s?", R | A, S0 + 6, C0 + 1, 0)],
     ["est", "rpl", "est", "rpl"]),
]

# A commit that finds the connection but calls the segment +inv still sets the mark
# (OVS 3.1's process_one sets it whenever a connection holds the packet). The nat makes
# the second ct check the server's segment again: its ack, far ahead, passed the first
# check (a pickup's first segment from that end) and fails the second. Port 8: the
# second ct's +inv, then the mark it set.
FLOWS_MARK_INV = [
    "table=0,priority=1,ip,actions=ct(table=1,nat)",
    "table=1,priority=30,ip,in_port=1,ct_state=+trk+new-inv,actions=ct(commit,nat(src=10.0.0.1)),output:5",
    "table=1,priority=40,ip,ct_mark=0x10,actions=output:8",
    "table=1,priority=20,ip,in_port=2,ct_state=+trk+est+rpl-inv,"
    "actions=ct(commit,nat(src=10.0.0.1),exec(set_field:0x10->ct_mark),table=2)",
    "table=1,priority=10,ip,ct_state=+trk+est+rpl-inv,actions=output:7",
    "table=2,priority=10,ip,ct_state=+trk+inv,actions=output:8",
    "table=2,priority=10,ip,ct_state=+trk+est+rpl-inv,actions=output:7",
]
CASES_MARK_INV = [
    ("picked up, the server acknowledging far ahead, then marked", [
        ("c", P | A, C0 + 1, S0 + 1, 8), ("s", P | A, S0 + 1, C0 + 1 + 83000, 17), ("s?", A, S0 + 18, C0 + 9, 0)],
     ["new", "inv", "inv"]),
]


def _frames(k: int, segments) -> list[tuple[int, bytes]]:
    """The case's segments as (in_port, frame); client port 30000 + k."""
    out = []
    for who, flags, seq, ack, n, *rest in segments:
        win = rest[0] if rest else 65535
        opts = rest[1] if len(rest) > 1 else b""
        client = who[0] == "c"
        port = (1 if client else 2) + (2 if who.endswith("?") else 0)
        src, dst = (0x0A000001, 0x0A000002) if client else (0x0A000002, 0x0A000001)
        sport, dport = (30000 + k, 80) if client else (80, 30000 + k)
        out.append((port, _tcp_frame(False, src, dst, sport, dport, seq, ack, flags, bytes(n), win, opts)))
    return out


def _verdicts_ovs_and_dp(flows, cases) -> tuple[list[list[str]], list[list[str]]]:
    """Each case's verdicts from one OVS bridge and from dp-core, both with ``flows``."""
    from tandem.dataplane.switch import Switch
    from tandem.testing.ovs_flows import add_rules

    rules = [parse_rule(f) for f in flows]
    cases = [_frames(k, segs) for k, (_, segs, _) in enumerate(cases)]
    sw = Switch(range(1, 9), 3, drop_malformed=False)
    sw.add_rules(rules)
    ovs: list[list[str]] = [[] for _ in cases]
    dp: list[list[str]] = [[] for _ in cases]
    with OvsSandbox() as sb:
        sb.add_bridge("brtcp", range(1, 9))
        add_rules(sb, "brtcp", rules)
        for i in range(max(len(c) for c in cases)):  # round i: the i-th segment of every case
            live = [k for k, c in enumerate(cases) if i < len(c)]
            for k in live:
                port, frame = cases[k][i]
                tagged = frame + k.to_bytes(2, "big")  # (after the IP packet: padding to both trackers)
                dp[k].append(",".join(VERDICT.get(p, str(p)) for p, _ in sw.process(port, tagged)) or "drop")
                sb.inject("brtcp", port, [tagged])
            sb.settle(quiet_s=0.05, timeout_s=30)
            got = {k: [] for k in live}
            for p in range(5, 9):
                for f in sb.take_output("brtcp", p):
                    got[int.from_bytes(f[-2:], "big")].append(VERDICT[p])
            for k in live:
                ovs[k].append(",".join(got[k]) or "drop")
    return ovs, dp


@pytest.mark.ovs
@pytest.mark.parametrize("flows, cases", [(FLOWS, CASES), (FLOWS_TWICE, CASES_TWICE), (FLOWS_NAT_TWICE, CASES_NAT_TWICE),
                                          (FLOWS_NAT_TWICE_NAT, CASES_NAT_TWICE), (FLOWS_MARK_INV, CASES_MARK_INV)],
                         ids=["once", "twice", "twice after nat", "twice, both with nat", "mark set on +inv"])
def test_tcp_tracker_verdicts_golden_against_ovs_and_dp_core(flows, cases):
    ovs, dp = _verdicts_ovs_and_dp(flows, cases)
    for (name, _, want), o, d in zip(cases, ovs, dp):
        assert o == want, f"{name}: OVS {o}, golden {want}"
        assert d == want, f"{name}: dp-core {d}, golden {want}"


def test_odd_tcp_connections_reach_every_verdict():
    """generate_ct_tcp.py's connections give the random oracle segments of every
    verdict, a good share of them outside the window (+inv)."""
    from collections import Counter
    import random

    from tandem.dataplane.switch import Switch
    from tandem.rules.generate_ct_tcp import odd_tcp_conn

    sw = Switch(range(1, 9), 3, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in FLOWS])
    seen: Counter = Counter()
    rng = random.Random(4)
    for k in range(200):
        for port, frame in odd_tcp_conn(rng, 1, 2, k):
            seen.update(VERDICT[p] for p, _ in sw.process(port, frame))
    assert min(seen[v] for v in VERDICT.values()) > 0.08 * sum(seen.values()), seen


@pytest.mark.ovs
@pytest.mark.parametrize("seed", [1, 3])
def test_random_ct_rules_on_odd_tcp_connections_as_open_vswitch(seed):
    import random

    from tandem.rules.generate_ct import ct_ruleset
    from tandem.rules.generate_ct_tcp import ct_traces
    from tandem.testing.ct_oracle import dp_core_vs_ovs

    ports = [1, 2, 3, 4]
    rng = random.Random(seed)
    rules = ct_ruleset(rng, 150, ports, 4.0)
    rounds = ct_traces(rng, [(a, b) for a in ports for b in ports if a != b], 30, tcp_odd=1.0)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, ports)
    assert not bad, "\n".join(bad[:5])
    assert n >= 100 and frames > n // 4
