"""``ct(commit,alg=ftp|tftp)`` in dp-core's tracker (``crates/dp-core/src/ct_alg.rs``) as in
Open vSwitch 3.1's userspace conntrack: FTP control messages (PORT / 227 over IPv4, EPRT /
EXTENDED PASSIVE over IPv6) and TFTP requests expect data connections, which are
``+new+rel`` (committed: the parent's mark, kept against the commit's own exec, and
``+est+rel`` after); a malformed message, or one naming another address, is ``+inv``
on top of its state. Each packet's verdict is read from the port table 1 sends it to;
the expected ports are what one OVS bridge did with the same frames (measured), and
dp-core must do the same, packet by packet, against a live bridge too. The random
oracle is ``tandem bench ct_oracle -- --alg P``."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox, ovs_available
from tandem.dataplane.switch import Switch
from tandem.rules.generate_ct import _tcp_frame
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.ct_oracle import dp_core_vs_ovs

SYN, ACK, PSH = 0x02, 0x10, 0x08
C, S, OTHER = 0x0A000001, 0x0A000002, 0x0A000003
C6, S6 = 0x20010DB8 << 96 | 1, 0x20010DB8 << 96 | 2
NEW, REL, REL_MARK7, REL_OTHER, EST, INV, EST_INV = 2, 3, 4, 5, 6, 7, 8
FLOWS = [
    "table=0,priority=1,ip,actions=ct(table=1)",
    "table=0,priority=1,ipv6,actions=ct(table=1)",
    "table=1,priority=100,ct_state=+trk+new-rel,tcp,tp_dst=21,actions=ct(commit,exec(set_field:7->ct_mark),alg=ftp),output:2",
    "table=1,priority=100,ct_state=+trk+new-rel,tcp6,tp_dst=21,actions=ct(commit,exec(set_field:7->ct_mark),alg=ftp),output:2",
    "table=1,priority=100,ct_state=+trk+new-rel,udp,tp_dst=69,actions=ct(commit,exec(set_field:7->ct_mark),alg=tftp),output:2",
    "table=1,priority=100,ct_state=+trk+new-rel,udp6,tp_dst=69,actions=ct(commit,exec(set_field:7->ct_mark),alg=tftp),output:2",
    "table=1,priority=120,ct_state=+trk+new-rel,udp,tp_dst=5000,actions=ct(commit,alg=tftp),output:2",
    "table=1,priority=90,ct_state=+trk+new-rel,ip,actions=ct(commit),output:2",
    "table=1,priority=90,ct_state=+trk+new-rel,ipv6,actions=ct(commit),output:2",
    "table=1,priority=96,ct_state=+trk+new+rel,tcp,tp_src=20,actions=output:3",  # (not committed)
    # committed with a mark of its own: an expected connection keeps its parent's
    "table=1,priority=95,ct_state=+trk+new+rel,ip,actions=ct(commit,exec(set_field:9->ct_mark)),output:3",
    "table=1,priority=95,ct_state=+trk+new+rel,ipv6,actions=ct(commit),output:3",
    "table=1,priority=80,ct_state=+trk+est-rel,actions=output:6",
    "table=1,priority=80,ct_state=+trk+est+rel,ct_mark=7,actions=output:4",
    "table=1,priority=79,ct_state=+trk+est+rel,actions=output:5",
    "table=1,priority=70,ct_state=+trk+inv,actions=output:7",
    "table=1,priority=110,ct_state=+trk+inv+est,actions=output:8",
    # an expected connection reports its parent's original tuple (ct_tp_dst=21)
    "table=1,priority=130,ct_state=+trk+est+rel-inv,ct_nw_proto=6,ct_tp_dst=21,tcp,tp_src=2020,actions=output:9",
]


class _Conv:
    """A TCP control connection's segments with the sequence numbers a stack keeps."""

    def __init__(self, v6: bool, c: int, s: int, cport: int, sport: int = 21) -> None:
        self.v6, self.c, self.s, self.cport, self.sport = v6, c, s, cport, sport
        self.seq = {"c": 1000, "s": 5000}
        self.out: list[tuple[str, bytes, int]] = []

    def send(self, label: str, who: str, flags: int, msg: bytes, want: int) -> None:
        other = "s" if who == "c" else "c"
        a = (self.c, self.s, self.cport, self.sport) if who == "c" else (self.s, self.c, self.sport, self.cport)
        self.out.append((label, _tcp_frame(self.v6, *a, self.seq[who], self.seq[other], flags, msg), want))
        self.seq[who] += len(msg) + (1 if flags & SYN else 0)

    def handshake(self) -> None:
        self.send("SYN", "c", SYN, b"", NEW)
        self.send("SYN+ACK", "s", SYN | ACK, b"", EST)
        self.send("ACK", "c", ACK, b"", EST)


