"""Meters through a real OpenFlow 1.3 connection to OneSwitch.

* Emulator backend: a controller adds a 1 Mb/s drop meter and a rule
  ``in_port=1 → meter:1, output:3`` (port 3 is on another switch, so frames
  cross the modelled PCIe link); a 10 Mb/s flow offered for 5 s of modelled
  time leaves at 1 Mb/s ± 5 %, and the METER multipart counts every dropped
  packet and byte.
* One budget across switches: a wildcard rule ``ip → meter:1, output:1`` with
  10 Mb/s offered at a port of each sNIC (two ingress switches): the sNIC
  ports are extended to the host (oneswitch/extension.py), the one meter
  passes 1 Mb/s ± 5 % in total, and the stats count all dropped bytes.
* OVS backend: the virtual meter becomes an OVS meter on every bridge;
  METER_CONFIG / METER_FEATURES answer in virtual terms; dscp_remark bands,
  which OVS's userspace datapath does not run, are refused as OVS refuses them;
  a wildcard metered rule meters frames from every switch on the host's meter.
* The same on the emulator over a scenario (``tandem serve --scenario``): the
  port pairs are built on the scenario's PCIe links; on a chain topology (an
  sNIC with no link to the host) through the sNIC in between.
* Releases: when the last metered rule that needed an extended port goes (a
  flow delete, a meter delete), the port moves back to its sNIC.
* Refusals: unknown meters (INVALID_METER in a flow, UNKNOWN_METER in a
  METER_MOD, as OVS), METER_EXISTS, a backend that cannot build port pairs;
  deleting a meter deletes its flows.
"""

import asyncio
from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.extension import wire_rules
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import Topology, load_topology
from tandem.oneswitch.ids import N_PHYSICAL_TABLES, WIRE_PRIORITY, is_delivery_key
from tandem.rules import ofwire as W
from tandem.rules import ofwire_msgs as M
from tandem.rules import ofwire_stats as S
from tandem.rules.ir import FlowMod
from tandem.rules.meters import OFPM_ALL, Meter, MeterBand, MeterMod
from tandem.rules.ofctl import parse_rule
from tandem.rules.ofwire_meter import decode_meter_configs, decode_meter_features, decode_meter_stats, encode_meter_mod
from tandem.rules.packets import build_frame

TOPO = Path(__file__).with_name("three_switches.yaml")
DROP_1M = Meter(1, (MeterBand("drop", 1000, 20),), burst=True, stats=True)


async def _serve(backend_name: str, **opts):
    topo = load_topology(TOPO)
    backend = make_backend(backend_name, **opts)
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    return backend, ep, c


async def _multipart(c: OFClient, req: S.MultipartRequest) -> bytes:
    m = await c.request(lambda x: S.encode_multipart_request(x, req), W.OFPT_MULTIPART_REPLY)
    return S.decode_multipart_reply(m.body)[2]


def _flow(c: OFClient, text: str, cmd: str = "add") -> int:
    xid = c.next_xid()
    c.send(M.encode_flow_mod(xid, FlowMod(cmd, parse_rule(text))))
    return xid


def _meter(c: OFClient, mod: MeterMod) -> int:
    xid = c.next_xid()
    c.send(encode_meter_mod(xid, mod))
    return xid


