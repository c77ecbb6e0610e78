"""Homing on demand, side by side: one plain Open vSwitch 3.1 bridge and OneSwitch over OVS
bridges or the emulator (the topology of testing/packet_out_oracle.py: 1 on the host, 2 and 4
on snic0, 3 on snic1), the same rules, frames and PACKET_OUTs on both.

A PACKET_OUT's ``output:NORMAL`` arrives while the sNIC ports run their pipelines there: the
endpoint extends every port to the host first (oneswitch/packet_out_whole.py), then runs it on
the host's NORMAL. Measured here: what each port gets at every step (frames byte for byte) and
the rules' packet counters at the end are the plain bridge's, before and after the move."""

from __future__ import annotations

import asyncio

import pytest

from tandem.backends.ovs_sandbox import OvsSandbox
from tandem.rules import ofwire_stats as S
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import OFPP_CONTROLLER, FlowMod
from tandem.rules.ofctl import parse_actions, parse_rule
from tandem.rules.packets import build_frame

pytestmark = [pytest.mark.ovs]

A, B, C, D = 0x0200_0000_000A, 0x0200_0000_000B, 0x0200_0000_000C, 0x0200_0000_000D
FLOWS = ("priority=5,in_port=2,actions=output:3", "priority=5,in_port=3,actions=output:4",
         "priority=4,in_port=4,actions=output:2")
# (inject at ports | PACKET_OUT (in_port, actions, frame)), and what the plain bridge sends: {port: count}
STEPS = [
    ({2: build_frame(eth_src=A, eth_dst=B), 3: build_frame(eth_src=B, eth_dst=A)}, {3: 1, 4: 1}),
    # NORMAL from CONTROLLER learns nothing and floods to every port (sNIC ports homed first)
    ((OFPP_CONTROLLER, "NORMAL", build_frame(eth_src=A, eth_dst=B)), {1: 1, 2: 1, 3: 1, 4: 1}),
    # from port 4: C is learned there, A is unknown (flooded, not back to 4)
    ((4, "NORMAL", build_frame(eth_src=C, eth_dst=A)), {1: 1, 2: 1, 3: 1}),
    # to C: learned at 4
    ((OFPP_CONTROLLER, "NORMAL", build_frame(eth_src=D, eth_dst=C)), {4: 1}),
    # the rules run on the host now, as before
    ({2: build_frame(eth_src=A, eth_dst=B), 4: build_frame(eth_src=B, eth_dst=D)}, {3: 1, 2: 1}),
    # changes before NORMAL and an output beside it
    ((2, "output:3,set_field:02:00:00:00:00:0d->eth_src,NORMAL", build_frame(eth_src=A, eth_dst=C)), {3: 1, 4: 1}),
    # a FLOW_MOD: the ports go back to their sNICs first (their host copies' counters carried), then the rule
    ("priority=6,in_port=3,eth_src=02:00:00:00:00:0e,actions=output:1", {}),
    ({2: build_frame(eth_src=A, eth_dst=B), 3: build_frame(eth_src=0x0200_0000_000E, eth_dst=A)}, {3: 1, 1: 1}),
]


def _flow_stats(replies) -> dict:
    out = {}
    for m in replies:
        mtype, _, body = S.decode_multipart_reply(m.body)
        if mtype == S.OFPMP_FLOW:
            out.update({(e.rule.priority, str(e.rule.match)): e.packet_count for e in S.decode_flow_stats(body)})
    return out


