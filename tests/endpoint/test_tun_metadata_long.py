"""tun_metadata options mapped longer than 12 bytes (Open vSwitch maps up to 124): the OVS
backend takes flows on them as a plain Open vSwitch 3.1 bridge does (each physical bridge
holds what the plain bridge holds, FLOW_STATS read alike); the emulator backend, whose
dp-core matches bits 0..127 of an option (its actions take all 124 bytes), takes them but a
match on a later bit (BAD_MATCH/BAD_FIELD, nothing installed) and a learn reading one
(BAD_ACTION/BAD_SET_TYPE; check_pkt_larger, multipath, ct's zone take any bits); a PACKET_OUT's check_pkt_larger,
bundle, output_trunc and packet-ins, worked out on dp-core, are taken after them."""

from __future__ import annotations

import pytest

from endpoint_helpers import OFClient, emu_endpoint, errors_in
from test_endpoint_protocol import async_test
from test_tun_metadata_wide_vs_ovs import _stats as flow_stats
from test_tun_metadata_wide_vs_ovs import _tokens as tun_tokens
from test_tun_metadata_wide_vs_ovs import plain_and_oneswitch
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_tlv as T
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.ofwire_tlv import TlvMap
from tandem.rules.tun_metadata import encoding_lengths

MAP = {0: 12, 1: 16, 2: 124}
V124 = bytes(range(1, 125)).hex()
TEXTS = {  # priority -> a flow on the long options: matched, set, loaded, moved, pushed, popped, deleted
    30: "table=1,priority=30,tun_metadata1=0x11223344556677889900aabbccddeeff,actions=output:1",
    31: f"priority=31,tun_metadata2=0x{V124}/0xff{'00' * 122}ff,actions=set_field:0x{V124}->tun_metadata2,"
        "load:0xab->NXM_NX_TUN_METADATA2[984..991],move:NXM_NX_TUN_METADATA2[864..991]->NXM_NX_TUN_METADATA1[0..127],"
        "push:NXM_NX_TUN_METADATA2[],pop:NXM_NX_TUN_METADATA2[],delete_field:tun_metadata1,output:2",
    32: "priority=32,tun_metadata1=0x5/0xff,actions=set_field:0xabcd/0xffff->tun_metadata1,"
        "move:NXM_NX_TUN_METADATA1[8..39]->NXM_OF_ETH_SRC[8..39],output:2",
}


