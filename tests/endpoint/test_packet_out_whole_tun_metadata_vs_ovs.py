"""Packet-ins after a write to ``tun_metadata`` or a ``delete_field`` in a PACKET_OUT, on the
OVS backend sent whole to the host (oneswitch/packet_out_whole.py), whose Open vSwitch maps
the options as the virtual switch does (the TLV map is relayed to every physical switch):
side by side with one plain Open vSwitch 3.1 bridge, the same TLV map and PACKET_OUTs on both;
frames and packet-ins (the three formats in turn, the options in their match) compared byte
for byte (an option written 0 is present: Open vSwitch lists it, measured by the last case)."""

from __future__ import annotations

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_tlv as T
from tandem.rules.ir import OFPP_CONTROLLER
from tandem.rules.ofwire_tlv import TlvMap

from test_packet_out_whole_vs_ovs import _run

pytestmark = [pytest.mark.ovs]

MAP = {0: 4, 1: 8}
TLV = lambda x: T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()])  # noqa: E731
CASES = [
    (2, "set_field:0x11223344->tun_metadata0,CONTROLLER,output:3"),
    (1, "set_field:0x1122->tun_metadata1,controller(userdata=01.02),output:4"),
    (3, "load:0xab->NXM_NX_TUN_METADATA0[8..15],move:NXM_NX_TUN_METADATA0[8..15]->NXM_OF_ETH_SRC[0..7],CONTROLLER,"
        "output:1"),
    (4, "set_field:0x55->tun_metadata0,delete_field:tun_metadata0,CONTROLLER,output:2"),
    (OFPP_CONTROLLER, "set_field:0x7->tun_metadata1,clone(controller(reason=no_match)),output:2"),
    (1, "move:NXM_OF_ETH_DST[0..31]->NXM_NX_TUN_METADATA0[0..31],CONTROLLER"),
    (2, "load:0->NXM_NX_TUN_METADATA1[8..15],CONTROLLER,output:3"),  # (present at 0: in the packet-in's match too)
]


def test_packet_ins_after_tun_metadata_writes_run_whole_on_the_host_as_on_one_bridge():
    with OvsSandbox() as sb:
        results = _run(sb, "ovs", CASES, setup=[TLV])
    for (in_port, text), (plain, ours, pins, errors) in zip(CASES, results):
        assert not errors, (text, errors)
        assert pins["ovs"], text  # (every case sends a packet-in)
        assert ours == plain, (text, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)


def test_on_the_emulator_backend_they_stay_refused():
    from tandem.rules import ofwire as W

    with OvsSandbox() as sb:
        results = _run(sb, "emu", CASES[:1] + CASES[3:4], setup=[TLV])
    for plain, ours, pins, errors in results:
        assert errors and errors[0][0] == W.OFPET_BAD_ACTION and not ours and not pins["one"], (errors, ours)
