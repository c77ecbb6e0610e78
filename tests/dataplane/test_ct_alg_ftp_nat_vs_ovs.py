"""``ct(commit,alg=ftp,nat(...))`` in dp-core's tracker (``crates/dp-core/src/ct_alg_ftp_nat.rs``) as
in Open vSwitch 3.1's userspace conntrack, measured on a dummy bridge: under a ct with a ``nat``
the address in PORT / 227 / EPRT is rewritten to the translated one (the frame grows or
shrinks), the size change is the connection's sequence skew (the sender's later sequence
numbers raised by it, its peer's acknowledgements lowered), checksums follow; in a copy the
datapath made (a recirculation that is not its last action, a datapath clone) the message
stays as it is.
The numbers below are what the bridge sent (ovs-vswitchd 3.1.0); each conversation is also
replayed against a live bridge, packet by packet."""

from __future__ import annotations

import struct

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.dataplane.switch import Switch
from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.ofctl import parse_rule
from tandem.testing.ct_oracle import dp_core_vs_ovs

SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S, C_NAT, VIP = 0x0A000001, 0x0A000002, 0x0A000064, 0x0A000032
C6, S6, C6_NAT = 0x20010DB8 << 96 | 1, 0x20010DB8 << 96 | 2, 0x20010DB8 << 96 | 0x100


def _flows(commit: str, ip: str = "ip", tcp: str = "tcp", table0: str = "ct(table=1,nat)", est: str = "") -> list[str]:
    return [
        f"table=0,priority=1,{ip},actions={table0}",
        f"table=1,priority=100,ct_state=+trk+new-rel,{tcp},tp_dst=21,in_port=1,actions={commit},output:2",
        f"table=1,priority=90,ct_state=+trk+new+rel,{ip},actions=ct(commit,nat),output:3",
        f"table=1,priority=80,ct_state=+trk+est,{ip},in_port=1,actions={est}output:2",
        f"table=1,priority=80,ct_state=+trk+est,{ip},in_port=2,actions={est}output:1",
        "table=1,priority=70,ct_state=+trk+inv,actions=output:4",
    ]


class _Conv:
    """A control connection's segments as the two stacks send them (client on port 1)."""

    def __init__(self, v6: bool, c: int, s_seen: int, s: int, c_seen: int) -> None:
        self.v6, self.c, self.s_seen, self.s, self.c_seen = v6, c, s_seen, s, c_seen
        self.seq = {"c": 1000, "s": 5000}
        self.frames: list[tuple[int, bytes]] = []

    def send(self, who: str, flags: int, msg: bytes = b"") -> None:
        other = "s" if who == "c" else "c"
        a = (self.c, self.s_seen, 40000, 21) if who == "c" else (self.s, self.c_seen, 21, 40000)
        self.frames.append((1 if who == "c" else 2, _tcp_frame(self.v6, *a, self.seq[who], self.seq[other], flags, msg)))
        self.seq[who] += len(msg) + (1 if flags & SYN else 0)

    def talk(self, *msgs: tuple[str, bytes]) -> list[tuple[int, bytes]]:
        self.send("c", SYN)
        self.send("s", SYN | ACK)
        self.send("c", ACK)
        for who, m in msgs:
            self.send(who, PSH | ACK, m)
        return self.frames


def _seen(frame: bytes) -> tuple[int, int, bytes, bool]:
    """(seq, ack, payload, TCP checksum right) of an output frame."""
    v6 = frame[12:14] == b"\x86\xdd"
    l3 = 14
    if v6:
        l4, end = l3 + 40, l3 + 40 + struct.unpack_from("!H", frame, l3 + 4)[0]
        pseudo = frame[l3 + 8:l3 + 40] + struct.pack("!IxxxB", end - l4, 6)
    else:
        l4, end = l3 + (frame[l3] & 15) * 4, l3 + struct.unpack_from("!H", frame, l3 + 2)[0]
        pseudo = frame[l3 + 12:l3 + 20] + struct.pack("!BBH", 0, 6, end - l4)
    seg = frame[l4:end]
    data = pseudo + seg + bytes(len(seg) % 2)
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    seq, ack = struct.unpack_from("!II", seg, 4)
    return seq, ack, seg[(seg[12] >> 4) * 4:], total == 0xFFFF


