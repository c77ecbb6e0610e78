"""A PACKET_OUT sent whole to the host switch (oneswitch/packet_out_whole.py), side by side:
one plain Open vSwitch 3.1 bridge and OneSwitch over OVS bridges (the topology of
testing/packet_out_oracle.py: 1 on the host, 2 and 4 on snic0, 3 on snic1), the same
PACKET_OUTs on both; the frames each port gets and the packet-ins compared byte for byte.

Packet-ins after ``ct`` (also with ``exec``, ``nat``, a zone, ``ct_clear`` after it) and after
``check_pkt_larger``, and ``check_pkt_larger`` into a packet header field: the host's Open
vSwitch, every port homed there first, runs them as one bridge does, and its packet-ins
come back as the virtual ones (reason ``action``, table 0, no cookie, the virtual in_port,
ct fields as the host's tracker set them). On the emulator backend the host's dp-core runs
them (``Pipeline::packet_out``) and sends the same packet-ins, byte for byte, except ``ct``
with ``nat`` and ``check_pkt_larger`` into a header field, which stay refused there
(measured: Open vSwitch's frame keeps the bit, and shows an ICMP packet's own source
after ``ct(commit,nat(src=…))``; dp-core's does not)."""

from __future__ import annotations

import asyncio

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import nsh as NSH
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPP_CONTROLLER, OFPP_LOCAL
from tandem.rules.ofctl import parse_actions, parse_group
from tandem.rules.packets import build_frame

pytestmark = [pytest.mark.ovs]

TCP = build_frame(eth_src=0x0200_0000_0001, eth_dst=0x0200_0000_0002, ipv4_src=0x0A00_0001,
                  ipv4_dst=0x0A00_0002, tcp_src=1234, tcp_dst=80)
# (in_port, actions): each sends something, a packet-in at least where one is written
CASES = [
    (2, "ct(commit),CONTROLLER"),
    (2, "ct(commit,zone=5,exec(set_field:1->ct_mark)),controller(userdata=01.02,id=0),output:3"),
    (1, "ct(zone=3),set_field:02:00:00:00:00:99->eth_src,CONTROLLER,output:2"),
    (3, "ct(commit,nat(src=10.9.9.9)),CONTROLLER,output:4"),
    (4, "ct(commit),ct_clear,CONTROLLER,output:1"),
    (OFPP_CONTROLLER, "ct(commit),CONTROLLER,output:2"),
    (OFPP_LOCAL, "ct(commit,zone=7),controller(reason=no_match),output:1,output:FLOOD"),
    (2, "check_pkt_larger(100)->NXM_NX_REG0[0],CONTROLLER,output:3"),
    (2, "check_pkt_larger(42)->NXM_OF_ETH_DST[40],output:3"),
    (1, "check_pkt_larger(10)->NXM_OF_ETH_DST[0],move:NXM_OF_ETH_DST[0]->NXM_OF_ETH_SRC[0],output:3,CONTROLLER"),
]


