"""Switch semantics that the OVS oracle does not cover: fates and reasons,
counters, traces, flow-mod modify/delete, groups, POF fields, cache
invalidation, rule validation errors."""

import random

import pytest

from tandem.dataplane import DataplaneError, Switch
from tandem.rules.ir import (
    OFPP_CONTROLLER, OFPP_FLOOD, OFPP_IN_PORT, ApplyActions, Bucket, DecTtl, FlowMod, GotoTable, Group, GroupAction,
    Match, Output, PofAddField, PofDelField, PofField, Rule, SetField, WriteActions, WriteMetadata,
)
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame

UDP = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=1234, udp_dst=53)


def out(*ports):
    return (ApplyActions(tuple(Output(p) for p in ports)),)


def test_table_miss_drops_with_reason_and_counts():
    sw = Switch([1, 2], n_tables=2)
    fates = sw.process(1, UDP)
    assert list(fates) == []
    assert fates.drops == [("table_miss", "table 0 miss")]
    c = sw.counters()
    assert c["table.0.missed"] == 1 and c["drop.table_miss"] == 1 and c["port.1.rx_packets"] == 1


def test_priority_wins_and_table_miss_rule_is_ordinary():
    sw = Switch([1, 2, 3])
    sw.add_rule(Rule(Match.of(eth_type=0x800, ipv4_dst=(0x0A000000, 0xFF000000)), out(2), priority=10))
    sw.add_rule(Rule(Match.of(eth_type=0x800, ipv4_dst=0x0A000002), out(3), priority=20))
    sw.add_rule(Rule(Match(), (ApplyActions((Output(OFPP_CONTROLLER),)),), priority=0))
    assert [p for p, _ in sw.process(1, UDP)] == [3]
    other = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000009)
    assert [p for p, _ in sw.process(1, other)] == [2]
    arp = build_frame(eth_type=0x0806, arp_op=1, arp_spa=1, arp_tpa=2)
    f = sw.process(1, arp)
    assert list(f) == [] and f.controller == [("action", arp, 0, 0, ())]


def test_packet_in_carries_table_and_cookie_of_the_sending_rule():
    sw = Switch([1, 2], n_tables=3)
    sw.add_rule(Rule(Match(), (GotoTable(1),), table=0, cookie=0x11))
    sw.add_rule(Rule(Match.of(eth_type=0x800), (ApplyActions((Output(OFPP_CONTROLLER),)),), table=1, cookie=0xC0FFEE))
    sw.add_rule(Rule(Match.of(eth_type=0x806), (WriteActions((Output(OFPP_CONTROLLER),)), GotoTable(2)), table=1,
                     cookie=0x22))
    [pin] = sw.process(1, UDP).controller
    assert (pin.reason, pin.frame, pin.table, pin.cookie) == ("action", UDP, 1, 0xC0FFEE)
    # an action set run after a table miss: Open vSwitch 3.1's gotos have returned by then, so its
    # packet-ins name the first table and the first matched rule (measured: table 0, cookie 0x11)
    arp = build_frame(eth_type=0x0806, arp_op=1, arp_spa=1, arp_tpa=2)
    [pin] = sw.process(1, arp).controller
    assert (pin.table, pin.cookie) == (0, 0x11)
    sw2 = Switch([1, 2])
    sw2.add_rule(Rule(Match.of(eth_type=0x800), (ApplyActions((DecTtl(),)),), cookie=0x33))
    [pin] = sw2.process(1, _with_ttl(UDP, 1)).controller
    assert (pin.reason, pin.table, pin.cookie) == ("invalid_ttl", 0, 0x33)


def test_goto_metadata_and_write_actions_order():
    sw = Switch([1, 2, 3], n_tables=2)
    sw.add_rule(Rule(Match(), (WriteActions((Output(3), SetField("eth_dst", 0x0200000000AA))), WriteMetadata(7, 0xFF), GotoTable(1)), table=0))
    sw.add_rule(Rule(Match.of(metadata=7), (ApplyActions((Output(2),)),), table=1))
    fates = sw.process(1, UDP)
    # apply-actions output first (unchanged frame), then the action set (set-field before output)
    assert [p for p, _ in fates] == [2, 3]
    assert fates[0][1] == UDP
    assert fates[1][1][:6] == bytes.fromhex("0200000000aa") and fates[1][1][6:] == UDP[6:]


