"""Open vSwitch's ``set_field:ANY->tun_metadataN`` (a set_field/load whose mask keeps no
bit of the option) through OneSwitch, against one plain Open vSwitch 3.1 bridge side by
side. Measured on the plain bridge: an NXAST_REG_LOAD2 whose payload, longer than the
option, masks nothing in the mapped first bytes, and ovs-ofctl's ``set_field:0/0`` (a
masked header of no bytes) are both held as ``set_field:ANY->tun_metadataN`` (as dump-flows
prints it; ovs-ofctl does not read ``ANY``), shown in FLOW_STATS as NXAST_REG_LOAD2 of
header ``00015100`` (no bytes); run, it writes no bit and makes the option present: on a
fresh packet ``tun_metadata0=0`` meets it and a move out of it reads 0, after
``set_field:5`` the option stays 5, after a ``delete_field`` it is present again with the
5 it kept. The same messages and frames go to the plain bridge and to OneSwitch (the OVS
backend: flows, FLOW_STATS and frames; the emulator backend: frames)."""

from __future__ import annotations

import struct

import pytest

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from test_packet_in2_vs_ovs import WHERE
from test_tun_metadata_wide_vs_ovs import MAP, _flow_mod, _oxm, _reg_load2, _stats, _tokens, plain_and_oneswitch
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ir import FlowMod, SetField
from tandem.rules.ofctl import format_rule, parse_rule
from tandem.rules.ofwire import decode_actions, encode_actions
from tandem.rules.ofwire_tlv import TlvMap
from tandem.rules.tun_metadata import decoding_lengths, encoding_lengths

pytestmark = [pytest.mark.ovs]
H = bytes.fromhex
# NXAST_REG_LOAD2 of NXM_NX_TUN_METADATA0 masked, no bytes: how Open vSwitch's FLOW_STATS show set_field:ANY
# (and how ovs-ofctl 3.1 sends set_field:0/0->tun_metadata0), measured
ANY0_WIRE = H("ffff0010000023200021000151000000")
FLOWS = [  # (priority, actions): FLOW_STATS priorities 70, 71
    (70, _reg_load2(_oxm(0, H("00000000000000ff"), H("00000000000000ff")))),  # (8 bytes on a 4-byte option)
    (71, _reg_load2(struct.pack("!I", 1 << 16 | 41 << 9 | 1 << 8))),  # (ovs-ofctl's set_field:0/0->tun_metadata1)
]


