"""An NF move keeps every virtual meter one budget (oneswitch/extension.py).

A controller's meter is used by two rules whose packets enter on the host: the
NF m1's out port and the VM's port. Moving m1 to the sNIC would split the meter
over two switches; once the move has ended the agent extends m1's port back
to the host through a port pair (one budget again), and moving m1 back to the
host gives the extension up. Every time the switches hold exactly what
OneSwitch wants, and every frame the VM gets has passed the one meter."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tandem.agent.api_server import open_agent
from tandem.agent.store import Store
from tandem.backends.base import MeterOp
from tandem.model.load import load_scenario
from tandem.nf.traffic import udp
from tandem.oneswitch.extension import split_meters
from tandem.oneswitch.ids import pkey
from tandem.rules.meters import Meter, MeterBand

SCENARIO = Path(__file__).with_name("agent-scenario.yaml")


def _installed(svc) -> dict:
    return {sw: {pkey(r): r for r, _ in svc.backend.rules[sw].values()} for sw in svc.backend.switches()}


def _wanted(svc) -> dict:
    return {sw: {pkey(r): r for r in svc.state.physical_rules(sw)} for sw in svc.backend.switches()}


def _metered(svc) -> int:
    """Packets meter 1 saw, on every switch."""
    m = svc.backend.machine
    return sum((m.emu.switch_meter_stats(m.devices[sw], 1) or (0,))[0] for sw in svc.backend.switches())


def test_a_move_that_would_split_a_meter_extends_the_moved_port_and_the_way_back_releases_it(tmp_path):
    async def go():
        svc, backend, state = await open_agent(load_scenario(SCENARIO), Store(tmp_path / "a.db"))
        vm, wire = svc.vp.number["vm1.eth0"], svc.vp.number["snic0.eth0"]
        _m1_in, m1_out = svc.vp.nf["m1"]

        async def move(to: str) -> None:
            if svc.nfs["m1"].record.device != to:
                mig = svc.request_migration("m1", to)
                await svc.wait_migrations()
                assert svc.migration(mig["id"])["status"] == "done", svc.migration(mig["id"])["error"]

        def send(n: int) -> int:
            """Frames that reached the VM's port while ``n`` more entered the wire (the scenario's
            own source sends too)."""
            ref = state.topo.port_map[vm]
            dev = backend.machine.devices[ref.switch]
            before = dict(backend.machine.emu.switch_counters(dev)).get(f"port.{ref.port}.tx_packets", 0)
            w = state.wire_of(wire)
            for i in range(n):
                backend.inject(w.switch, w.port, udp(f"10.9.0.{1 + i % 20}", "10.0.255.1", 4000 + i, 9, b"x" * 64))
            backend.run_for(0.01)
            return dict(backend.machine.emu.switch_counters(dev)).get(f"port.{ref.port}.tx_packets", 0) - before

        await move("host")
        meter = Meter(1, (MeterBand("drop", 10**6, 10**6),), burst=True, stats=True)  # never drops here
        await backend.apply([MeterOp(sw, "add", meter) for sw in backend.switches()])
        await svc.add_rule(f"priority=900,in_port={m1_out},udp,actions=meter:1,output:{vm}")
        await svc.add_rule(f"priority=900,in_port={vm},actions=meter:1")
        assert split_meters(state) == {} and state.extensions == {}

        def check() -> None:
            metered = _metered(svc)
            got = send(20)
            assert got >= 20 and _metered(svc) - metered == got

        check()
        await move("snic0")  # m1's out port would run meter 1 on the sNIC: extended to the host instead
        assert split_meters(state) == {}
        assert list(state.extensions) == [m1_out] and state.wire_of(m1_out).switch == "snic0"
        assert _installed(svc) == _wanted(svc)
        check()
        await move("host")  # back on the host: no extension needed, its wire rules are gone
        assert state.extensions == {} and state.topo.port_map[m1_out].switch == "host"
        assert _installed(svc) == _wanted(svc)
        check()
        await backend.close()
        svc.store.close()

    asyncio.run(go())