def test_in_port_rules_flood_and_all():
    sw = Switch([1, 2, 3, 4])
    sw.add_rule(Rule(Match.of(in_port=1), out(1), priority=5))
    sw.add_rule(Rule(Match.of(in_port=2), out(OFPP_IN_PORT), priority=5))
    sw.add_rule(Rule(Match.of(in_port=3), out(OFPP_FLOOD), priority=5))
    f = sw.process(1, UDP)
    assert list(f) == [] and f.drops[0][0] == "output_to_in_port"
    assert [p for p, _ in sw.process(2, UDP)] == [2]
    assert sorted(p for p, _ in sw.process(3, UDP)) == [1, 2, 4]


def test_dec_ttl_expiry_goes_to_controller_and_stops():
    sw = Switch([1, 2])
    sw.add_rule(Rule(Match.of(eth_type=0x800), (ApplyActions((DecTtl(), Output(2))),)))
    f = sw.process(1, _with_ttl(UDP, 1))
    assert list(f) == [] and f.controller[0][0] == "invalid_ttl"
    f = sw.process(1, _with_ttl(UDP, 9))
    assert f[0][1][22] == 8  # TTL byte decremented


def test_dec_ttl_ids_sends_packet_ins_to_id_0_only_and_pop_queue_sample_change_nothing():
    from tandem.rules.ir import PopQueue, Sample, SetQueue

    for ids, pins in (((1, 2), 0), ((0, 3), 1), ((0, 0), 2), ((), 0)):
        sw = Switch([1, 2])
        sw.add_rule(Rule(Match.of(eth_type=0x800), (ApplyActions((DecTtl(ids), Output(2))),)))
        f = sw.process(1, _with_ttl(UDP, 1))
        assert list(f) == [] and [c[0] for c in f.controller] == ["invalid_ttl"] * pins, ids
        assert sw.process(1, _with_ttl(UDP, 9))[0][1][22] == 8
    sw = Switch([1, 2])
    sw.add_rule(Rule(Match(), (ApplyActions((SetQueue(3), PopQueue(), Sample(100, 1, 2, 3, 2, 1), Output(2))),)))
    assert [(p, fr) for p, fr in sw.process(1, UDP)] == [(2, UDP)]


def _with_ttl(frame: bytes, ttl: int) -> bytes:
    from tandem.rules.packets import checksum16

    b = bytearray(frame)
    b[22] = ttl
    b[24:26] = b"\0\0"
    b[24:26] = checksum16(bytes(b[14:34])).to_bytes(2, "big")
    return bytes(b)


def test_flow_mod_modify_and_delete_semantics():
    sw = Switch([1, 2, 3])
    a = sw.add_rule(parse_rule("priority=10,ip,nw_dst=10.0.0.2,actions=output:2"))
    sw.add_rule(parse_rule("priority=5,ip,actions=output:3"))
    changed = sw.flow_mod(FlowMod("modify", parse_rule("ip,nw_dst=10.0.0.0/8,actions=output:1")))
    assert changed == [a]  # only the rule inside 10/8; "ip" alone is wider
    assert [p for p, _ in sw.process(2, UDP)] == [1]
    assert sw.flow_mod(FlowMod("delete_strict", parse_rule("priority=5,ip,actions=drop"))) != []
    assert sw.n_rules == 1
    sw.flow_mod(FlowMod("delete", Rule(Match())))
    assert sw.n_rules == 0 and sw.process(2, UDP).drops[0][0] == "table_miss"


def test_cache_is_invalidated_by_rule_changes():
    sw = Switch([1, 2, 3])
    low = sw.add_rule(Rule(Match(), out(2), priority=1))
    assert [p for p, _ in sw.process(1, UDP)] == [2]
    assert [p for p, _ in sw.process(1, UDP)] == [2]  # now cached
    sw.add_rule(Rule(Match.of(eth_type=0x800), out(3), priority=9))
    assert [p for p, _ in sw.process(1, UDP)] == [3]
    sw.remove_rule(low)
    assert sw.rule_stats(low) is None