def _tcp(v6, src, dst, sport, dport, flags=SYN, seq=9000, ack=0):
    return _tcp_frame(v6, src, dst, sport, dport, seq, ack, flags)


def _ftp_v4() -> list[tuple[str, bytes, int]]:
    k = _Conv(False, C, S, 40000)
    k.handshake()
    k.send("PORT", "c", PSH | ACK, b"PORT 10,0,0,1,156,64\r\n", EST)
    k.send("200", "s", PSH | ACK, b"200 OK\r\n", EST)
    k.out += [("data SYN from 20 (not committed)", _tcp(False, S, C, 20, 40000), REL),
              ("again", _tcp(False, S, C, 20, 40000), REL),
              ("data SYN from 2020", _tcp(False, S, C, 2020, 40000, seq=9100), REL),
              ("its SYN+ACK: +est+rel, the parent's mark 7", _tcp(False, C, S, 40000, 2020, SYN | ACK, 300, 9101), REL_MARK7),
              ("its ACK: the parent's tuple", _tcp(False, S, C, 2020, 40000, ACK, 9101, 301), 9),
              ("data SYN from 3030 (expectations stay)", _tcp(False, S, C, 3030, 40000, seq=9100), REL),
              ("data SYN to another port", _tcp(False, S, C, 3030, 40001, seq=9100), NEW)]
    k.send("PASV", "c", PSH | ACK, b"PASV\r\n", EST)
    k.send("227", "s", PSH | ACK, b"227 Entering Passive Mode (10,0,0,2,117,48)\r\n", EST)
    k.out += [("passive data SYN", _tcp(False, C, S, 41000, 30000, seq=100), REL),
              ("passive data SYN from a third host", _tcp(False, OTHER, S, 41000, 30000, seq=100), NEW)]
    k.send("PORT naming another address", "c", PSH | ACK, b"PORT 10,0,0,9,156,64\r\n", EST_INV)
    k.send("PORT cut short", "c", PSH | ACK, b"PORT 10,0,0,1,156\r\n", EST_INV)
    k.send("port without CRLF (last octet unread)", "c", PSH | ACK, b"port 10,0,0,1,1,2", EST_INV)
    k.send("EPRT over IPv4: nothing", "c", PSH | ACK, b"EPRT |1|10.0.0.1|5003|\r\n", EST)
    k.send("227 naming the client", "s", PSH | ACK, b"227 x (10,0,0,1,1,1)\r\n", EST_INV)
    k.send("227 from the client's side", "c", PSH | ACK, b"227 x (10,0,0,2,1,2)\r\n", EST)
    k.out += [("data to 5003 (nothing expected it)", _tcp(False, S, C, 20, 5003), NEW),
              ("data from the server to 258 (the 227 the client sent expects it)", _tcp(False, S, C, 999, 258, seq=100), REL),
              ("data from the client to 258", _tcp(False, C, S, 998, 258, seq=100), NEW)]
    return k.out