@async_test
async def test_drop_meter_holds_ten_megabits_to_one_in_the_emulator():
    backend, ep, c = await _serve("emu", n_tables=N_PHYSICAL_TABLES)
    try:
        _meter(c, MeterMod("add", DROP_1M))
        _flow(c, "priority=10,in_port=1,actions=meter:1,output:3")
        assert errors_in(await c.barrier()) == []
        frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=5000, payload=bytes(1250 - 42))
        seconds, gap_ns = 5.0, 1250 * 8 * 1e9 / 10e6  # 10 Mb/s offered
        n = int(seconds * 1e9 / gap_ns)
        dev = backend.machine.devices["host"]
        for i in range(n):
            backend.machine.emu.inject(("switch", dev, 1), frame, i * gap_ns)
        backend.run_for(seconds + 0.1)
        out = backend.take_output("snic1", 1)
        rate = len(out) * 1250 * 8 / seconds
        assert abs(rate - 1e6) / 1e6 <= 0.05, rate
        [st] = decode_meter_stats(await _multipart(c, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)))
        dropped = n - len(out)
        assert dropped > 0.85 * n
        assert (st.meter_id, st.flow_count, st.packet_in_count, st.byte_in_count) == (1, 1, n, n * 1250)
        assert st.band_stats == ((dropped, dropped * 1250),)
        assert decode_meter_configs(await _multipart(c, S.MultipartRequest(S.OFPMP_METER_CONFIG, 0))) == [DROP_1M]
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_one_meter_is_one_budget_for_two_ingress_switches_in_the_emulator():
    backend, ep, c = await _serve("emu", n_tables=N_PHYSICAL_TABLES)
    try:
        _meter(c, MeterMod("add", DROP_1M))
        _flow(c, "priority=10,ip,actions=meter:1,output:1")  # wildcard in_port: every switch's ports
        _flow(c, "priority=5,actions=output:2")  # unmetered traffic keeps its own path
        assert errors_in(await c.barrier()) == []
        topo = ep.state.topo
        assert {topo.port_map[v].switch for v in (2, 3, 4)} == {"host"}  # extended to the host
        frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=5000, payload=bytes(1250 - 42))
        arp = build_frame(eth_type=0x0806, payload=bytes(28))
        seconds, gap_ns = 5.0, 1250 * 8 * 1e9 / 10e6  # 10 Mb/s offered at each sNIC
        n = int(seconds * 1e9 / gap_ns)
        emu = backend.machine.emu
        for sw, port, phase in (("snic0", 1, 0.0), ("snic1", 1, gap_ns / 2)):
            dev = backend.machine.devices[sw]
            for i in range(n):
                emu.inject(("switch", dev, port), frame, i * gap_ns + phase)
        for i in range(10):  # not IP: misses the metered rule, leaves at port 2 (snic0:1) from snic1 and host
            emu.inject(("switch", backend.machine.devices["snic1"], 1), arp, i * 1e6)
            emu.inject(("switch", backend.machine.devices["host"], 1), arp, i * 1e6 + 5e5)
        backend.run_for(seconds + 0.1)
        out = backend.take_output("host", 1)
        assert set(out) == {frame}
        rate = len(out) * 1250 * 8 / seconds
        assert abs(rate - 1e6) / 1e6 <= 0.05, rate  # one budget: ~1 Mb/s in total, not 2
        assert backend.take_output("snic0", 1) == [arp] * 20
        [st] = decode_meter_stats(await _multipart(c, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)))
        dropped = 2 * n - len(out)
        assert (st.flow_count, st.packet_in_count, st.byte_in_count) == (1, 2 * n, 2 * n * 1250)
        assert st.band_stats == ((dropped, dropped * 1250),)
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_meter_rules_stay_one_budget_and_bad_meter_mods_are_refused():
    backend, ep, c = await _serve("fake")
    try:
        x_unknown = _flow(c, "in_port=1,actions=meter:1,output:3")
        _meter(c, MeterMod("add", DROP_1M))
        x_exists = _meter(c, MeterMod("add", DROP_1M))
        x_modify = _meter(c, MeterMod("modify", Meter(7, (MeterBand("drop", 5),))))
        _meter(c, MeterMod("add", Meter(2, (MeterBand("drop", 5),))))
        _flow(c, "priority=4,in_port=1,actions=meter:1,output:3")  # host owns meter 1
        _flow(c, "priority=4,in_port=1,tcp,actions=meter:1,output:2")  # same switch: nothing moves
        _flow(c, "priority=4,in_port=2,actions=meter:2,output:3")  # snic0 owns meter 2
        _flow(c, "priority=4,in_port=4,actions=meter:2,output:3")
        errs = errors_in(await c.barrier())
        assert sorted(errs) == sorted([(x_unknown, W.OFPET_METER_MOD_FAILED, 2),  # INVALID_METER (as OVS)
                                       (x_exists, W.OFPET_METER_MOD_FAILED, 1),  # METER_EXISTS
                                       (x_modify, W.OFPET_METER_MOD_FAILED, 3)]), errs
        topo = topo_at_start = ep.state.topo
        assert [topo.port_map[v].switch for v in (1, 2, 3, 4)] == ["host", "snic0", "snic1", "snic0"]
        # meter 1 on snic0 too: port 2 moves to the host, which splits meter 2 (ports 2, 4): port 4 follows
        _flow(c, "priority=4,in_port=2,tcp,actions=meter:1,output:3")
        assert errors_in(await c.barrier()) == []
        topo = ep.state.topo
        assert [topo.port_map[v].switch for v in (1, 2, 3, 4)] == ["host", "host", "snic1", "host"]
        # a wildcard metered rule: every port's pipeline on the host
        _flow(c, "priority=3,ip,actions=meter:1,output:3")
        assert errors_in(await c.barrier()) == []
        topo = ep.state.topo
        assert topo.ingress_switches == ("host",)
        for v in (2, 3, 4):  # the sNICs now only wire each extended port to its pair
            e = ep.state.extensions[v]
            assert {r for sw, eg, ing in wire_rules(e) for r in (eg, ing)} <= set(backend.tables[e.switch].values())
        # and deliver what crosses to them
        wires = {(sw, r) for v in (2, 3, 4) for sw, eg, ing in wire_rules(ep.state.extensions[v]) for r in (eg, ing)}
        assert all(is_delivery_key(k) or (sw, r) in wires for sw in ("snic0", "snic1") for k, r in backend.tables[sw].items())
        for r in ep.state.virtual_rules():  # every metered rule has one copy, on the host
            if r.meter is not None:
                assert {sw for sw, _ in ep.state.ingress_rules(r)} == {"host"}, r
        # the meter is configured on every physical switch
        assert all(1 in backend.meter_tables[sw] for sw in backend.switches())
        assert sum(1 for r in ep.state.virtual_rules() if r.meter == 1) == 4
        # deleting a metered rule that no meter's switch depends on releases nothing
        _flow(c, "priority=4,in_port=2,tcp,actions=meter:1,output:3", "delete_strict")
        assert errors_in(await c.barrier()) == [] and sorted(ep.state.extensions) == [2, 3, 4]
        # deleting the meter deletes its flows (and sends no error); meter 2's rules (ports 2, 4 on
        # snic0) no longer meet another meter's: every port goes back to its sNIC
        _meter(c, MeterMod("delete", Meter(1)))
        assert errors_in(await c.barrier()) == []
        assert [r.meter for r in ep.state.virtual_rules() if r.meter is not None] == [2, 2]
        assert ep.state.extensions == {} and ep.state.topo == topo_at_start
        assert not [k for sw in ("snic0", "snic1") for k in backend.tables[sw] if k[:2] == (0, WIRE_PRIORITY)]  # no wire rules
        _meter(c, MeterMod("delete", Meter(OFPM_ALL)))
        assert errors_in(await c.barrier()) == []
        assert not [r for r in ep.state.virtual_rules() if r.meter is not None]
        assert all(not backend.meter_tables.get(sw) for sw in backend.switches())
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_port_with_no_link_to_the_host_is_extended_through_the_snic_between():
    # host - s0 - s1 in a chain: s1's port 3 reaches the host through a pair on each link
    topo = Topology.build({"h": "host", "s0": "snic", "s1": "snic"}, [("h:10", "s0:10"), ("s0:11", "s1:10")],
                          {1: "h:1", 2: "s0:1", 3: "s1:1"})
    backend = make_backend("fake")
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        _meter(c, MeterMod("add", DROP_1M))
        _flow(c, "priority=4,in_port=3,actions=meter:1,output:1")  # one switch (s1): nothing moves
        assert errors_in(await c.barrier()) == [] and ep.state.extensions == {}
        _flow(c, "priority=3,ip,actions=meter:1,output:1")  # s0's and s1's ports move to the host
        assert errors_in(await c.barrier()) == []
        assert ep.state.topo.ingress_switches == ("h",)
        assert [len(ep.state.extensions[v].hops) for v in (2, 3)] == [1, 2]
        assert len(backend.pairs) == 3  # s0-h for port 2; s1-s0 and s0-h for port 3
        for r in ep.state.virtual_rules():
            assert {sw for sw, _ in ep.state.ingress_rules(r)} == {"h"}, r
        _flow(c, "priority=3,ip,actions=meter:1,output:1", "delete_strict")  # port 3's own rule keeps s1
        assert errors_in(await c.barrier()) == [] and ep.state.topo == topo
    finally:
        await ep.close()
        await backend.close()


