"""FLOW_STATS of rules sent with Open vSwitch's Nicira actions, against a plain
Open vSwitch 3.1 bridge: OVS sends each action back by its own rules (set_tunnel
as a set_field on tunnel_id, a Nicira write_metadata as the instruction, sample
and dec_ttl(ids) as the Nicira action they came as), and OneSwitch's reply must
carry the same instructions, byte for byte."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from test_refusals_vs_ovs import ETH, NX_WRITE_METADATA, OUT1, SAMPLE, _apply, _goto, _nx, _out, _write
from test_refusals_vs_ovs import IN_PORT1, REG0, _bundle, _multipath
from test_refusals_vs_ovs import _oxm, _set_field
from tandem.backends.factory import make_backend
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import encap as ENC
from tandem.rules import decap as DEC
from tandem.rules.ir import Decap, Match
from tandem.rules.ofctl import parse_rule
from tandem.rules.ir import EncapEthernet, EncapNsh, SetField
from tandem.rules.ir import PushVlan

pytestmark = [pytest.mark.ovs]
TOPO = Path(__file__).with_name("three_switches.yaml")


def _flow_mod(xid: int, priority: int, oxms: bytes, instructions: bytes) -> bytes:
    match = struct.pack("!HH", 1, 4 + len(oxms)) + oxms
    match += b"\0" * (-len(match) % 8)
    body = struct.pack("!QQBBHHHIIIH2x", priority, 0, 0, 0, 0, 0, priority, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return W.header(W.OFPT_FLOW_MOD, xid, body + match + instructions)


# priority -> (match, instructions) of a flow with Nicira actions
FLOWS = {
    10: (b"", _apply(_nx(2, struct.pack("!2xI", 0x55)), _nx(9, struct.pack("!6xQ", 1 << 40)), _nx(5, bytes(6)), OUT1)),
    11: (b"", _apply(SAMPLE, _nx(38, struct.pack("!HIIIH", 100, 1, 2, 3, 2)),
                     _nx(38, struct.pack("!HIIIH", 5, 1, 2, 3, 0xFFFF)),
                     _nx(41, struct.pack("!HIIIHB", 9, 1, 2, 3, 0xFFFF, 0)), OUT1)),
    12: (ETH(0x0800), _apply(_nx(21, struct.pack("!H4xHH", 2, 1, 2)), _nx(21, struct.pack("!H4x", 0)),
                             _nx(21, struct.pack("!H4xH", 1, 0)), OUT1) + _write(_nx(21, struct.pack("!H4xH", 1, 3)), _out(3))),
    13: (b"", _apply(OUT1, NX_WRITE_METADATA) + _goto(5)),
    14: (b"", _apply(NX_WRITE_METADATA)),
    15: (b"", _apply(_nx(49, struct.pack("!HHI", 100, 31, 0x0001 << 16 | 5 << 9 | 4)), OUT1)),
    # controller: NXAST_CONTROLLER with the defaults and with an id and reason, NXAST_CONTROLLER2 without
    # properties and with max_len, id, reason and userdata
    16: (b"", _apply(_nx(20, struct.pack("!HHBx", 0xFFFF, 0, 1)), _nx(20, struct.pack("!HHBx", 40, 3, 0)),
                     _nx(37, bytes(6)), _nx(37, bytes(6) + struct.pack("!HHH2xHHH2xHHB3xHH3sx", 0, 8, 60, 1, 8, 7, 2, 5, 4,
                                                                            3, 7, b"abc")), OUT1)),
    17: (b"", _apply(_multipath(65, 15, REG0, fields=3, alg=3), _bundle((2, 1, 3, 77), alg=0), OUT1)),
    18: (IN_PORT1, _apply(_bundle((1,), ofs_nbits=31, dst=REG0), _bundle((1,)), _out(2))),
}
FLOWS[19] = (b"", _apply(_nx(42, bytes(6) + _nx(42, bytes(6) + OUT1) + _out(2)), _nx(42, bytes(6)), OUT1))  # clone
FLOWS[20] = (b"", _apply(_nx(39, struct.pack("!HI", 2, 20)), _nx(39, struct.pack("!HI", 0xFFF8, 100)), OUT1))  # output_trunc
# tun_flags: a match on +oam, set_field oam, a move of one register bit into it
FLOWS[26] = (_oxm(104, struct.pack("!H", 1), cls=1), _apply(_set_field(_oxm(104, struct.pack("!H", 1), cls=1)), _nx(
    6, struct.pack("!HHHII", 1, 3, 0, REG0, 0x0001 << 16 | 104 << 9 | 2)), OUT1))
# table-0 lookups written into the action set: resubmit(,0) and output:TABLE (oneswitch/table0_lookup.py)
FLOWS[23] = (b"", _write(_nx(14, struct.pack("!HB3x", 0xFFF8, 0)), _out(0xFFFFFFF9)))
# actset_output (ONF's experimenter OXM 43): UNSET matched, an output written
FLOWS[30] = (struct.pack("!III", 0xFFFF << 16 | 43 << 9 | 8, 0x4F4E4600, 0xFFFFFFF7), _write(_out(2)))
# fin_timeout (issue 15): in a tcp rule, also inside a clone
FLOWS[29] = (ETH(0x0800) + _oxm(10, b"\x06"), _apply(_nx(19, struct.pack("!HH2x", 5, 0)), _nx(
    42, bytes(6) + _nx(19, struct.pack("!HH2x", 0, 7))), OUT1))
# encap: the SFC pattern encap(nsh(md_type=1)), an NSH set_field, encap(ethernet); bare encap(nsh) (rules/encap.py)
FLOWS[32] = (b"", _apply(ENC.encode_encap(EncapNsh(1)), W.encode_action(SetField("nsh_spi", 0x55)),
                         ENC.encode_encap(EncapEthernet()), ENC.encode_encap(EncapNsh(None)), ENC.encode_encap(EncapEthernet()),
                         OUT1))
# decap: the SFC egress pair on eth_type=0x894f,nsh_np=3, packet types named and not (rules/decap.py)
FLOWS[39] = (W.encode_oxms(Match.of(eth_type=0x894F, nsh_np=3)), _apply(
    W.encode_action(SetField("reg0", 5)), DEC.encode_decap(Decap(DEC.PT_NSH)), DEC.encode_decap(Decap(None)), OUT1))
# nshttl: dec_nsh_ttl written into the action set (after a set_field of eth_dst), beside one in apply-actions
FLOWS[37] = (ETH(0x894F), _apply(_nx(48, bytes(6)), OUT1) + _write(_set_field(_oxm(3, b"\x02" * 6)), _nx(48, bytes(6)), _out(3)))
# ctlr2: controller(meter_id=3) with an id (CONTROLLER2), and wire reasons 6 and 9 (NXAST_CONTROLLER, CONTROLLER2)
FLOWS[36] = (b"", _apply(_nx(37, bytes(6) + struct.pack("!HHH2xHHI", 1, 8, 2, 5, 8, 3)),
                         _nx(20, struct.pack("!HHBx", 0xFFFF, 0, 6)), _nx(37, bytes(6) + struct.pack("!HHB3x", 2, 5, 9)), OUT1))
# nshmore: nsh_ttl (Open vSwitch's 8-bit subfield) moved into and out of, pushed and popped, and loaded into bits 1..2
FLOWS[46] = (ETH(0x894F), _apply(*(W.encode_action(a) for a in parse_rule(
    "eth_type=0x894f,actions=move:NXM_NX_REG0[0..7]->NXOXM_NSH_TTL[],move:NXOXM_NSH_TTL[]->NXM_NX_REG1[8..15],"
    "push:NXOXM_NSH_TTL[],pop:NXOXM_NSH_TTL[6..7],load:0x2->NXOXM_NSH_TTL[1..2],output:1").apply_actions)))
# encaset: encap(nsh) ending the apply-actions, closed by encap(ethernet) in write_actions (rules/encap_set.py)
FLOWS[41] = (b"", _apply(ENC.encode_encap(EncapNsh(1)), W.encode_action(SetField("nsh_spi", 0x55)))
             + _write(ENC.encode_encap(EncapEthernet()), _set_field(_oxm(3, b"\x02" * 6)), _out(2)))
# decapset: decap() ending the apply-actions, closed by decap() written into the action set (rules/decap_set.py)
FLOWS[55] = (W.encode_oxms(Match.of(eth_type=0x894F, nsh_np=3)), _apply(_out(3), DEC.encode_decap(Decap(DEC.PT_NSH)))
             + _write(W.encode_action(SetField("reg0", 5)), DEC.encode_decap(Decap(None)), W.encode_action(PushVlan(0x8100)), _out(2)))
# nshctx: NSH contexts matched without nsh_mdtype=1, one written (the match bytes: test_nsh_context_vs_ovs.py)
FLOWS[52] = (W.encode_oxms(Match.of(eth_type=0x894F, nsh_c1=0x11, nsh_c3=(0x1100, 0xFF00))), _apply(
    W.encode_action(SetField("nsh_c4", 7)), OUT1))

# nshload: loads into nsh_ttl (Open vSwitch's 8-bit subfield): the whole above 63 and up to 63, bits 6..7, bits 0..5;
# output_reg of an NSH field (NXAST_OUTPUT_REG2) the rule fixes
FLOWS[53] = (ETH(0x894F), _apply(*(W.encode_action(a) for a in parse_rule(
    "eth_type=0x894f,actions=load:0xc5->NXOXM_NSH_TTL[],load:0x5->NXOXM_NSH_TTL[],load:0x2->NXOXM_NSH_TTL[6..7],"
    "load:0x7->NXOXM_NSH_TTL[0..5],set_field:0x30002->nsh_c1,output:NXOXM_NSH_C1[0..15],output:1").apply_actions)))
# (pause) controller(pause): NXAST_CONTROLLER2 with the pause property alone, and after max_len, id, reason
# and userdata (the bytes ovs-ofctl 3.1 writes: test_ofwire_controller_pause.py)
FLOWS[62] = (b"", _apply(_nx(37, bytes(6) + struct.pack("!HH4x", 4, 4)), OUT1))
FLOWS[63] = (b"", _apply(_nx(37, bytes(6) + struct.pack("!HHH2xHHH2xHHB3xHH2s2xHH4x", 0, 8, 20, 1, 8, 7, 2, 5, 0,
                                                      3, 6, b"\x01\x02", 4, 4)), OUT1))
# nshdst: learn's result_dst in NSH fields (LEARN2 with the field's 8-byte experimenter header; with a limit, too)
FLOWS[60] = (ETH(0x894F), _apply(*(W.encode_action(a) for a in parse_rule(
    "eth_type=0x894f,actions=learn(table=5,priority=3,result_dst=NXOXM_NSH_FLAGS[1],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),"
    "output:1").apply_actions)))
# and check_pkt_larger into a bit of an NSH field the match fixes (the field's 8-byte header, 24 bytes in all)
FLOWS[61] = (W.encode_oxms(Match.of(eth_type=0x894F, nsh_spi=0x123)), _apply(*(W.encode_action(a) for a in parse_rule(
    "eth_type=0x894f,nsh_spi=0x123,actions=learn(table=6,limit=3,result_dst=NXOXM_NSH_C4[31],NXM_NX_REG1[0..15]=0x7,"
    "output:NXM_OF_IN_PORT[]),learn(table=6,result_dst=NXOXM_NSH_TTL[7]),check_pkt_larger(100)->NXOXM_NSH_SPI[2],"
    "output:1").apply_actions)))

# bundlemem: NORMAL as a bundle member, active_backup after a number no port has and hrw beside IN_PORT and NONE
# (extension.bundles_normal: every port's pipeline homed on the host, NORMAL kept there)
FLOWS[68] = (b"", _apply(_bundle((77, 0xFFFA, 2), alg=0)))
FLOWS[69] = (b"", _apply(_bundle((0xFFFA, 0xFFF8, 0xFFFF), alg=1), OUT1))

async def _flow_instructions(c: OFClient) -> dict[int, bytes]:
    """priority -> the instructions of that flow in the switch's FLOW_STATS reply."""
    req = struct.pack("!HH4xB3xII4xQQ", 1, 0, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0) + struct.pack("!HH4x", 1, 4)
    x = c.next_xid()
    c.send(W.header(W.OFPT_MULTIPART_REQUEST, x, req))
    out: dict[int, bytes] = {}
    while True:
        m = await c.recv()
        if m.type != W.OFPT_MULTIPART_REPLY or m.xid != x:
            continue
        body = m.body[8:]
        off = 0
        while off < len(body):
            length, = struct.unpack_from("!H", body, off)
            priority, = struct.unpack_from("!H", body, off + 12)
            mlen, = struct.unpack_from("!H", body, off + 50)
            out[priority] = body[off + 48 + mlen + (-mlen % 8):off + length]
            off += length
        if not struct.unpack_from("!H", m.body, 2)[0] & 1:  # no OFPMPF_REPLY_MORE
            return out


