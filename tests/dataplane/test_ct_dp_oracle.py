"""dp-core's connection tracker against Open vSwitch's (userspace datapath): random
ct rule sets (generate_ct.py, every rule uses ct: ct with zones immediate or from
reg0, commit with exec of ct_mark / ct_label, force, ct(table=...) recirculation,
ct_clear, and ct_state / ct_zone / ct_mark / ct_label / ct tuple matches) on
connection traces (UDP, TCP handshakes with data, FIN and RST, ICMP and ICMPv6
echo, GRE, stray segments), round by round, in dp-core and in one OVS bridge."""

import random

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.generate_ct import ct_ruleset, ct_traces
from tandem.rules.ir import Ct, CtClear
from tandem.testing.ct_oracle import dp_core_vs_ovs

PORTS = [1, 2, 3, 4]


@pytest.mark.ovs
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_dp_core_tracks_connections_as_open_vswitch(seed):
    rng = random.Random(seed)
    rules = ct_ruleset(rng, 150, PORTS)
    assert all(any(k.startswith("ct_") for k, _ in r.match) or
               any(isinstance(a, (Ct, CtClear)) for a in r.apply_actions) for r in rules)  # every rule uses ct
    rounds = ct_traces(rng, [(a, b) for a in PORTS for b in PORTS if a != b], 24)
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, PORTS)
    assert not bad, "\n".join(bad[:5])
    assert n >= 70 and frames >= n // 2