# name -> (flows, frames, what the bridge sent for each message: (port, seq, ack, payload))
CASES = {
    "snat ipv4": (_flows("ct(commit,alg=ftp,nat(src=10.0.0.100))"), _Conv(False, C, S, S, C_NAT).talk(
        ("c", b"PORT 10,0,0,1,156,64\r\n"), ("s", b"200 OK\r\n"), ("c", b"LIST\r\n"), ("s", b"150 here\r\n")), [
        (2, 1001, 5001, b"PORT 10,0,0,100,156,64\r\n"), (1, 5001, 1021, b"200 OK\r\n"),
        (2, 1025, 5009, b"LIST\r\n"), (1, 5009, 1027, b"150 here\r\n")]),
    "snat ipv4, the translated address named, then a passive reply": (
        _flows("ct(commit,alg=ftp,nat(src=10.0.0.100))"), _Conv(False, C, S, S, C_NAT).talk(
            ("c", b"PORT 10,0,0,100,156,64\r\n"), ("s", b"200 OK\r\n"), ("c", b"PORT 10,0,0,1,156,65\r\n"),
            ("s", b"227 x (10,0,0,2,1,1)\r\n"), ("c", b"LIST\r\n"), ("s", b"150 here\r\n")), [
            (2, 1001, 5001, b"PORT 10,0,0,100,156,64\r\n"), (1, 5001, 1025, b"200 OK\r\n"),
            (2, 1025, 5009, b"PORT 10,0,0,100,156,65\r\n"), (1, 5009, 1045, b"227 x (10,0,0,2,1,1)\r\n"),
            (2, 1049, 5031, b"LIST\r\n"), (1, 5031, 1051, b"150 here\r\n")]),
    "dnat ipv4 passive": (_flows("ct(commit,alg=ftp,nat(dst=10.0.0.2))"), _Conv(False, C, VIP, S, C).talk(
        ("s", b"227 Entering Passive Mode (10,0,0,2,117,48)\r\n"), ("c", b"PORT 10,0,0,1,1,2\r\n"),
        ("s", b"227 x (10,0,0,50,1,1)\r\n"), ("c", b"LIST\r\n"), ("s", b"150 here\r\n")), [
        (1, 5001, 1001, b"227 Entering Passive Mode (10,0,0,50,117,48)\r\n"), (2, 1001, 5045, b"PORT 10,0,0,1,1,2\r\n"),
        (1, 5047, 1020, b"227 x (10,0,0,50,1,1)\r\n"), (2, 1020, 5068, b"LIST\r\n"), (1, 5070, 1026, b"150 here\r\n")]),
    "snat ipv6, an address written out": (
        _flows("ct(commit,alg=ftp,nat(src=[2001:db8::100]))", "ipv6", "tcp6"), _Conv(True, C6, S6, S6, C6_NAT).talk(
            ("c", b"EPRT |2|2001:db8::1|5000|\r\n"), ("s", b"200 OK\r\n"), ("c", b"EPRT |2|2001:db8::100|5001|\r\n"),
            ("s", b"229 Entering Extended Passive Mode (|||6000|)\r\n"), ("c", b"EPRT |2|2001:db8:0:0:0:0:0:1|5002|\r\n"),
            ("c", b"LIST\r\n"), ("s", b"150 here\r\n")), [
            (2, 1001, 5001, b"EPRT |2|2001:db8::100|5000|\r\n"), (1, 5001, 1026, b"200 OK\r\n"),
            (2, 1030, 5009, b"EPRT |2|2001:db8::100|5001|\r\n"),
            (1, 5009, 1055, b"229 Entering Extended Passive Mode (|||6000|)\r\n"),
            (2, 1059, 5056, b"EPRT |2|2001:db8::100|5002|\r\n"), (2, 1088, 5056, b"LIST\r\n"), (1, 5056, 1104, b"150 here\r\n")]),
}
# the ct with the nat runs on the copy a recirculation not last in the datapath makes: no room
NO_ROOM = _flows("ct(commit,alg=ftp,nat(src=10.0.0.100))", table0="ct(table=1),output:9", est="ct(nat),")
# ... or on the packet itself, recirculated by a written ct (a final action): room
WRITTEN = _flows("ct(commit,alg=ftp,nat(src=10.0.0.100))", table0="write_actions(ct(table=1))", est="ct(nat),")
# ... or in a datapath clone (a clone holding a ct, not the last action): no room
IN_CLONE = [f.replace("actions=ct(nat),output:2", "actions=clone(ct(nat),output:2),output:9")
            for f in _flows("ct(commit,alg=ftp,nat(src=10.0.0.100))", table0="ct(table=1)", est="ct(nat),")]


