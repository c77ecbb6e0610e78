"""Connection tracking through a real OpenFlow 1.3 connection to OneSwitch, on the
emulator (dp-core's tracker) and on the OVS backend (the host bridge's conntrack):
a stateful firewall whose two sides are ports of different sNICs. The first ct rule extends every sNIC port to the host (one
tracker sees both directions); replies of a connection opened from the inside
pass, unsolicited packets from the outside do not; ct_mark set at commit is
matched by later packets; deleting the ct rules moves the ports back."""

from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.ids import N_PHYSICAL_TABLES
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.rules import ofwire_msgs as M
from tandem.rules.ir import FlowMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.packets import build_frame

TOPO = Path(__file__).with_name("three_switches.yaml")
# inside: virtual port 2 (snic0:1); outside: virtual port 3 (snic1:1)
FIREWALL = [
    "table=0,priority=10,ip,actions=ct(table=1,zone=3)",
    "table=0,priority=0,actions=drop",
    "table=1,priority=20,ip,in_port=2,ct_state=+trk+new,actions=ct(commit,zone=3,exec(set_field:0x7->ct_mark)),output:3",
    "table=1,priority=20,ip,in_port=2,ct_state=+trk+est,actions=output:3",
    "table=1,priority=20,ip,in_port=3,ct_state=+trk+est+rpl,ct_mark=0x7,actions=output:2",
    "table=1,priority=10,ip,ct_state=+trk,actions=output:1",  # anything else: to the host's port 1
]


def _flow(c: OFClient, text: str, cmd: str = "add") -> None:
    c.send(M.encode_flow_mod(c.next_xid(), FlowMod(cmd, parse_rule(text))))


async def _firewall(backend_name: str, **opts):
    """A OneSwitch endpoint on the backend, its controller connection, FIREWALL installed."""
    topo = load_topology(TOPO)
    backend = make_backend(backend_name, **opts)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    for text in FIREWALL:
        _flow(c, text)
    assert errors_in(await c.barrier()) == []
    return topo, backend, ep, c


def check_firewall_traffic(backend) -> None:
    """On the emulator: an unsolicited probe from outside, then a connection from inside
    and its replies; only the connection's replies come in, the probe goes to port 1."""
    emu, dev = backend.machine.emu, backend.machine.devices
    out = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=4000, udp_dst=53)
    reply = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4000)
    probe = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4001)
    t = 0.0
    for sw, frame in (("snic1", probe), ("snic0", out), ("snic1", reply), ("snic0", out), ("snic1", reply)):
        t += 1e6  # 1 ms apart: each crosses to the host and back before the next
        emu.inject(("switch", dev[sw], 1), frame, t)
    backend.run_for(0.1)
    assert backend.take_output("snic1", 1) == [out, out]  # inside -> outside
    assert backend.take_output("snic0", 1) == [reply, reply]  # only replies of its connection come in
    assert backend.take_output("host", 1) == [probe]  # the unsolicited packet is not let in


@async_test
async def test_a_stateful_firewall_across_two_snics_in_the_emulator():
    topo, backend, ep, c = await _firewall("emu", n_tables=N_PHYSICAL_TABLES)
    try:
        assert {ep.state.topo.port_map[v].switch for v in (2, 3, 4)} == {"host"}  # extended: one tracker
        check_firewall_traffic(backend)
        for text in FIREWALL:
            _flow(c, text, "delete_strict")
        assert errors_in(await c.barrier()) == []
        assert ep.state.extensions == {} and ep.state.topo == topo  # no ct rule: the ports are back
    finally:
        await ep.close()
        await backend.close()


@pytest.mark.ovs
@async_test
async def test_the_same_firewall_on_the_ovs_backend_runs_on_the_host_bridges_conntrack():
    _, backend, ep, c = await _firewall("ovs")
    try:
        assert ep.state.topo.ingress_switches == ("host",)
        sb, br = backend.sandbox, backend.bridges
        host = sb.dump_flows(br["host"])
        assert any("ct(commit,zone=3,exec(set_field:0x7->ct_mark))" in f for f in host), host
        out = build_frame(ipv4_src=0x0A000001, ipv4_dst=0x0A000002, udp_src=4000, udp_dst=53)
        reply = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4000)
        probe = build_frame(ipv4_src=0x0A000002, ipv4_dst=0x0A000001, udp_src=53, udp_dst=4001)
        got: dict = {}
        for sw, frame in (("snic1", probe), ("snic0", out), ("snic1", reply)):
            sb.inject(br[sw], 1, [frame])
            sb.settle()
            for k, v in sb.take_all_output().items():
                got[k] = got.get(k, []) + v
        assert got[(br["snic1"], 1)] == [out] and got[(br["snic0"], 1)] == [reply] and got[(br["host"], 1)] == [probe]
    finally:
        await ep.close()
        await backend.close()
