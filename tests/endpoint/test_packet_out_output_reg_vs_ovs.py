"""A PACKET_OUT's ``output_reg`` from fields other than registers, and from a register holding
CONTROLLER's number (oneswitch/endpoint_output_reg.py), side by side: one plain Open vSwitch
3.1 bridge and OneSwitch over OVS bridges (1 on the host, 2 and 4 on snic0, 3 on snic1), the
same PACKET_OUTs on both; the frames each port gets and the packet-ins compared byte for byte.

Measured on one bridge first: ``output:NXM_OF_ETH_SRC[0..15]`` of a frame from 02:00:00:00:00:03
sends to port 3, ``set_field:4->metadata,output:OXM_OF_METADATA[0..15]`` to port 4,
``output:NXM_OF_IN_PORT[]`` nothing (the in_port), ``output:NXM_OF_UDP_DST[0..2]`` of a TCP
frame is ``BAD_ACTION/MATCH_INCONSISTENT`` (test_refusals_vs_ovs.py holds that one)."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules.ir import OFPP_CONTROLLER

from test_packet_out_whole_vs_ovs import _run

pytestmark = [pytest.mark.ovs]

# (in_port, actions, what the plain bridge does with it)
CASES = [
    (1, "set_field:3->pkt_mark,output:NXM_NX_PKT_MARK[0..15]", "port 3"),
    (2, "set_field:0x400->metadata,output:OXM_OF_METADATA[8..15]", "port 4"),
    (1, "set_field:0x4->tunnel_id,push_vlan:0x8100,set_field:4099->vlan_vid,output:OXM_OF_VLAN_VID[0..2],"
        "output:NXM_NX_TUN_ID[0..15]", "ports 3 and 4, tagged"),
    (3, "set_field:0xfffb->reg7,output:NXM_NX_XXREG1[0..15]", "FLOOD"),
    (1, "output:NXM_OF_TCP_SRC[0..2]", "port 2 (1234's low bits)"),
    (4, "set_field:10.0.0.1->ipv4_dst,output:NXM_OF_IP_DST[0..7]", "port 1"),
    (1, "load:0xfffd->NXM_NX_REG0[],output:NXM_NX_REG0[0..15]", "a packet-in"),
    (2, "set_field:02:00:00:00:00:99->eth_dst,load:0xfffd->NXM_NX_REG3[0..15],output:3,output:NXM_NX_REG3[0..15]",
     "port 3 and a packet-in of the changed frame"),
    (OFPP_CONTROLLER, "set_field:7->reg2,output:NXM_OF_IN_PORT[]", "a packet-in (in_port CONTROLLER's number)"),
    (OFPP_CONTROLLER, "output:OXM_OF_IN_PORT[],output:2", "port 2 only (OXM's 32 bits: above 0xffff)"),
]


def test_output_reg_from_fields_and_of_controllers_number_as_on_one_bridge():
    with OvsSandbox() as sb:
        results = _run(sb, "ovs", [(p, t) for p, t, _ in CASES])
    for (in_port, text, what), (plain, ours, pins, errors) in zip(CASES, results):
        assert not errors, (text, errors)
        assert plain or pins["ovs"], (text, what)  # (every case sends something)
        assert ours == plain, (text, what, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)
    assert sum(len(r[2]["ovs"]) for r in results) == 3


def test_random_output_regs_run_as_on_one_bridge():
    from tandem.testing.packet_out_oracle import run_dp, run_translation

    with OvsSandbox() as sb:  # (bounded: tandem bench packet_out_oracle -- --packet-ins --output-regs)
        r = run_translation(sb, 100, seed=3, packet_ins=True, output_regs=True)
    assert r.packet_outs >= 100 and r.output_regs >= 150 and r.packet_ins > 50
    assert not r.mismatches, r.mismatches[0]
    with OvsSandbox() as sb:
        r = run_dp(sb, 100, seed=3, packet_ins=True, output_regs=True)
    assert not r.mismatches, r.mismatches[0]


def test_on_the_emulator_backend_too():
    with OvsSandbox() as sb:  # (the endpoint reads the fields and sends the packet-ins itself: no backend part)
        results = _run(sb, "emu", [(p, t) for p, t, _ in CASES])
    for (in_port, text, what), (plain, ours, pins, errors) in zip(CASES, results):
        assert not errors, (text, errors)
        assert ours == plain, (text, what, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)
