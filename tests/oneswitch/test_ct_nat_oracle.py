"""``nat`` in connection tracking against Open vSwitch 3.1: dp-core's tracker
(crates/dp-core/src/ct_nat.rs) and OneSwitch's translation (every pipeline on the
host's tracker) each against one OVS bridge, on random rule sets whose ct actions
mostly translate (generate_ct_nat.py: ranges of one address and one or no port)
and traces whose replies come back to the translated addresses. The full run is
``tandem bench ct_oracle -- --nat``."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.dataplane.switch import Switch
from tandem.rules.generate_ct_nat import nat_ruleset, nat_traces, uses_nat
from tandem.testing.ct_oracle import cross_pairs, ct_topologies, dp_core_vs_ovs, translation_vs_ovs

PORTS = [1, 2, 3, 4]


def _addrs(frame: bytes) -> bytes:
    return frame[22:54] if frame[12:14] == b"\x86\xdd" else frame[26:34]


def _translated_frames(rules, rounds) -> int:
    """Frames dp-core sends out with other IP addresses than they came in with."""
    sw = Switch(PORTS, 3, drop_malformed=False)
    sw.add_rules(rules)
    return sum(_addrs(out) != _addrs(f) for rnd in rounds for port, f in rnd for _, out in sw.process(port, f))


@pytest.mark.ovs
@pytest.mark.parametrize("seed", [13, 16])
def test_dp_core_nat_matches_one_ovs_bridge(seed):
    rng = random.Random(seed)
    rules = nat_ruleset(rng, 150, PORTS)
    rounds = nat_traces(rng, [(x, y) for x in PORTS for y in PORTS if x != y], 24)
    assert sum(map(uses_nat, rules)) >= 60
    assert _translated_frames(rules, rounds) >= 20  # (the translation is exercised, not just accepted)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, PORTS)
    assert not bad, "\n".join(bad[:3])
    assert n >= 60 and frames >= n // 6


@pytest.mark.ovs
@pytest.mark.parametrize("topo_name, seed", [("k3", 21), ("chain", 22)])
def test_nat_through_oneswitch_matches_one_ovs_bridge(topo_name, seed):
    topo = ct_topologies()[topo_name]
    rng = random.Random(seed)
    rules = nat_ruleset(rng, 120, sorted(topo.port_map))
    rounds = nat_traces(rng, cross_pairs(topo), 20)
    _, report = translation_vs_ovs(topo, rules, rounds)
    assert not report.mismatches, "\n".join(map(str, report.mismatches[:3]))
    assert report.packets >= 50 and report.outputs > report.packets // 4


def _udp(src: int, dst: int, sport: int, dport: int) -> bytes:
    from tandem.rules.packets import build_frame
    return build_frame(ipv4_src=src, ipv4_dst=dst, udp_src=sport, udp_dst=dport, payload=b"abcd")


WIDE = ["in_port=1,ip,actions=ct(commit,nat(src=10.0.1.10-10.0.1.13:1000-1003,{flag})),output:2",
        "in_port=2,ip,actions=ct(nat),output:1"]


def _wide_range_run(process, flag: str) -> list[tuple[int, int]]:
    """Twelve clients' connections through a source translation to 4 addresses x 4 ports,
    each sending, answered at its translated tuple, sending again. Checks membership and
    consistency on what ``process(port, frame)`` (-> [(port, frame)]) returns; returns the
    mappings (a connection whose tuple search found none free goes out untranslated)."""
    server, mapped = 0x0A000002, []
    for k in range(12):
        client = 0x0A000200 + k
        out = process(1, _udp(client, server, 20000 + k, 53))
        assert len(out) == 1 and out[0][0] == 2
        f = out[0][1]
        if f == _udp(client, server, 20000 + k, 53):
            continue  # (exhausted: Open vSwitch's search does not try every free tuple)
        src, sport = int.from_bytes(f[26:30], "big"), int.from_bytes(f[34:36], "big")
        assert 0x0A00010A <= src <= 0x0A00010D and 1000 <= sport <= 1003, (hex(src), sport)
        assert f == _udp(src, server, sport, 53)  # (only the source changed; checksums valid)
        assert process(2, _udp(server, src, 53, sport)) == [(1, _udp(server, client, 53, 20000 + k))]
        assert process(1, _udp(client, server, 20000 + k, 53)) == out  # the same mapping again
        mapped.append((src, sport))
    assert len(set(mapped)) == len(mapped)  # one mapping per connection
    return mapped


@pytest.mark.parametrize("flag", ["hash", "random", "persistent"])
def test_wide_ranges_map_into_the_range_consistently_in_dp_core(flag):
    sw = Switch(PORTS, 1, drop_malformed=False)
    from tandem.rules.ofctl import parse_rule

    sw.add_rules([parse_rule(t.format(flag=flag)) for t in WIDE])
    assert len(_wide_range_run(lambda p, f: list(sw.process(p, f)), flag)) == 12  # (16 tuples: none exhausted)


@pytest.mark.ovs
@pytest.mark.parametrize("flag", ["hash", "random"])
def test_wide_ranges_map_into_the_range_consistently_in_ovs(flag):
    """The same properties hold for Open vSwitch (whose picks, by a hash with a random
    basis, differ from dp-core's: docs/endpoint.md, "Connection tracking")."""
    with OvsSandbox() as sb:
        sb.add_bridge("w", PORTS)
        for t in WIDE:
            sb.ofctl("add-flow", "w", t.format(flag=flag))

        def process(port: int, frame: bytes):
            sb.inject("w", port, [frame])
            sb.settle(quiet_s=0.05, timeout_s=10)
            return [(p, f) for p in PORTS for f in sb.take_output("w", p)]

        assert len(_wide_range_run(process, flag)) >= 6