@async_test
async def test_a_backend_that_cannot_build_port_pairs_refuses_a_meter_on_two_switches():
    topo = load_topology(TOPO)
    backend = make_backend("fake")
    backend.extension_pairs = False
    await backend.start(layout_for(topo))
    ep = OneSwitchEndpoint(OneSwitchState(topo), topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        _meter(c, MeterMod("add", DROP_1M))
        x_wild = _flow(c, "priority=3,ip,actions=meter:1,output:3")
        x_one = _flow(c, "priority=3,in_port=3,ip,actions=meter:1,output:1")
        assert errors_in(await c.barrier()) == [(x_wild, W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM)]
        assert x_one and ep.state.topo == topo  # nothing moved; the one-switch rule is in
        assert [r.match.get("in_port").value for r in ep.state.virtual_rules() if r.meter == 1] == [3]
    finally:
        await ep.close()
        await backend.close()


TWO_SNICS = """
name: two-snic-meter
devices:
  host: {kind: host, cores: 8, clock: 2.7GHz}
  snic0: {kind: snic, cores: 16, clock: 1.2GHz, ports: {eth0: {rate: 10Gbps}}}
  snic1: {kind: snic, cores: 16, clock: 1.2GHz, ports: {eth0: {rate: 10Gbps}}}
links:
  pcie0: {snic: snic0, bandwidth: 32Gbps, round_trip: 26us}
  pcie1: {snic: snic1, bandwidth: 32Gbps, round_trip: 26us}
instances:
  vm1: {kind: vm, ports: [eth0]}
run: {duration: 1s, seed: 1}
"""


@async_test
async def test_one_budget_on_the_emulator_of_a_scenario():
    """`tandem serve --scenario`'s backend builds the pairs on the scenario's PCIe links."""
    import tempfile

    from tandem.backends.emu_scenario import ScenarioEmuBackend
    from tandem.model.load import load_scenario
    from tandem.oneswitch.scenario import derive_topology

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "two.yaml"
        path.write_text(TWO_SNICS)
        sc = load_scenario(path)
    topo = derive_topology(sc, {})  # virtual 1 = snic0.eth0, 2 = snic1.eth0, 3 = vm1.eth0 (host)
    backend = ScenarioEmuBackend(sc, {})
    await backend.start(layout_for(topo))
    state = OneSwitchState(topo, pin_infrastructure=True)
    await backend.apply_steps(state.take_plan().steps)
    ep = OneSwitchEndpoint(state, topo, backend)
    c = await OFClient.connect(await ep.listen("ptcp:0:127.0.0.1"))
    try:
        _meter(c, MeterMod("add", DROP_1M))
        _flow(c, "priority=10,udp,actions=meter:1,output:3")
        assert errors_in(await c.barrier()) == []
        assert sorted(state.extensions) == [1, 2] and state.topo.ingress_switches == ("host",)
        assert {sw: sorted(p) for sw, p in backend.pair_ports.items()} == {"snic0": [0xF000], "snic1": [0xF001],
                                                                          "host": [0xF000, 0xF001]}
        frame = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=5000, payload=bytes(1250 - 42))
        seconds, gap_ns = 2.0, 1250 * 8 * 1e9 / 10e6  # 10 Mb/s offered at each sNIC's Ethernet port
        n = int(seconds * 1e9 / gap_ns)
        emu = backend.machine.emu
        for v, phase in ((1, 0.0), (2, gap_ns / 2)):
            wire = state.wire_of(v)
            for i in range(n):
                emu.inject(("switch", backend.machine.devices[wire.switch], wire.port), frame, i * gap_ns + phase)
        backend.run_for(seconds + 0.1)
        [st] = decode_meter_stats(await _multipart(c, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)))
        passed = st.packet_in_count - st.band_stats[0][0]
        assert st.packet_in_count == 2 * n
        rate = passed * 1250 * 8 / seconds
        assert abs(rate - 1e6) / 1e6 <= 0.05, rate  # one budget: ~1 Mb/s in total, not 2
        _flow(c, "priority=10,udp,actions=drop", "delete_strict")
        assert errors_in(await c.barrier()) == []
        assert state.extensions == {} and state.topo == topo
    finally:
        await ep.close()
        await backend.close()