def _run(sb, backend_name: str):
    from tandem.backends.factory import make_backend
    from tandem.backends.ovs import OvsBackend
    from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
    from tandem.oneswitch.ids import N_PHYSICAL_TABLES
    from tandem.oneswitch.state import OneSwitchState
    from tandem.oneswitch.topology import Topology
    from tandem.testing.packet_out_oracle import PORTS, TOPOLOGY, _Conn, _packet_out

    topo = Topology.build(TOPOLOGY["switches"], TOPOLOGY["links"], TOPOLOGY["ports"])
    wires = dict(topo.port_map)  # (the physical ports; the port map follows the extensions)
    sb.add_bridge("plain", PORTS)
    emu = backend_name == "emu"
    steps, homed = [], []

    async def go() -> None:
        backend = make_backend("emu", n_tables=N_PHYSICAL_TABLES) if emu else OvsBackend(sandbox=sb)
        await backend.start(layout_for(topo))
        ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
        one = await _Conn(*await asyncio.open_connection("127.0.0.1", await ep.listen("ptcp:0:127.0.0.1"))).hello()
        ovs = await _Conn(*await asyncio.open_unix_connection(sb.mgmt("plain").removeprefix("unix:"))).hello()
        try:
            for c in (ovs, one):
                for f in FLOWS:
                    c.send(lambda x, f=f: M.encode_flow_mod(x, FlowMod("add", parse_rule(f))))
                assert await c.barrier() == []
            for what, _ in STEPS:
                homed.append({ref.switch for ref in ep.state.topo.port_map.values()} == {topo.host})
                errors = {}
                if isinstance(what, str):
                    for c in (ovs, one):
                        c.send(lambda x: M.encode_flow_mod(x, FlowMod("add", parse_rule(what))))
                        errors["ovs" if c is ovs else "one"] = await c.barrier()
                elif isinstance(what, dict):
                    for v, frame in what.items():
                        sb.inject("plain", v, [frame])
                        if emu:
                            backend.inject(wires[v].switch, wires[v].port, frame)
                        else:
                            sb.inject(f"tnd-{wires[v].switch}", wires[v].port, [frame])
                else:
                    in_port, text, frame = what
                    for name, c in (("ovs", ovs), ("one", one)):
                        c.send(_packet_out(in_port, tuple(parse_actions(text)), frame))
                        errors[name] = await c.barrier()
                sb.settle()
                out = sb.take_all_output()
                plain = {p: sorted(out[("plain", p)]) for p in PORTS if out.get(("plain", p))}
                if emu:
                    backend.run_for(0.01)
                    got = {v: backend.take_output(w.switch, w.port) for v, w in wires.items()}
                else:
                    got = {v: out.get((f"tnd-{w.switch}", w.port)) for v, w in wires.items()}
                steps.append((plain, {v: sorted(fs) for v, fs in got.items() if fs}, errors))
            stats = []
            await asyncio.sleep(1.2)  # (Open vSwitch credits a datapath flow's hits to its rule at revalidation)
            for c in (ovs, one):
                c.send(lambda x: S.encode_multipart_request(x, S.MultipartRequest(S.OFPMP_FLOW, 0,
                                                                                   flow=S.FlowStatsRequest())))
                assert await c.barrier() == []
                stats.append(_flow_stats(c.replies))
            steps.append(stats)
        finally:
            one.close()
            ovs.close()
            await ep.close()
            await backend.close()

    asyncio.run(go())
    return steps, homed


@pytest.mark.parametrize("backend_name", ["ovs", "emu"])
def test_a_normal_packet_out_homes_every_port_and_nothing_observable_changes(backend_name):
    with OvsSandbox() as sb:
        steps, homed = _run(sb, backend_name)
    # (homed by the first NORMAL PACKET_OUT, kept while PACKET_OUTs and frames come, back before the FLOW_MOD)
    assert homed == [False, False, True, True, True, True, True, False]
    *frames, (plain_stats, our_stats) = steps
    for (what, expected), (plain, ours, errors) in zip(STEPS, frames):
        assert {p: len(fs) for p, fs in plain.items()} == expected, (what, plain)
        assert not errors.get("ovs") and not errors.get("one"), (what, errors)
        assert ours == plain, (what, plain, ours)
    assert plain_stats == our_stats and sorted(plain_stats.values()) == [1, 1, 1, 3], (plain_stats, our_stats)
