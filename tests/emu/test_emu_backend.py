"""The emu backend: OneSwitch's physical switches as emulated devices."""

import asyncio

import pytest

from tandem.backends.base import BackendError, FlowOp, GroupOp, PacketIn, PhysicalLayout, PhysicalLink
from tandem.backends.factory import make_backend
from tandem.rules.ir import (
    OFPP_CONTROLLER, ApplyActions, Bucket, GotoTable, Group, GroupAction, Match, Output, PushVlan, Rule, SetField,
)

LAYOUT = PhysicalLayout({"host": (1, 2), "snic": (1, 2)}, (PhysicalLink("host", 100, "snic", 100),))


def frame(dst_port: int = 80) -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2")
                 / UDP(sport=1234, dport=dst_port) / (b"x" * 30))


def out(port: int) -> tuple:
    return (ApplyActions((Output(port),)),)


@pytest.fixture
def backend():
    b = make_backend("emu")
    asyncio.run(b.start(LAYOUT))
    yield b
    asyncio.run(b.close())


def test_rules_forward_across_pcie_with_rewrites_and_tables(backend):
    asyncio.run(backend.apply([
        FlowOp("host", "add", Rule(Match.of(in_port=1), (GotoTable(1),))),
        FlowOp("host", "add", Rule(Match.of(eth_type=0x800, udp_dst=80, ip_proto=17),
                                   (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1007), Output(100))),), table=1)),
        FlowOp("snic", "add", Rule(Match.of(in_port=100, vlan_vid=0x1007), out(2))),
    ]))
    backend.inject("host", 1, frame(80))
    backend.inject("host", 1, frame(81))  # table 1 miss on the host
    backend.run_for(1e-3)
    got = backend.take_output("snic", 2)
    assert len(got) == 1
    assert got[0][12:16] == bytes.fromhex("81000007")  # the VLAN pushed on the host arrived on the sNIC
    assert backend.take_output("snic", 2) == []  # read once
    stats = {s.rule.table: s.packet_count for s in asyncio.run(backend.flow_stats("host"))}
    assert stats == {0: 2, 1: 1}
    ports = {p.port_no: p for p in asyncio.run(backend.port_stats("snic"))}
    assert ports[100].rx_packets == 1 and ports[2].tx_packets == 1


def test_crossing_pcie_takes_the_modelled_time(backend):
    asyncio.run(backend.apply([FlowOp("host", "add", Rule(Match.of(in_port=1), out(100))),
                               FlowOp("snic", "add", Rule(Match.of(in_port=100), out(2)))]))
    backend.inject("host", 1, frame())
    backend.run_for(10e-6)  # less than the 13 µs crossing
    assert backend.take_output("snic", 2) == []
    backend.run_for(10e-6)
    assert len(backend.take_output("snic", 2)) == 1


def test_packet_in_and_packet_out(backend):
    seen: list = []
    backend.subscribe(seen.append)
    asyncio.run(backend.apply([FlowOp("host", "add", Rule(Match.of(in_port=2), out(OFPP_CONTROLLER)))]))
    backend.inject("host", 2, frame())
    backend.run_for(1e-6)
    assert seen == [PacketIn("host", 2, frame(), 1)]
    asyncio.run(backend.packet_out("snic", OFPP_CONTROLLER, [Output(1)], frame()))
    backend.run_for(1e-6)
    assert backend.take_output("snic", 1) == [frame()]


def test_packet_in_names_the_table_and_cookie_of_the_sending_rule(backend):
    # Controllers such as Faucet ignore packet-ins whose cookie is not theirs.
    seen: list = []
    backend.subscribe(seen.append)
    asyncio.run(backend.apply([
        FlowOp("snic", "add", Rule(Match.of(in_port=1), (GotoTable(3),), cookie=0x5)),
        FlowOp("snic", "add", Rule(Match(), (ApplyActions((Output(OFPP_CONTROLLER),)),), table=3, cookie=0xFA0C37)),
    ]))
    backend.inject("snic", 1, frame())
    backend.run_for(1e-6)
    assert seen == [PacketIn("snic", 1, frame(), 1, table=3, cookie=0xFA0C37)]


