"""Golden connection-tracking cases run on both sides: one OVS bridge and dp-core
(``Switch``), packet by packet. Used by tests/dataplane/test_ct_nat_golden.py and
test_ct_related_golden.py."""

from __future__ import annotations

from typing import Sequence

Outputs = list[list[tuple[int, bytes]]]


def ovs_and_dp_core(flows: Sequence[str], packets: Sequence[tuple[int, bytes]], n_ports: int = 9) -> tuple[Outputs, Outputs]:
    """Each packet's outputs (port, frame), sorted, from one OVS bridge and from dp-core,
    both with ``flows`` (ovs-ofctl text) on ports 1..``n_ports``; each packet settles
    before the next goes in."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.dataplane.switch import Switch
    from tandem.rules.ofctl import parse_rule
    from tandem.testing.ovs_flows import add_rules

    ports = range(1, n_ports + 1)
    rules = [parse_rule(f) for f in flows]
    sw = Switch(ports, 3, drop_malformed=False)
    sw.add_rules(rules)
    ovs: Outputs = []
    dp: Outputs = []
    with OvsSandbox() as sb:
        sb.add_bridge("brgold", ports)
        add_rules(sb, "brgold", rules)
        for port, frame in packets:
            dp.append(sorted(sw.process(port, frame)))
            sb.inject("brgold", port, [frame])
            sb.settle(quiet_s=0.05, timeout_s=30)
            ovs.append(sorted((p, f) for p in ports for f in sb.take_output("brgold", p)))
    return ovs, dp
