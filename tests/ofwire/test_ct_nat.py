"""The ``nat`` of ``ct`` in ovs-ofctl text and on the wire (rules/ct_nat.py), as
Open vSwitch 3.1 writes them, and dp-core's tracker running it (crates/dp-core/src/ct_nat.rs;
against Open vSwitch: ``tandem bench ct_oracle -- --nat``, tests/oneswitch/test_ct_oracle.py).
Golden bytes and Open vSwitch's reading of them: test_ofwire_ct.py."""

from __future__ import annotations

import struct

import pytest

from tandem.rules import ofwire as W
from tandem.rules.ct_nat import decode_nat, encode_nat, format_nat, parse_nat
from tandem.rules.ir import Ct, CtNat, FlowMod, RuleError
from tandem.rules.ofctl import parse_rule

FORMS = {
    "nat": CtNat(),
    "nat(src)": CtNat("src"),
    "nat(dst=10.0.0.1)": CtNat("dst", 0x0A000001),
    "nat(src=10.0.0.1-10.0.0.9:1000-2000,random)": CtNat("src", 0x0A000001, 0x0A000009, port_min=1000, port_max=2000,
                                                       random=True),
    "nat(dst=[::1]:80,persistent,hash)": CtNat("dst", 1, v6=True, port_min=80, persistent=True, hash=True),
    "nat(src=[fe80::1]-[fe80::2])": CtNat("src", 0xFE80 << 112 | 1, 0xFE80 << 112 | 2, True),
}


@pytest.mark.parametrize("text", sorted(FORMS))
def test_nat_text_and_wire_round_trip(text):
    n = FORMS[text]
    assert parse_nat(text) == n and format_nat(n) == text
    raw = encode_nat(n)
    assert len(raw) % 8 == 0 and struct.unpack_from("!HHIH", raw) == (0xFFFF, len(raw), 0x2320, 36)
    assert decode_nat(raw) == n


def test_one_address_or_port_is_written_as_one():
    assert format_nat(parse_nat("nat(src=10.0.0.1-10.0.0.1:5-5)")) == "nat(src=10.0.0.1:5)"
    assert format_nat(parse_nat("nat(src,persistent)")) == "nat(src)"  # (OVS keeps flags only beside a range)
    # layout: flags src|random, range ipv4 min|max|port min, then the values
    assert encode_nat(CtNat("src", 1, 2, port_min=7, random=True)) == struct.pack(
        "!HHIH2xHHIIH6x", 0xFFFF, 32, 0x2320, 36, 1 | 16, 1 | 2 | 16, 1, 2, 7)


@pytest.mark.parametrize("raw, why", [
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 3, 0), "both src and dst"),
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 1, 1), "cut short"),
    (struct.pack("!HHIH2xHHII", 0xFFFF, 24, 0x2320, 36, 1, 3, 9, 2), "below its start"),
    (struct.pack("!HHIH2xHH", 0xFFFF, 16, 0x2320, 36, 0x40, 0), "unknown flags"),
])
def test_bad_nat_bytes_are_one_error(raw, why):
    with pytest.raises(RuleError, match=why):
        decode_nat(raw)


def _udp(src: int, dst: int, sport: int, dport: int) -> bytes:
    from tandem.rules.packets import build_frame
    return build_frame(ipv4_src=src, ipv4_dst=dst, udp_src=sport, udp_dst=dport, payload=b"abcd")


