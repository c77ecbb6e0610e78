"""ALGs and NAT in dp-core's tracker (``crates/dp-core/src/ct_alg_nat.rs``) as in Open
vSwitch 3.1's userspace conntrack, measured on a dummy bridge: a connection an ALG
expects, committed by a ct with a ``nat``, takes its parent's translation — the
address the parent's replies carry, on the side the parent translated — and not the
nat's own range (a parent without nat: a translation that changes nothing, but the
connection is ``+dnat`` / ``+snat``); ``ct(commit,alg=tftp,nat(src=...))`` expects the
data connection to the translated address and translates it back to the client.
Checked packet by packet against a live bridge."""

from __future__ import annotations

import pytest

from test_ct_alg_vs_ovs import CONVERSATIONS, conversation_against_ovs
from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.dataplane.switch import Switch
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import dp_core_vs_ovs

C, S, C_NAT = 0x0A000001, 0x0A000002, 0x0A000064
# an expected connection committed with a nat whose range it does not use
RELATED_NAT = [
    "table=0,priority=1,ip,actions=ct(table=1,nat)",
    "table=0,priority=1,ipv6,actions=ct(table=1,nat)",
    "table=1,priority=100,ct_state=+trk+new-rel,tcp,tp_dst=21,actions=ct(commit,alg=ftp),output:2",
    "table=1,priority=100,ct_state=+trk+new-rel,udp,tp_dst=69,actions=ct(commit,alg=tftp),output:2",
    "table=1,priority=90,ct_state=+trk+new+rel,ip,actions=ct(commit,nat(src=10.0.0.200)),output:3",
    "table=1,priority=100,ct_state=+trk+new-rel,tcp6,tp_dst=21,actions=ct(commit,alg=ftp),output:2",
    "table=1,priority=100,ct_state=+trk+new-rel,udp6,tp_dst=69,actions=ct(commit,alg=tftp),output:2",
    "table=1,priority=90,ct_state=+trk+new+rel,ipv6,actions=ct(commit,nat(dst=[2001:db8::99])),output:3",
    "table=1,priority=80,ct_state=+trk+est,actions=output:4",
    "table=1,priority=81,ct_state=+trk+est+snat,actions=output:5",
    "table=1,priority=81,ct_state=+trk+est+dnat,actions=output:6",
    "table=1,priority=70,ct_state=+trk+inv,actions=output:7",
    "table=1,priority=70,ct_state=+trk+new-rel,ip,actions=ct(commit),output:8",
    "table=1,priority=70,ct_state=+trk+new-rel,ipv6,actions=ct(commit),output:8",
]
# TFTP from a source-translated client: the server's data goes to the translated address
TFTP_SNAT = [
    "table=0,priority=1,udp,actions=ct(table=1,nat)",
    "table=1,priority=100,ct_state=+trk+new-rel,udp,in_port=1,tp_dst=69,actions=ct(commit,alg=tftp,nat(src=10.0.0.100)),output:2",
    "table=1,priority=90,ct_state=+trk+new+rel,udp,actions=ct(commit,nat(dst=10.0.0.222)),output:3",
    "table=1,priority=80,ct_state=+trk+est,in_port=1,actions=output:2",
    "table=1,priority=80,ct_state=+trk+est,in_port=2,actions=output:1",
    "table=1,priority=70,ct_state=+trk+new-rel,udp,actions=ct(commit),output:4",
]


def _udp(src, dst, sport, dport):
    return build_frame(ipv4_src=src, ipv4_dst=dst, udp_src=sport, udp_dst=dport, payload=b"\x00\x03\x00\x01data")


def _tftp_snat():
    # (port, frame, where OVS sent it, with which addresses)
    return [(1, _udp(C, S, 40000, 69), 2, (C_NAT, S)),
            (2, _udp(S, C_NAT, 3000, 40000), 3, (S, C)),  # expected: translated back to the client
            (1, _udp(C, S, 40000, 3000), 2, (C_NAT, S)),  # its reply: the translation undone
            (2, _udp(S, C_NAT, 3000, 40000), 1, (S, C)),
            (2, _udp(S, C, 3001, 40000), 4, (S, C))]  # to the untranslated address: nothing expected


def _addrs(frame: bytes) -> tuple[int, int]:
    return int.from_bytes(frame[26:30], "big"), int.from_bytes(frame[30:34], "big")


def test_dp_core_translates_a_tftp_data_connection_as_its_parent():
    sw = Switch([1, 2, 3, 4], 2, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in TFTP_SNAT])
    for i, (port, frame, want_port, want) in enumerate(_tftp_snat()):
        out = sw.process(port, frame)
        assert [(p, _addrs(f)) for p, f in out] == [(want_port, want)], f"packet {i}"


def test_dp_core_gives_an_expected_connection_its_parents_translation_not_the_nats_range():
    sw = Switch(list(range(1, 10)), 2, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in RELATED_NAT])
    for label, frame, _ in CONVERSATIONS["ftp over IPv4"]():
        for p, f in sw.process(1, frame):
            if p == 3:  # (committed with nat(src=10.0.0.200): left as it came, +dnat)
                assert f == frame, label


@pytest.mark.skipif(not ovs_available(), reason="needs Open vSwitch (make test installs it)")
@pytest.mark.parametrize("name", sorted(CONVERSATIONS) + ["tftp snat"])
def test_dp_core_alg_nat_against_ovs(name):
    if name != "tftp snat":
        rounds, (n, frames, bad) = conversation_against_ovs(RELATED_NAT, name)
    else:
        rounds = [[(p, f)] for p, f, _, _ in _tftp_snat()]
        with OvsSandbox() as sb:
            sb.appctl("upcall/disable-megaflows")
            n, frames, bad = dp_core_vs_ovs(sb, [parse_rule(f) for f in TFTP_SNAT], rounds, list(range(1, 10)), n_tables=2)
    assert n == len(rounds) and frames >= len(rounds) - 2 and bad == []