async def _send_all(c: OFClient) -> list:
    c.send(T.encode_tlv_table_mod(c.next_xid(), T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
    errs = errors_in(await c.barrier())
    for prio, actions in FLOWS:
        c.send(_flow_mod(c.next_xid(), prio, b"", actions))
        errs += errors_in(await c.barrier())
    return errs


def _any_tokens(flows: list[str]) -> dict[int, list[str]]:
    return _tokens(flows, {p for p, _ in FLOWS})


@async_test
async def test_set_field_any_flows_and_flow_stats_as_a_plain_bridge():
    (plain_errs, want_stats, want), (errs, got_stats, copies) = await plain_and_oneswitch(_send_all, _stats, _any_tokens)
    assert plain_errs == [] and errs == []
    assert want == {70: ["set_field:ANY->tun_metadata0"], 71: ["set_field:ANY->tun_metadata1"]}
    assert ANY0_WIRE in want_stats[70][2]  # (the golden bytes, as measured)
    assert got_stats == want_stats  # (decoded and byte for byte)
    for prio in want:  # every copy on the physical bridges holds it as the plain bridge does
        got = [c[prio] for c in copies if prio in c]
        assert got and all(g == want[prio] for g in got), (prio, want[prio], got)


def test_set_field_any_wire_and_text_round_trip():
    a = SetField("tun_metadata0", 0, 0)
    for lengths in ({}, MAP):
        with encoding_lengths(lengths):
            assert encode_actions([a]) == ANY0_WIRE
    with decoding_lengths(MAP):
        assert decode_actions(ANY0_WIRE) == [a]
        assert decode_actions(FLOWS[0][1]) == [a]  # (the longer payload, cut to the option's first bytes)
    rule = parse_rule("actions=set_field:0/0->tun_metadata0")
    assert rule.instructions[0].actions == (a,)
    assert format_rule(rule).endswith("actions=set_field:ANY->tun_metadata0")  # (as dump-flows prints it)
    with pytest.raises(Exception, match="ovs-ofctl 3.1 prints ANY .* does not read it; write set_field:0/0->tun_metadata0"):
        parse_rule("actions=set_field:ANY->tun_metadata0")


# frames: in_port 1 ANY on a fresh packet; 2 set 5 then ANY; 3 set 5, delete_field, ANY; 4 nothing
FRAME_FLOWS = [
    "table=0,priority=70,in_port=1,actions=set_field:0/0->tun_metadata0,goto_table:1",
    "table=0,priority=70,in_port=2,actions=set_field:0x5->tun_metadata0,set_field:0/0->tun_metadata0,goto_table:1",
    "table=0,priority=70,in_port=3,actions=set_field:0x5->tun_metadata0,delete_field:tun_metadata0,"
    "set_field:0/0->tun_metadata0,goto_table:1",
    "table=0,priority=70,in_port=4,actions=goto_table:1",
    "table=1,priority=71,tun_metadata0=0,actions=move:NXM_NX_TUN_METADATA0[0..31]->NXM_OF_ETH_SRC[0..31],output:2",
    "table=1,priority=71,tun_metadata0=5,actions=move:NXM_NX_TUN_METADATA0[0..31]->NXM_OF_ETH_SRC[0..31],output:4",
    "table=1,priority=70,actions=output:1",
]
FRAME = H("0200000000020200ffffffff88b5") + bytes(46)


async def _program(c: OFClient) -> None:
    c.send(T.encode_tlv_table_mod(c.next_xid(), T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
    for text in FRAME_FLOWS:
        c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule(text))))
    assert errors_in(await c.barrier()) == []


def _eth_src(frames: list[bytes]) -> list[str]:
    return [f[6:12].hex() for f in frames]


@async_test
async def test_set_field_any_frames_as_from_one_plain_bridge_on_both_backends():
    from endpoint_helpers import ovs_backend_endpoint, ovs_bridge_client

    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        ovs = await ovs_bridge_client(sb, "plain")
        await _program(ovs)
        ovs.close()
        for v in (1, 2, 3, 4):
            sb.inject("plain", v, [FRAME])
        sb.settle()
        want = {v: _eth_src(sb.take_output("plain", v)) for v in (1, 2, 3, 4)}
        ep, backend = await ovs_backend_endpoint(sb)
        c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
        try:
            await _program(c)
            for v in (1, 2, 3, 4):
                sb.inject(*WHERE[v], [FRAME])
            sb.settle()
            got = {v: _eth_src(sb.take_output(*WHERE[v])) for v in (1, 2, 3, 4)}
        finally:
            await ep.close()
            await backend.close()
    # measured: present at 0 after ANY (port 2), 5 kept after a write and after a delete_field (port 4),
    # absent without a write (port 1)
    assert want == {1: ["0200ffffffff"], 2: ["020000000000"], 3: [], 4: ["020000000005", "020000000005"]}
    assert got == want
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        await _program(c)
        for v in (1, 2, 3, 4):
            sw, port = WHERE[v]
            backend.inject(sw.removeprefix("tnd-"), port, FRAME)
        backend.run_for(0.01)
        emu = {v: _eth_src(backend.take_output(WHERE[v][0].removeprefix("tnd-"), WHERE[v][1])) for v in (1, 2, 3, 4)}
    finally:
        await ep.close()
        await backend.close()
    assert emu == want