def test_dp_core_translates_both_directions_of_a_connection_and_reports_snat():
    """ct(commit,nat(src=A)) rewrites the source (checksums kept valid: the frame equals
    one built with A); ct(nat) takes a reply to A back to the client; the copy a
    ct(table=T) recirculates carries +snat (and a reply +dnat) in ct_state."""
    from tandem.dataplane.switch import Switch

    sw = Switch([1, 2, 3, 4], 3, drop_malformed=False)
    sw.add_rules([parse_rule(t) for t in (
        "in_port=1,ip,actions=ct(commit,nat(src=10.0.0.9:40000),table=1)",
        "in_port=2,ip,actions=ct(nat,table=1)",
        "table=1,ct_state=+trk+snat,ip,actions=output:2",
        "table=1,ct_state=+trk+dnat+rpl,ip,actions=output:1",
        "table=1,priority=0,actions=output:4")])
    c, s, nat = 0x0A000001, 0x0A000002, 0x0A000009
    assert sw.process(1, _udp(c, s, 20000, 53)) == [(2, _udp(nat, s, 40000, 53))]
    assert sw.process(2, _udp(s, nat, 53, 40000)) == [(1, _udp(s, c, 53, 20000))]
    assert sw.process(1, _udp(c, s, 20000, 53)) == [(2, _udp(nat, s, 40000, 53))]
    # a second client to the same server would need the same translated tuple: exhausted,
    # nothing committed, the packet goes on untranslated (+new, no +snat)
    assert sw.process(1, _udp(0x0A000003, s, 20001, 53)) == [(4, _udp(0x0A000003, s, 20001, 53))]
    # a reply to the client's own address is no reply of the translated connection
    assert sw.process(2, _udp(s, c, 53, 20000)) == [(4, _udp(s, c, 53, 20000))]


def test_the_translator_and_dp_core_take_nat():
    from tandem.dataplane.convert import action_args
    from tandem.oneswitch.state import OneSwitchState
    from tandem.testing.ct_oracle import ct_topologies

    rule = parse_rule("ip,actions=ct(commit,nat(src=10.0.0.1-10.0.0.3:5-9)),output:1")
    assert W.decode_actions(W.encode_action(rule.apply_actions[0])) == [rule.apply_actions[0]]
    OneSwitchState(ct_topologies()["k3"]).apply(FlowMod("add", rule))
    assert action_args(rule.apply_actions[0])[-1] == (1, (0x0A000001, 0x0A000003), (5, 9))
    assert action_args(Ct(nat=CtNat()))[-1] == (0, None, None)

@pytest.mark.ovs
def test_an_ended_translated_connection_leaves_its_reply_tuple_invalid_as_ovs():
    """A force commit seen from the reply side ends a translated connection; Open vSwitch
    3.1 keeps its un-NAT entry until its cleanup runs, so a later reply is +inv and the
    tuple cannot be translated to again (the client's next commit is not kept)."""
    from tandem.backends.ovs_sandbox import OvsSandbox
    from tandem.testing.ct_oracle import dp_core_vs_ovs

    rules = [parse_rule(t) for t in (
        "in_port=1,ip,actions=ct(commit,nat(src=10.0.0.9:40000),table=1)",
        "in_port=2,ip,actions=ct(nat,table=1)",
        "table=1,in_port=2,ct_state=+trk+rpl,ip,actions=ct(commit,force,table=2)",
        "table=1,ct_state=+trk+inv,ip,actions=output:3",
        "table=1,priority=0,ip,actions=output:4",
        "table=2,priority=0,ip,actions=output:1")]
    c, s, nat = 0x0A000001, 0x0A000002, 0x0A000009
    rounds = [[(1, _udp(c, s, 20000, 53))], [(2, _udp(s, nat, 53, 40000))], [(2, _udp(s, nat, 53, 40000))],
              [(1, _udp(c, s, 20000, 53))]]
    with OvsSandbox() as sb:
        n, frames, bad = dp_core_vs_ovs(sb, rules, rounds, [1, 2, 3, 4])
    assert not bad, "\n".join(bad)
    from tandem.dataplane.switch import Switch

    sw = Switch([1, 2, 3, 4], 3, drop_malformed=False)
    sw.add_rules(rules)
    outs = [sw.process(p, f) for r in rounds for p, f in r]
    assert [o[0][0] for o in outs] == [4, 1, 3, 4]  # the second reply +inv; the client's retry not translated
    assert outs[3] == [(4, _udp(c, s, 20000, 53))]
