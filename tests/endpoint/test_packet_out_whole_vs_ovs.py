"""A PACKET_OUT sent whole to the host switch (oneswitch/packet_out_whole.py), side by side:
one plain Open vSwitch 3.1 bridge and OneSwitch over OVS bridges (the topology of
testing/packet_out_oracle.py: 1 on the host, 2 and 4 on snic0, 3 on snic1), the same
PACKET_OUTs on both; the frames each port gets and the packet-ins compared byte for byte.

Packet-ins after ``ct`` (also with ``exec``, ``nat``, a zone, ``ct_clear`` after it) and after
``check_pkt_larger``, and ``check_pkt_larger`` into a packet header field: the host's Open
vSwitch, every port homed there first, runs them as one bridge does, and its packet-ins
come back as the virtual ones (reason ``action``, table 0, no cookie, the virtual in_port,
ct fields as the host's tracker set them). On the emulator backend they stay refused."""

from __future__ import annotations

import asyncio

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire as W
from tandem.rules.ir import OFPP_CONTROLLER, OFPP_LOCAL
from tandem.rules.ofctl import parse_actions
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


def _run(sb, backend_name: str, cases, setup=()):
    from tandem.backends.factory import make_backend
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.ids import N_PHYSICAL_TABLES
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology
    from tandem.testing.packet_out_oracle import PORTS, TOPOLOGY, _Conn, _packet_out
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
                for build in setup:  # (messages before the cases, e.g. a TLV map)
                    c.send(build)
            for i, (in_port, text) in enumerate(cases):
                errors, pins = {}, {}
                for name, c in (("ovs", ovs), ("one", one)):
                    packet_in_format(c, i)  # (the three formats in turn)
                    c.packet_ins.clear()
                    c.send(_packet_out(in_port, tuple(parse_actions(text)), TCP))
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


def test_on_the_emulator_backend_they_stay_refused():
    with OvsSandbox() as sb:
        results = _run(sb, "emu", CASES[:2] + CASES[8:9])
    for plain, ours, pins, errors in results:
        assert errors and errors[0][0] == W.OFPET_BAD_ACTION and not ours and not pins["one"], (errors, ours)


def test_random_packet_outs_sent_whole_run_as_on_one_bridge():
    from tandem.testing.packet_out_oracle import run_translation

    with OvsSandbox() as sb:  # (bounded: tandem bench packet_out_oracle -- --only translation --packet-ins --whole)
        r = run_translation(sb, 200, seed=5, packet_ins=True, whole=True)
    assert r.packet_outs >= 200 and r.packet_ins > 150 and r.checks > 50
    assert not r.mismatches, r.mismatches[0]