def test_groups_delete_and_errors(backend):
    g = Group(5, "all", (Bucket((Output(1),)), Bucket((Output(2),))))
    asyncio.run(backend.apply([GroupOp("snic", "add", g),
                               FlowOp("snic", "add", Rule(Match(), (ApplyActions((GroupAction(5),)),)))]))
    assert asyncio.run(backend.groups("snic")) == [g]
    backend.inject("snic", 100, frame())
    backend.run_for(1e-6)
    assert len(backend.take_output("snic", 1)) == len(backend.take_output("snic", 2)) == 1
    asyncio.run(backend.apply([FlowOp("snic", "delete", Rule(Match()))]))
    assert asyncio.run(backend.flow_stats("snic")) == []
    asyncio.run(backend.clear())
    assert asyncio.run(backend.groups("snic")) == []
    with pytest.raises(BackendError, match="unknown switch 'nope'"):
        asyncio.run(backend.apply([FlowOp("nope", "add", Rule())]))
    with pytest.raises(BackendError, match="switch snic: .*group"):
        asyncio.run(backend.apply([FlowOp("snic", "add", Rule(Match(), (ApplyActions((GroupAction(99),)),)))]))


def test_table_capacity_refuses_with_table_full():
    b = make_backend("emu", table_capacity={"snic": 2})
    asyncio.run(b.start(LAYOUT))
    try:
        rules = [Rule(Match.of(in_port=100, eth_type=0x800, udp_dst=p, ip_proto=17), out(1)) for p in (1, 2, 3)]
        asyncio.run(b.apply([FlowOp("snic", "add", r) for r in rules[:2]]))
        asyncio.run(b.apply([FlowOp("snic", "add", rules[0])]))  # replacing an entry needs no room
        with pytest.raises(BackendError, match="flow table full") as e:
            asyncio.run(b.apply([FlowOp("snic", "add", rules[2])]))
        assert e.value.of_error == (5, 1)
        asyncio.run(b.apply([FlowOp("host", "add", r) for r in rules]))  # the host has no limit
    finally:
        asyncio.run(b.close())


def test_the_packet_mark_crosses_pcie_with_the_frame_and_selects_the_delivery(backend):
    """OneSwitch's flow id: set on the host, matched on the sNIC, never in the frame's bytes."""
    DELIVERY_TABLE = 3  # any table: the backend is tested here, not OneSwitch's layout (table 0, docs/oneswitch.md §3)
    asyncio.run(backend.apply([
        FlowOp("host", "add", Rule(Match.of(in_port=1, udp_dst=80, ip_proto=17, eth_type=0x800),
                                   (ApplyActions((PushVlan(), SetField("vlan_vid", 0x1007), SetField("pkt_mark", 7),
                                                  Output(100))),))),
        FlowOp("host", "add", Rule(Match.of(in_port=1, udp_dst=81, ip_proto=17, eth_type=0x800),
                                   (ApplyActions((SetField("pkt_mark", 8), Output(100))),))),
        FlowOp("snic", "add", Rule(Match.of(in_port=100), (GotoTable(DELIVERY_TABLE),), priority=1)),
        FlowOp("snic", "add", Rule(Match.of(pkt_mark=7), out(2), table=DELIVERY_TABLE)),
        FlowOp("snic", "add", Rule(Match.of(pkt_mark=8), out(1), table=DELIVERY_TABLE)),
    ]))
    f80, f81 = frame(80), frame(81)
    backend.inject("host", 1, f80)
    backend.inject("host", 1, f81)
    backend.run_for(1e-3)
    to2, to1 = backend.take_output("snic", 2), backend.take_output("snic", 1)
    assert to2 == [f80[:12] + bytes.fromhex("81000007") + f80[12:]]  # only the tenant's own tag was added
    assert to1 == [f81]  # unchanged bytes