def _run(sb, backend_name: str, cases, groups=(), setup=()):
    from tandem.backends.factory import make_backend
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.ids import N_PHYSICAL_TABLES
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology
    from tandem.testing.packet_out_oracle import PORTS, TOPOLOGY, _Conn, _packet_out
    from tandem.testing.packet_out_nsh_ttl import ask_for_invalid_ttl
    from tandem.testing.packet_out_packet_ins import ask_for_packet_ins, packet_in_format

    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    wires = dict(topo.port_map)
    sb.add_bridge("plain", PORTS)
    emu = backend_name == "emu"
    results = []

    async def go() -> None:
        backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES) if emu else OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _Conn(*await asyncio.open_connection("127.0.0.1", await ep.listen("ptcp:0:127.0.0.1"))).hello()
        ovs = await _Conn(*await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))).hello()
        try:
            for c in (ovs, one):
                ask_for_packet_ins(c)
                ask_for_invalid_ttl(c)  # (dec_nsh_ttl's packet-ins)
                for build in setup:  # (messages before the cases, e.g. a TLV map)
                    c.send(build)
                for g in groups:  # (GROUP_MODs first: a group with ct in a bucket, packet_out_ct_group.py)
                    c.send(lambda x, g=g: M.encode_group_mod(x, "add", parse_group(g)))
                assert not await c.barrier()
            for i, (in_port, text, *frame) in enumerate(cases):  # (a case's frame: TCP unless given)
                errors, pins = {}, {}
                for name, c in (("ovs", ovs), ("one", one)):
                    packet_in_format(c, i)  # (the three formats in turn)
                    c.packet_ins.clear()
                    c.send(_packet_out(in_port, tuple(parse_actions(text)), frame[0] if frame else TCP))
                    errors[name] = await c.barrier()
                    if name == "one" and emu:
                        backend.run_for(0.01)
                    await asyncio.sleep(0.2)  # (the host's packet-ins are relayed as they come)
                    errors[name] += await c.barrier()
                    pins[name] = list(c.packet_ins)
                sb.settle()
                out = sb.take_all_output()
                plain = {p: sorted(out[("plain", p)]) for p in PORTS if out.get(("plain", p))}
                if emu:
                    got = {v: backend.take_output(w.switch, w.port) for v, w in wires.items()}
                else:
                    got = {v: out.get((f"tnd-{w.switch}", w.port)) for v, w in wires.items()}
                assert not errors["ovs"], (text, errors["ovs"])
                results.append((plain, {v: sorted(fs) for v, fs in got.items() if fs}, pins, errors["one"]))
        finally:
            one.close()
            ovs.close()
            await ep.close()
            await backend.close()

    asyncio.run(go())
    return results


def test_packet_ins_after_ct_and_check_pkt_larger_run_whole_on_the_host_as_on_one_bridge():
    with OvsSandbox() as sb:
        results = _run(sb, "ovs", CASES)
    for (in_port, text), (plain, ours, pins, errors) in zip(CASES, results):
        assert not errors, (text, errors)
        assert plain or pins["ovs"], text  # (every case sends something)
        assert ours == plain, (text, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)
    assert sum(len(r[2]["ovs"]) for r in results) >= 9


NSH_TTL2 = bytes.fromhex("0a00000000020a0000000001894f") + NSH.header({"nsh_ttl": 2}) + bytes(46)
EMU_REFUSED = [CASES[3], CASES[8], CASES[9]]  # (nat; check_pkt_larger into eth_dst)
EMU_CASES = [c for c in CASES if c not in EMU_REFUSED] + [
    (2, "ct(commit,zone=1),push_vlan:0x8100,controller(reason=no_match),output:3"),
    (3, "check_pkt_larger(60)->NXM_NX_REG2[3],move:NXM_NX_REG2[3]->NXM_OF_ETH_SRC[3],clone(output:1,CONTROLLER),output:4"),
    (2, "check_pkt_larger(60)->NXM_NX_REG1[0],dec_nsh_ttl,output:3", NSH_TTL2),  # (2 -> 1: sent)
    (2, "check_pkt_larger(60)->NXM_NX_REG1[0],CONTROLLER,dec_nsh_ttl,dec_nsh_ttl,output:4", NSH_TTL2),  # (invalid_ttl)
]


def test_on_the_emulator_the_host_dp_core_runs_them_as_one_bridge():
    with OvsSandbox() as sb:
        results = _run(sb, "emu", EMU_CASES)
    for (in_port, text, *_), (plain, ours, pins, errors) in zip(EMU_CASES, results):
        assert not errors, (text, errors)
        assert ours == plain, (text, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)
    assert all(r[0] or r[2]["ovs"] for r in results)  # (every case sends something)
    assert sum(bool(r[2]["ovs"]) for r in results) == len(EMU_CASES) - 1  # (a packet-in in all but the NSH TTL 2 -> 1)
    assert len(results[-1][2]["ovs"]) == 2 and not results[-1][0]  # (CONTROLLER, then invalid_ttl at TTL 1: dropped)


NSH_TTL5 = bytes.fromhex("0a00000000020a0000000001894f") + NSH.header({"nsh_ttl": 5}) + bytes(46)
# (not sent whole: the endpoint walks them, its physical PACKET_OUTs with ct or dec_nsh_ttl run on the emulated
# device's own pipeline, backends/emu.py; dec_nsh_ttl's invalid_ttl packet-in still the endpoint's, not doubled)
EMU_WALKED = [(2, "ct(commit),output:3"), (2, "ct(commit,zone=3,exec(set_field:1->ct_mark)),output:3,output:4"),
              (2, "set_field:02:00:00:00:00:09->eth_src,dec_nsh_ttl,output:3,output:1", NSH_TTL5),
              (2, "dec_nsh_ttl,output:3,dec_nsh_ttl,output:4", NSH_TTL2), (1, "clone(dec_nsh_ttl,output:2),output:3", NSH_TTL5)]