def test_groups_all_indirect_select_and_removal():
    sw = Switch([1, 2, 3, 4])
    sw.add_group(Group(1, "all", (Bucket((Output(2),)), Bucket((SetField("eth_src", 0x02000000000F), Output(3))))))
    sw.add_group(Group(2, "indirect", (Bucket((GroupAction(1),)),)))
    sw.add_group(Group(3, "select", (Bucket((Output(2),), weight=1), Bucket((Output(4),), weight=3))))
    r = sw.add_rule(Rule(Match.of(in_port=1), (ApplyActions((GroupAction(2), Output(4))),)))
    f = sw.process(1, UDP)
    assert sorted(p for p, _ in f) == [2, 3, 4]
    assert dict(f)[4] == UDP  # a bucket works on a copy
    assert dict(f)[3][6:12] == bytes.fromhex("02000000000f")
    sw.add_rule(Rule(Match.of(in_port=3), (ApplyActions((GroupAction(3),)),)))
    rng = random.Random(1)
    seen = {}
    for _ in range(400):
        fr = build_frame(ipv4_src=rng.getrandbits(32), ipv4_dst=2, udp_src=rng.randrange(1, 65535), udp_dst=53)
        (port, _), = sw.process(3, fr)
        seen[port] = seen.get(port, 0) + 1
    assert set(seen) == {2, 4} and seen[4] > 2 * seen[2]  # weights 1:3
    assert sw.remove_group(2)
    assert sw.rule_stats(r) is None  # rules using a removed group go too


def test_pof_match_setfield_addfield_delfield():
    sw = Switch([1, 2, 3], drop_malformed=False)  # frames after AddField are no longer IP
    src = PofField(208, 32)  # IPv4 source, as in OVS-POF-TC's example
    sw.add_rule(Rule(Match.of({src: 0x0A000001}), (ApplyActions((SetField(PofField(240, 32), 0x0A020202), PofAddField(112, 32, 0x0A0A0908), Output(2))),), priority=5))
    sw.add_rule(Rule(Match.of({PofField(112, 32): 0x0A0A0908}), (ApplyActions((PofDelField(112, 32), Output(3))),), priority=9))
    (port, f), = sw.process(1, UDP)
    assert port == 2 and f[14:18] == bytes.fromhex("0a0a0908") and len(f) == len(UDP) + 4
    assert f[18 + 16:18 + 20] == bytes.fromhex("0a020202")
    (port, g), = sw.process(1, f)
    assert port == 3 and len(g) == len(UDP) and g[30:34] == bytes.fromhex("0a020202")


def test_trace_names_tables_rules_and_actions():
    sw = Switch([1, 2], n_tables=2)
    sw.add_rule(Rule(Match(), (GotoTable(1),), priority=3, cookie=0xAB))
    sw.add_rule(Rule(Match(), out(2), table=1))
    t = sw.trace(1, UDP)
    text = str(t)
    assert "table 0: rule" in text and "cookie 0xab" in text and "table 1: rule" in text and "output:2" in text
    assert [p for p, _ in t.fates] == [2]


def test_malformed_and_truncated_frames_are_dropped_with_reason():
    sw = Switch([1, 2])
    sw.add_rule(Rule(Match(), out(2), priority=0))
    assert sw.process(1, b"\x00" * 10).drops[0][0] == "malformed"
    assert "runt" in sw.process(1, b"\x00" * 10).drops[0][1]
    assert sw.process(1, UDP[:30]).drops == [("malformed", "malformed frame: ipv4")]
    assert sw.counters()["drop.malformed"] == 3
    lax = Switch([1, 2], drop_malformed=False)
    lax.add_rule(Rule(Match(), out(2), priority=0))
    assert [p for p, _ in lax.process(1, UDP[:30])] == [2]


def test_random_bytes_never_crash_the_switch():
    sw = Switch([1, 2, 3], n_tables=2)
    rng = random.Random(7)
    sw.add_rule(Rule(Match(), (ApplyActions((SetField(PofField(100, 13), 5), PofAddField(3, 5, 1), Output(2))), GotoTable(1))))
    sw.add_rule(Rule(Match(), (ApplyActions((PofDelField(0, 40), DecTtl(), Output(OFPP_FLOOD))),), table=1))
    for _ in range(2000):
        frame = rng.randbytes(rng.randrange(0, 90))
        fates = sw.process(rng.choice((1, 2, 3)), frame)
        assert len(fates) + len(fates.controller) + len(fates.drops) >= 1


@pytest.mark.parametrize("bad, words", [
    (Rule(Match.of(tcp_dst=80), out(2)), ["tcp_dst", "ip_proto=6"]),
    (Rule(Match.of(eth_type=0x800, ipv4_dst=1), (GotoTable(5),), table=1), ["goto_table:5"]),
    (Rule(Match(), (ApplyActions((GroupAction(77),)),)), ["group 77"]),
])
def test_bad_rules_are_refused_with_a_precise_message(bad, words):
    sw = Switch([1, 2], n_tables=3)
    with pytest.raises(DataplaneError) as e:
        sw.add_rule(bad)
    for w in words:
        assert w in str(e.value)