@pytest.mark.ovs
@async_test
async def test_virtual_meters_become_ovs_meters():
    backend, ep, c = await _serve("ovs")
    try:
        _meter(c, MeterMod("add", DROP_1M))
        x_remark = _meter(c, MeterMod("add", Meter(2, (MeterBand("dscp_remark", 100, 0, 1),))))
        _flow(c, "priority=10,in_port=1,actions=meter:1,output:3")
        errs = errors_in(await c.barrier())
        assert errs == [(x_remark, W.OFPET_METER_MOD_FAILED, 8)]  # BAD_BAND, as OVS answers it
        for sw, br in backend.bridges.items():
            dumped = backend.sandbox.ofctl("dump-meters", br)
            assert "meter=1 kbps burst stats bands=" in dumped and "type=drop rate=1000 burst_size=20" in dumped, (sw, dumped)
        host = backend.sandbox.dump_flows(backend.bridges["host"])
        assert any("actions=meter:1," in f and "output:101" in f for f in host), host
        feats = decode_meter_features(await _multipart(c, S.MultipartRequest(S.OFPMP_METER_FEATURES, 0)))
        assert feats.band_types == 1 << 1  # drop only
        frame = build_frame(eth_type=0x0800, ip_proto=17, payload=bytes(100))
        backend.sandbox.inject(backend.bridges["host"], 1, [frame] * 5)
        backend.sandbox.settle()
        [st] = decode_meter_stats(await _multipart(c, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)))
        assert st.flow_count == 1 and st.packet_in_count == 5 and st.byte_in_count == 5 * len(frame), st
        # a wildcard metered rule: OVS accepts it on one bridge, so OneSwitch must; frames entering at
        # every switch meet the one meter on the host
        _flow(c, "priority=20,udp,actions=meter:1,output:4")
        assert errors_in(await c.barrier()) == []
        assert ep.state.topo.ingress_switches == ("host",)
        udp = build_frame(eth_type=0x0800, ip_proto=17, udp_dst=7, payload=bytes(100))
        for br, port in (("host", 1), ("snic0", 1), ("snic1", 1)):
            backend.sandbox.inject(backend.bridges[br], port, [udp] * 3)
        backend.sandbox.settle()
        out = backend.sandbox.take_all_output()
        got = {k: len(v) for k, v in out.items() if v}
        assert got == {(backend.bridges["snic0"], 2): 9, (backend.bridges["snic1"], 1): 5}, got
        for _ in range(60):  # OVS moves datapath meter counters at revalidation
            [st] = decode_meter_stats(await _multipart(c, S.MultipartRequest(S.OFPMP_METER, 0, meter_id=1)))
            if st.packet_in_count == 14:
                break
            await asyncio.sleep(0.1)
        assert (st.flow_count, st.packet_in_count) == (2, 14), st
    finally:
        await ep.close()
        await backend.close()