async def _send(c: OFClient, texts: dict[int, str]) -> dict[int, list[tuple[int, int]]]:
    """The TLV map, then each flow: priority -> the (type, code) errors it got."""
    x = c.next_xid()
    c.send(T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
    assert errors_in(await c.barrier()) == []
    out = {}
    for prio, text in texts.items():
        x = c.next_xid()
        with encoding_lengths(MAP):  # (as a controller holding the map sends it)
            c.send(M.encode_flow_mod(x, FlowMod("add", parse_rule(text))))
        out[prio] = [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]
    return out


async def _stats(c: OFClient) -> dict[int, tuple]:
    """priority -> (match, instructions, their bytes) of TEXTS' flows in the FLOW_STATS reply, read under MAP."""
    return {p: v for p, v in (await flow_stats(c, MAP)).items() if p in TEXTS}


def _tun_tokens(flows: list[str]) -> dict[int, list[str]]:
    return tun_tokens(flows, set(TEXTS))


@pytest.mark.ovs
@async_test
async def test_the_ovs_backend_takes_long_options_as_a_plain_bridge():
    (plain_errs, want_stats, want), (errs, got_stats, copies) = await plain_and_oneswitch(
        lambda c: _send(c, TEXTS), _stats, _tun_tokens)
    assert plain_errs == errs == {p: [] for p in TEXTS}
    assert set(want) == set(TEXTS) and f"set_field:{int(V124, 16):#x}->tun_metadata2" in want[31]
    assert got_stats == want_stats and set(got_stats) == set(TEXTS)
    for prio in want:  # every copy of every flow (one per ingress switch)
        got = [c[prio] for c in copies if prio in c]
        assert got and all(g == want[prio] for g in got), (prio, want[prio], got)


@async_test
async def test_the_emulator_backend_takes_long_options_but_matches_and_learns_on_bits_past_127():
    ep, backend = await emu_endpoint()
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        errs = await _send(c, {
            40: "table=1,priority=40,tun_metadata0=0x112233445566778899aabbcc,actions=set_field:0x5->tun_metadata0,output:1",
            41: "table=1,priority=41,tun_metadata1=0x5,actions=output:1",
            42: f"priority=42,actions=set_field:0x{V124}->tun_metadata2,output:1",
            43: "priority=43,actions=move:NXM_NX_TUN_METADATA1[0..31]->NXM_NX_REG0[],output:1",
            44: "priority=44,actions=delete_field:tun_metadata2,output:1",
            45: "table=1,priority=45,tun_metadata2=0x5/0xff,actions=output:1",
            46: f"table=1,priority=46,tun_metadata2=0x5/0x1{'0' * 30},actions=output:1",
            47: "priority=47,actions=load:0xab->NXM_NX_TUN_METADATA2[984..991],push:NXM_NX_TUN_METADATA2[],"
                "pop:NXM_NX_TUN_METADATA2[],move:NXM_NX_TUN_METADATA2[864..991]->NXM_NX_TUN_METADATA1[0..127],output:1",
            48: "priority=48,actions=output:NXM_NX_TUN_METADATA2[900..915]",
            49: "priority=49,actions=check_pkt_larger(100)->NXM_NX_TUN_METADATA2[119],output:1",
            50: "priority=50,actions=check_pkt_larger(100)->NXM_NX_TUN_METADATA2[990],"
                "multipath(symmetric_l4,0,modulo_n,4,0,NXM_NX_TUN_METADATA1[112..127]),output:1",
            51: "priority=51,actions=learn(table=2,NXM_NX_REG0[]=NXM_NX_TUN_METADATA2[120..151]),output:1",
            52: "priority=52,ip,actions=ct(zone=NXM_NX_TUN_METADATA2[900..915]),output:1",
            53: "table=1,priority=53,tun_metadata2=0x5,actions=output:1",
            54: f"table=1,priority=54,tun_metadata2=0x5/0x1{'0' * 32},actions=output:1",
        })
        held = {r.priority for r in ep.state.virtual_rules()}
    finally:
        await ep.close()
        await backend.close()
    refused = [(W.OFPET_BAD_MATCH, W.OFPBMC_BAD_FIELD)]  # (an exact match on 124 bytes names bit 991; 54 names bit 128)
    # (51: a learn reading bits past 127; 48: output:FIELD of any tun_metadata bits, the translator's
    # refusal of an output_reg of a field other than a register, docs/oneswitch.md section 7)
    refused_learn, refused_output_reg = [(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_SET_TYPE)], [(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_ARGUMENT)]
    assert errs == {p: refused if p in (53, 54) else refused_learn if p == 51 else refused_output_reg if p == 48 else []
                    for p in range(40, 55)}
    assert held == {40, 41, 42, 43, 44, 45, 46, 47, 49, 50, 52}  # (41: an exact match on 16 bytes; 46: bit 120)


@async_test
async def test_a_packet_out_takes_what_dp_core_works_out_after_a_long_option():
    """check_pkt_larger, bundle, output_trunc and packet-ins in a PACKET_OUT are worked out on dp-core
    with the actions before them, also after an action on an option longer than 12 bytes; a packet-in
    after a write to an option stays refused as after any write to one (BAD_ACTION/BAD_TYPE)."""
    from endpoint_helpers import THREE_SWITCHES
    from tandem.backends.factory import make_backend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import load_topology
    from tandem.rules.ofctl import parse_actions

    topo = load_topology(THREE_SWITCHES)
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    long_write = f"set_field:0x{V124}->tun_metadata2"
    texts = {  # name -> (actions, refused)
        "check_pkt_larger": (f"{long_write},check_pkt_larger(100)->NXM_NX_REG0[0],output:2", False),
        "bundle in a clone": (f"move:NXM_NX_TUN_METADATA2[0..31]->NXM_OF_ETH_SRC[0..31],clone(bundle(eth_src,0,hrw,"
                              "ofport,members:2,3))", False),
        "output_trunc": (f"{long_write},output(port=2,max_len=40)", False),
        "a packet-in after a read": ("move:NXM_NX_TUN_METADATA2[900..931]->NXM_OF_ETH_SRC[0..31],output:CONTROLLER", False),
        "controller(...) after a pop into it": ("push:NXM_NX_TUN_METADATA2[],pop:NXM_NX_TUN_METADATA2[],"
                                                "controller(reason=no_match)", True),
    }
    got = {}
    try:
        x = c.next_xid()
        c.send(T.encode_tlv_table_mod(x, T.NXTTMC_ADD, [TlvMap(0xFFFF, i, n, i) for i, n in MAP.items()]))
        assert errors_in(await c.barrier()) == []
        for name, (text, _) in texts.items():
            x = c.next_xid()
            with encoding_lengths(MAP):
                c.send(M.encode_packet_out(x, M.WirePacketOut(W.OFP_NO_BUFFER, 1, tuple(parse_actions(text)), bytes(60))))
            got[name] = [e[1:] for e in errors_in(await c.barrier()) if e[0] == x]
    finally:
        await ep.close()
        await backend.close()
    assert got == {name: [(W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE)] if refused else [] for name, (_, refused) in texts.items()}