async def _send_all(c: OFClient) -> list:
    for prio, (oxms, ins) in FLOWS.items():
        c.send(_flow_mod(c.next_xid(), prio, oxms, ins))
    return errors_in(await c.barrier())


@async_test
async def test_flow_stats_carry_the_nicira_actions_as_open_vswitch_sends_them():
    with OvsSandbox() as sb:
        sb.add_bridge("plain", [1, 2, 3, 4])
        r, w = await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))
        ovs = OFClient(r, w)
        ovs.send(M.encode_hello())
        assert (await ovs.recv()).type == W.OFPT_HELLO
        assert await _send_all(ovs) == []
        want = await _flow_instructions(ovs)
        ovs.close()
    topo = load_topology(TOPO)
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        assert await _send_all(c) == []
        got = await _flow_instructions(c)
    finally:
        await ep.close()
        await backend.close()
    assert set(want) == set(FLOWS)
    # what OVS sends back differs from what was sent (set_tunnel, write_metadata, sample2 without a port ...)
    assert want[10] != FLOWS[10][1] and want[13] != FLOWS[13][1]
    for prio in FLOWS:
        assert got.get(prio) == want[prio], (prio, got.get(prio, b"").hex(), want[prio].hex())
# (homeres) accepted once the endpoint homes their ports on the host (oneswitch/cross_port.py): an hrw bundle /
# bundle_load of the host's ports from a wildcard rule (every port homed) and from an sNIC port's rule (port 3). (A
# resubmit with another in_port, homed too, meets here a rule whose copies are specialised to their in_port: refused
# by its own row; its acceptance is in test_refusals_vs_ovs.py)
FLOWS[66] = (b"", _apply(_bundle((1, 0xFFFE, 0xFFF8), alg=1), OUT1))
FLOWS[67] = (_oxm(0, struct.pack("!I", 3)), _apply(_bundle((1, 0xFFFE), ofs_nbits=15, dst=REG0), _bundle((1,)), _out(2)))
