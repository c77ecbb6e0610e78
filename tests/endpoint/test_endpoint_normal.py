"""output:NORMAL through the OneSwitch endpoint, on the emulator backend (dp-core runs
NORMAL) and on OVS bridges: a NORMAL rule homes every port to the host, whose MAC table learns each
virtual port; its flood reaches every virtual port once (the PCIe link ports are
no-flood); a PACKET_OUT's NORMAL runs on the host's table, every port homed to the host
first when some pipeline runs on its sNIC (docs/endpoint.md, docs/oneswitch.md section 6)."""

from __future__ import annotations

import pytest

from endpoint_helpers import errors_in
from test_endpoint_learn import A, B, start_emu
from test_endpoint_ovs_view import start
from test_endpoint_protocol import async_test
from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPP_CONTROLLER, OFPP_NORMAL, FlowMod, Output
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame
from tandem.testing.normal_dp_oracle import ovs_fdb

WIRES = {1: ("host", 1), 2: ("snic0", 1), 3: ("snic1", 1), 4: ("snic0", 2)}
C = 0x0200_0000_000C


def _packet_out(c, in_port: int, frame: bytes) -> None:
    c.send(M.encode_packet_out(c.next_xid(), M.WirePacketOut(W.OFP_NO_BUFFER, in_port, (Output(OFPP_NORMAL),), frame)))


async def _scenario(ep, c, send, outputs, mac_table) -> None:
    """``send(vport, frame)`` injects at the port's wire, ``outputs()`` reads what left
    every wire since, ``mac_table()`` is the host's MAC table as (MAC, host port number)."""
    ab = build_frame(eth_src=A, eth_dst=B)
    # no NORMAL rule yet: sNIC ports run their pipelines there, and the PACKET_OUT homes them all first
    # (packet_out_whole.py); from CONTROLLER NORMAL learns nothing and floods to every port
    assert {ref.switch for ref in ep.state.topo.port_map.values()} != {ep.state.topo.host}
    _packet_out(c, OFPP_CONTROLLER, ab)
    assert errors_in(await c.barrier()) == []
    assert {ref.switch for ref in ep.state.topo.port_map.values()} == {ep.state.topo.host}
    assert outputs() == {1: [ab], 2: [ab], 3: [ab], 4: [ab]}
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod("add", parse_rule("priority=1,actions=NORMAL"))))
    assert errors_in(await c.barrier()) == []
    send(3, ab)  # A at virtual 3, B unknown: flooded to 1, 2 and 4, once each
    assert outputs() == {1: [ab], 2: [ab], 3: [], 4: [ab]}
    ba = build_frame(eth_src=B, eth_dst=A)
    send(2, ba)  # to A: learned at 3
    assert outputs() == {1: [], 2: [], 3: [ba], 4: []}
    ca = build_frame(eth_src=C, eth_dst=A)
    _packet_out(c, 4, ca)  # from virtual 4: C is learned there, the frame goes to A's port
    assert errors_in(await c.barrier()) == []
    assert outputs() == {1: [], 2: [], 3: [ca], 4: []}
    bc = build_frame(eth_src=B, eth_dst=C)
    send(1, bc)  # B moved to virtual 1; C was learned from the PACKET_OUT
    assert outputs() == {1: [], 2: [], 3: [], 4: [bc]}
    cb = build_frame(eth_src=C, eth_dst=B)
    _packet_out(c, OFPP_CONTROLLER, cb)
    assert errors_in(await c.barrier()) == []
    assert outputs() == {1: [cb], 2: [], 3: [], 4: []}
    hosted = {ref.port: v for v, ref in ep.state.topo.port_map.items()}
    assert {(mac, hosted[p]) for mac, p in mac_table()} == {(A, 3), (B, 1), (C, 4)}


@async_test
async def test_normal_on_the_emulator_backend_floods_learns_and_serves_packet_outs():
    ep, backend, c = await start_emu()
    host = backend._dev("host")

    def outputs():
        backend.run_for(0.01)
        return {v: backend.take_output(*w) for v, w in WIRES.items()}

    try:
        await _scenario(ep, c, lambda v, f: backend.inject(*WIRES[v], f), outputs,
                        lambda: [(mac, p) for p, _, mac, _ in backend.machine.emu.switch_mac_entries(host)])
    finally:
        await ep.close()
        await backend.close()


@pytest.mark.ovs
@async_test
async def test_normal_on_the_ovs_backend_floods_learns_and_serves_packet_outs():
    with OvsSandbox() as sb:
        ep, backend, c = await start(sb)

        def outputs():
            sb.settle()
            out = sb.take_all_output()
            return {v: out.get((f"tnd-{w[0]}", w[1]), []) for v, w in WIRES.items()}

        try:
            await _scenario(ep, c, lambda v, f: sb.inject(f"tnd-{WIRES[v][0]}", WIRES[v][1], [f]), outputs,
                            lambda: [(mac, p) for p, _, mac in ovs_fdb(sb, "tnd-host")])
        finally:
            await ep.close()
            await backend.close()