def _ftp_v6() -> list[tuple[str, bytes, int]]:
    k = _Conv(True, C6, S6, 40000)
    k.handshake()
    k.send("EPRT", "c", PSH | ACK, b"EPRT |2|2001:db8::1|5000|\r\n", EST)
    k.out.append(("data SYN to 5000", _tcp(True, S6, C6, 20, 5000), REL))
    k.send("EPSV", "c", PSH | ACK, b"EPSV\r\n", EST)
    k.send("229", "s", PSH | ACK, b"229 Entering Extended Passive Mode (|||6000|)\r\n", EST)
    k.out.append(("data SYN to 6000", _tcp(True, C6, S6, 41000, 6000, seq=100), REL))
    k.send("PORT over IPv6: nothing", "c", PSH | ACK, b"PORT 10,0,0,1,156,64\r\n", EST)
    k.send("EPRT naming another address", "c", PSH | ACK, b"EPRT |2|2001:db8::9|5001|\r\n", EST_INV)
    k.send("EPRT of family 1", "c", PSH | ACK, b"EPRT |1|10.0.0.1|5002|\r\n", EST_INV)
    k.send("EPRT port 70000", "c", PSH | ACK, b"EPRT |2|2001:db8::1|70000|\r\n", EST_INV)
    k.send("229 in lower case", "s", PSH | ACK, b"229 extended passive (|||6001|)\r\n", EST)
    k.out.append(("data SYN to 6001", _tcp(True, C6, S6, 41000, 6001, seq=100), REL))
    k.send("200 EXTENDED PASSIVE", "s", PSH | ACK, b"200 EXTENDED PASSIVE (|||6002|)\r\n", EST)
    k.out.append(("data SYN to 6002", _tcp(True, C6, S6, 41000, 6002, seq=100), REL))
    return k.out


def _udp(src, dst, sport, dport, v6=False):
    ip = {"ipv6_src": src, "ipv6_dst": dst} if v6 else {"ipv4_src": src, "ipv4_dst": dst}
    return build_frame(**ip, udp_src=sport, udp_dst=dport, payload=b"\x00\x01ab\x00")


def _tftp() -> list[tuple[str, bytes, int]]:
    return [("RRQ", _udp(C, S, 40000, 69), NEW),
            ("data from 3000", _udp(S, C, 3000, 40000), REL),
            ("ack to 3000: the parent's mark", _udp(C, S, 40000, 3000), REL_MARK7),
            ("RRQ again", _udp(C, S, 40000, 69), NEW),
            ("a reply from 69", _udp(S, C, 69, 40000), EST),
            ("data from 3001", _udp(S, C, 3001, 40000), REL),
            ("from the client to its own port", _udp(C, S, 3002, 40000), NEW),
            ("IPv6 RRQ", _udp(C6, S6, 40000, 69, True), NEW),
            ("IPv6 data from 3000", _udp(S6, C6, 3000, 40000, True), REL),
            # alg=tftp on another port: every UDP packet through that ct is a control packet
            ("to 5000 with alg=tftp", _udp(C, S, 40005, 5000), NEW),
            ("reply from 5000", _udp(S, C, 5000, 40005), EST),
            ("from 4000 to the client's port", _udp(S, C, 4000, 40005), REL)]


CONVERSATIONS = {"ftp over IPv4": _ftp_v4, "ftp over IPv6": _ftp_v6, "tftp": _tftp}


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_dp_core_alg_verdicts_are_the_measured_ones(name):
    sw = Switch(list(range(1, 10)), 2, drop_malformed=False)
    sw.add_rules([parse_rule(f) for f in FLOWS])
    for label, frame, want in CONVERSATIONS[name]():
        got = [p for p, _ in sw.process(1, frame)]
        assert got == [want], f"{label}: dp-core sent it to {got}, OVS to [{want}]"
    conv = CONVERSATIONS[name]()
    counters = sw.counters()  # (each malformed message met one ct; each expected packet at least one)
    assert counters["ct.alg.invalid"] == sum(want == EST_INV for _, _, want in conv)
    assert counters["ct.alg.new_related"] >= sum(want == REL for _, _, want in conv) > 0


@pytest.mark.skipif(not ovs_available(), reason="needs Open vSwitch (make test installs it)")
@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
def test_dp_core_alg_conversations_against_ovs(name):
    rounds, (n, frames, bad) = conversation_against_ovs(FLOWS, name)
    assert n == len(rounds) and frames >= len(rounds) and bad == []


def conversation_against_ovs(flows: list[str], name: str, sb: OvsSandbox | None = None):
    """One of CONVERSATIONS, entering on port 1, through ``flows`` in dp-core and one OVS
    bridge (megaflows off): its rounds and ``dp_core_vs_ovs``'s answer."""
    rounds = [[(1, frame)] for _, frame, _ in CONVERSATIONS[name]()]
    with OvsSandbox() if sb is None else nullcontext(sb) as box:
        box.appctl("upcall/disable-megaflows")
        return rounds, dp_core_vs_ovs(box, [parse_rule(f) for f in flows], rounds, list(range(1, 10)), n_tables=2)
