"""Meters through a real OpenFlow 1.3 connection to OneSwitch.

* Emulator backend: a controller adds a 1 Mb/s drop meter and a rule
  ``in_port=1 → meter:1, output:3`` (port 3 is on another switch, so frames
  cross the modelled PCIe link); a 10 Mb/s flow offered for 5 s of modelled
  time leaves at 1 Mb/s ± 5 %, and the METER multipart counts every dropped
  packet and byte.
* OVS backend: the virtual meter becomes an OVS meter on every bridge;
  METER_CONFIG / METER_FEATURES answer in virtual terms; dscp_remark bands,
  which OVS's userspace datapath does not run, are refused as OVS refuses them.
* Refusals: unknown meters, a meter that would run on two switches (two
  budgets), METER_EXISTS / UNKNOWN_METER; deleting a meter deletes its flows.
"""

from pathlib import Path

import pytest

from endpoint_helpers import OFClient, errors_in
from test_endpoint_protocol import async_test
from tandem.backends.factory import make_backend
from tandem.oneswitch.endpoint import OneSwitchEndpoint, layout_for
from tandem.oneswitch.state import OneSwitchState
from tandem.oneswitch.topology import load_topology
from tandem.oneswitch.translate import DELIVERY_TABLE
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
    backend, ep, c = await _serve("emu", n_tables=DELIVERY_TABLE + 1)
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
async def test_meter_rules_stay_one_budget_and_bad_meter_mods_are_refused():
    backend, ep, c = await _serve("fake")
    try:
        x_unknown = _flow(c, "in_port=1,actions=meter:1,output:3")
        _meter(c, MeterMod("add", DROP_1M))
        x_exists = _meter(c, MeterMod("add", DROP_1M))
        x_modify = _meter(c, MeterMod("modify", Meter(7, (MeterBand("drop", 5),))))
        x_wild = _flow(c, "priority=3,ip,actions=meter:1,output:3")  # every ingress switch: two budgets
        _flow(c, "priority=4,in_port=1,actions=meter:1,output:3")  # host owns meter 1
        _flow(c, "priority=4,in_port=1,tcp,actions=meter:1,output:2")  # same switch: fine
        x_other = _flow(c, "priority=4,in_port=2,actions=meter:1,output:3")  # snic0: a second budget
        errs = errors_in(await c.barrier())
        assert (x_unknown, W.OFPET_METER_MOD_FAILED, 3) in errs  # UNKNOWN_METER
        assert (x_exists, W.OFPET_METER_MOD_FAILED, 1) in errs  # METER_EXISTS
        assert (x_modify, W.OFPET_METER_MOD_FAILED, 3) in errs
        assert (x_wild, W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM) in errs
        assert (x_other, W.OFPET_FLOW_MOD_FAILED, W.OFPFMFC_EPERM) in errs
        assert len(errs) == 5, errs
        # the meter is configured on every physical switch; the rules only on the host
        assert all(1 in backend.meter_tables[sw] for sw in backend.switches())
        assert sum(1 for r in ep.state.virtual_rules() if r.meter == 1) == 2
        # deleting the meter deletes its flows (and sends no error)
        _meter(c, MeterMod("delete", Meter(OFPM_ALL)))
        assert errors_in(await c.barrier()) == []
        assert not [r for r in ep.state.virtual_rules() if r.meter is not None]
        assert all(not backend.meter_tables.get(sw) for sw in backend.switches())
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
    finally:
        await ep.close()
        await backend.close()