def _run(flows, frames):
    sw = Switch(list(range(1, 10)), 2, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in flows])
    return [[(p, f) for p, f in sw.process(port, frame) if p != 9] for port, frame in frames]


@pytest.mark.parametrize("name", sorted(CASES))
def test_dp_core_rewrites_and_shifts_as_ovs_did(name):
    flows, frames, want = CASES[name]
    outs = _run(flows, frames)[3:]  # (after the handshake)
    got = []
    for out in outs:
        assert len(out) == 1, out
        port, frame = out[0]
        seq, ack, payload, csum_ok = _seen(frame)
        assert csum_ok
        got.append((port, seq, ack, payload))
    assert got == want


def test_a_copy_without_room_keeps_its_message_but_the_numbers_shift():
    frames = _Conv(False, C, S, S, C_NAT).talk(("c", b"PORT 10,0,0,1,156,64\r\n"), ("s", b"200 OK\r\n"))
    outs = _run(NO_ROOM, frames)
    assert _seen(outs[3][0][1])[2] == b"PORT 10,0,0,1,156,64\r\n" and outs[3][0][1][26:30] == bytes([10, 0, 0, 100])
    assert _seen(outs[4][0][1])[:2] == (5001, 1023)  # (no skew: nothing to take back)
    outs = _run(WRITTEN, frames)
    assert _seen(outs[3][0][1])[2] == b"PORT 10,0,0,100,156,64\r\n" and _seen(outs[4][0][1])[:2] == (5001, 1021)
    outs = _run(IN_CLONE, frames)
    assert _seen(outs[3][0][1])[2] == b"PORT 10,0,0,1,156,64\r\n"


@pytest.mark.skipif(not ovs_available(), reason="needs Open vSwitch (make test installs it)")
@pytest.mark.parametrize("name", sorted(CASES) + ["no room", "written", "in a clone"])
def test_dp_core_ftp_nat_against_ovs(name):
    if name in ("no room", "written", "in a clone"):
        flows = {"no room": NO_ROOM, "written": WRITTEN, "in a clone": IN_CLONE}[name]
        frames = _Conv(False, C, S, S, C_NAT).talk(("c", b"PORT 10,0,0,1,156,64\r\n"), ("s", b"200 OK\r\n"), ("c", b"LIST\r\n"))
    else:
        flows, frames, _ = CASES[name]
    with OvsSandbox() as sb:
        sb.appctl("upcall/disable-megaflows")
        n, out, bad = dp_core_vs_ovs(sb, [parse_rule(f) for f in flows], [[f] for f in frames], list(range(1, 10)), n_tables=2)
    assert n == len(frames) and out >= len(frames) and bad == []
