"""Golden cases of the tracker's NAT lookups and rewrites (dp-core's conntrack.rs,
ct_nat.rs and checksum.rs, as Open vSwitch 3.1's lib/conntrack.c and lib/csum.c),
each the smallest reproducer of a difference the random oracle found
(``tandem bench ct_oracle -- --nat``): every run checks the verdicts, and the frames
that leave, against both one OVS bridge and dp-core.

Ports: a packet from the client enters on 1 (on 3: other rules), from the server on
2. The verdict is the port it leaves by: 5 +new, 6 +est (original direction), 7
+est+rpl, 8 +inv."""

import pytest

from tandem.rules.packets import build_frame
from tandem.testing.ct_golden import ovs_and_dp_core as _run

VERDICTS = [
    "table=1,priority=20,ip,ct_state=+trk+new-inv,actions=output:5",
    "table=1,priority=20,ip,ct_state=+trk+est-rpl-inv,actions=output:6",
    "table=1,priority=20,ip,ct_state=+trk+est+rpl-inv,actions=output:7",
    "table=1,priority=20,ip,ct_state=+trk+inv,actions=output:8",
]
VERDICT = {5: "new", 6: "est", 7: "rpl", 8: "inv"}
CLIENT, VIP, SERVER = 0x0A000001, 0x0A000064, 0x0A000008


def _udp(src: int, dst: int, sport: int, dport: int) -> bytes:
    return build_frame(ipv4_src=src, ipv4_dst=dst, udp_src=sport, udp_dst=dport, payload=b"\x01" * 4)


TO_VIP = _udp(CLIENT, VIP, 30000, 4789)
FROM_SERVER = _udp(SERVER, CLIENT, 4789, 30000)

# (name, flows, packets (in_port, frame), verdicts)
CASES = [
    # OVS tests force on the entry its lookup meets: a reply to a translated
    # connection meets the separate un-NAT entry (in the original direction), and only
    # then follows it to the connection as a reply. So force ends nothing; the reply
    # goes on +est+rpl, translated back (ct_oracle --nat --seed 6, IPv6 TCP).
    ("force meets a reply through the un-NAT entry", [
        "table=0,priority=1,ip,in_port=1,actions=ct(commit,nat(dst=10.0.0.8),table=1)",
        "table=0,priority=1,ip,in_port=2,actions=ct(commit,force,nat(dst=10.0.0.8),table=1)",
    ], [(1, TO_VIP), (2, FROM_SERVER)], ["new", "rpl"]),
    # The server's reply, translated back to come from the VIP, is committed without
    # nat in zone 0 after a ct in zone 1 (which resets the packet's zone state): a new
    # connection whose reply tuple is the first one's original tuple. The client's next
    # packet is then both; OVS's hash chain holds the later connection first, so it is
    # that one's reply (+est+rpl, untranslated), not the first one's +est (ct_oracle --nat
    # --seed 5: a UDP flow to 10.0.0.100:4789 after nat(dst=...)).
    ("a tuple that is one connection's original and a later one's reply", [
        "table=0,priority=1,ip,actions=ct(nat,table=1)",
        "table=1,priority=30,ip,in_port=1,ct_state=+trk+new-inv,actions=ct(commit,nat(dst=10.0.0.8)),output:5",
        "table=1,priority=30,ip,in_port=2,ct_state=+trk+est+rpl-inv,actions=ct(zone=1),ct(commit),output:7",
    ], [(1, TO_VIP), (2, FROM_SERVER), (3, TO_VIP)], ["new", "rpl", "rpl"]),
]


def _verdicts(outs: list[list[tuple[int, bytes]]]) -> list[str]:
    return [",".join(VERDICT.get(p, str(p)) for p, _ in o) or "drop" for o in outs]


@pytest.mark.ovs
@pytest.mark.parametrize("name, flows, packets, want", CASES, ids=[c[0] for c in CASES])
def test_nat_lookup_verdicts_golden_against_ovs_and_dp_core(name, flows, packets, want):
    ovs, dp = _run(flows + VERDICTS, packets)
    assert _verdicts(ovs) == want, f"{name}: OVS {_verdicts(ovs)}"
    assert _verdicts(dp) == want, f"{name}: dp-core {_verdicts(dp)}"
    assert dp == ovs  # the frames too (each translated as OVS translates it)


# A source translation whose incremental checksum update carries twice: ~0x0007 +
# ~0x0001 + 0x0009 = 0x1ffff, which OVS's csum_finish folds to 1 (checksum 0xfffe; one
# fold gave 0xffff). ct_oracle --nat --tcp-odd 0.5 --seed 3.
SEGMENT = bytes.fromhex("02000000000202000000000108004500002e00004000400626c60a0000010a00000404d29c4fc604217d9d7375a4"
                        "5018ffff00070000000000000000")


@pytest.mark.ovs
def test_nat_checksum_that_carries_twice_as_open_vswitch():
    flows = ["table=0,priority=1,ip,actions=ct(commit,nat(src=10.0.0.9)),output:5"]
    ovs, dp = _run(flows, [(1, SEGMENT)])
    assert [[f[50:52].hex() for _, f in o] for o in ovs] == [["fffe"]]
    assert dp == ovs