def test_on_the_emulator_walked_packet_outs_with_ct_or_dec_nsh_ttl_run_as_on_one_bridge():
    with OvsSandbox() as sb:
        results = _run(sb, "emu", EMU_WALKED)
    for (in_port, text, *_), (plain, ours, pins, errors) in zip(EMU_WALKED, results):
        assert not errors and plain, (text, errors)
        assert ours == plain, (text, plain, ours)
        assert pins["one"] == pins["ovs"], (text, pins)
    assert len(results[3][2]["ovs"]) == 1  # (TTL 2 -> 1, then invalid_ttl: one packet-in)


def test_on_the_emulator_nat_and_check_pkt_larger_into_a_header_field_stay_refused():
    with OvsSandbox() as sb:
        results = _run(sb, "emu", EMU_REFUSED)
    for plain, ours, pins, errors in results:
        assert errors and errors[0][0] == W.OFPET_BAD_ACTION and not ours and not pins["one"], (errors, ours)


def test_random_packet_outs_sent_whole_run_as_on_one_bridge():
    from tandem.testing.packet_out_oracle import run_translation

    with OvsSandbox() as sb:  # (bounded: tandem bench packet_out_oracle -- --only translation --packet-ins --whole)
        r = run_translation(sb, 200, seed=5, packet_ins=True, whole=True)
    assert r.packet_outs >= 200 and r.packet_ins > 150 and r.checks > 50
    assert not r.mismatches, r.mismatches[0]


def test_dp_core_runs_random_packet_outs_sent_whole_as_one_bridge():
    from tandem.testing.packet_out_whole_dp import run_dp_whole

    with OvsSandbox() as sb:  # (bounded: tandem bench packet_out_oracle -- --only dp --packet-ins --whole)
        r = run_dp_whole(sb, 200, seed=5)
    assert r.packet_outs >= 200 and r.packet_ins > 150 and r.checks > 50
    assert not r.mismatches, r.mismatches[0]


# (poemu) a PACKET_OUT applying a group with ct in a bucket, with packet-ins: the host's dp-core sends them on the
# emulator backend (packet_out_ct_group.py); after check_pkt_larger it stays refused there
CT_GROUPS = ["group_id=1,type=all,bucket=ct(commit,zone=2),output:3,bucket=output:4",
             "group_id=2,type=all,bucket=ct(commit,table=1),bucket=set_field:02:00:00:00:00:07->eth_dst,output:1"]
CT_GROUP_CASES = [
    (2, "group:1,CONTROLLER"),
    (1, "controller(userdata=0a.0b,id=0),group:2,output:4"),
    (4, "ct_clear,CONTROLLER,group:1,clone(controller(max_len=64))"),
    (OFPP_CONTROLLER, "group:2,CONTROLLER,output:2"),
]


@pytest.mark.parametrize("backend_name", ["ovs", "emu"])
def test_packet_ins_in_a_packet_out_applying_a_ct_group_are_the_hosts_as_on_one_bridge(backend_name):
    with OvsSandbox() as sb:
        results = _run(sb, backend_name, CT_GROUP_CASES, CT_GROUPS)
    for (in_port, text), (plain, ours, pins, errors) in zip(CT_GROUP_CASES, results):
        assert not errors, (text, errors)
        assert ours == plain, (text, plain, ours)
        assert pins["one"] == pins["ovs"] and pins["ovs"], (text, pins)


def test_on_the_emulator_check_pkt_larger_in_a_packet_out_applying_a_ct_group_stays_refused():
    with OvsSandbox() as sb:
        results = _run(sb, "emu", [(2, "check_pkt_larger(40)->NXM_NX_REG1[0],group:1,CONTROLLER")], CT_GROUPS)
    (plain, ours, pins, errors), = results
    assert errors and errors[0] == (W.OFPET_BAD_ACTION, W.OFPBAC_BAD_TYPE) and not ours and not pins["one"], errors
