"""An NF move is a transaction (agent/moves.py): rule writes made while it runs stay
after its end, and a move that fails after the remap (fault injected) is rolled back -
the NF stays on its device, its ports and physical rules are as before, and its
traffic reaches it again with nothing lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tandem.agent.api_server import open_agent
from tandem.agent.moves import reconcile_cleanup, split_remap
from tandem.agent.store import Store
from tandem.model.load import load_scenario
from tandem.nf.traffic import udp
from tandem.oneswitch.ids import pkey
from tandem.oneswitch.plan import PhysicalOp
from tandem.rules.ofctl import parse_rule

SCENARIO = Path(__file__).with_name("agent-scenario.yaml")


def run(coro):
    return asyncio.run(coro)


async def _open(db: Path):
    return await open_agent(load_scenario(SCENARIO), Store(db))


def _frames(n: int) -> list[bytes]:
    return [udp(f"10.9.0.{1 + i % 20}", "10.0.255.1", 4000 + i % 7, 9, b"x" * 64) for i in range(n)]


def _inject_wire(svc, n: int) -> None:
    ref = svc.state.topo.port_map[svc.vp.number["snic0.eth0"]]
    for f in _frames(n):
        svc.backend.inject(ref.switch, ref.port, f)
    svc.backend.run_for(0.01)


def _vm_rx(svc) -> int:
    """Frames the host switch sent to the VM's port."""
    ref = svc.state.topo.port_map[svc.vp.number["vm1.eth0"]]
    c = dict(svc.backend.machine.emu.switch_counters(svc.backend.machine.devices[ref.switch]))
    return c.get(f"port.{ref.port}.tx_packets", 0)


def _installed(svc) -> dict:
    """What the backend's switches hold, per switch: (table, priority, match) -> rule."""
    return {sw: {pkey(r): r for r, _ in svc.backend.rules[sw].values()} for sw in svc.backend.switches()}


def _wanted(svc) -> dict:
    """What OneSwitch wants installed, in the same shape."""
    return {sw: {pkey(r): r for r in svc.state.physical_rules(sw)} for sw in svc.backend.switches()}


# ---------------------------------------------------------------- the pure core


def test_the_deferred_part_of_a_move_yields_to_what_is_wanted_now():
    old = parse_rule("table=0,priority=10,in_port=3,actions=output:4")
    again = parse_rule("table=0,priority=10,in_port=3,actions=output:5")  # same entry, written during the move
    gone = parse_rule("table=0,priority=20,in_port=6,actions=output:7")
    other = parse_rule("table=0,priority=30,in_port=8,actions=output:9")
    ops = [PhysicalOp("host", "delete_strict", old), PhysicalOp("host", "delete_strict", gone),
           PhysicalOp("host", "modify_strict", other)]
    wanted = {("host", pkey(again)): again, ("host", pkey(other)): other}
    keep, dropped = reconcile_cleanup(ops, lambda sw, k: wanted.get((sw, k)), lambda sw, g: None)
    assert keep == ops[1:]  # the old entry's delete would remove the rule written meanwhile
    assert dropped == ops[:1]
    wanted[("host", pkey(other))] = parse_rule("table=0,priority=30,in_port=8,actions=drop")
    keep, dropped = reconcile_cleanup(ops, lambda sw, k: wanted.get((sw, k)), lambda sw, g: None)
    assert keep == [ops[1]]  # a deferred modify of an entry changed since is dropped too


def test_a_remap_plan_splits_at_its_first_delete():
    a = PhysicalOp("host", "add", parse_rule("priority=1,in_port=1,actions=output:2"))
    d = PhysicalOp("host", "delete_strict", parse_rule("priority=1,in_port=3,actions=output:2"))
    m = PhysicalOp("snic0", "modify_strict", parse_rule("priority=1,in_port=4,actions=output:2"))
    now, later = split_remap([[a], [], [m], [d], [a]])
    assert now == [[a], [m]] and later == [d, a]


# ---------------------------------------------------------------- writes during a move


def test_rules_written_during_a_move_survive_its_end(tmp_path):
    async def go():
        svc, backend, state = await _open(tmp_path / "a.db")
        vm, wire = svc.vp.number["vm1.eth0"], svc.vp.number["snic0.eth0"]
        _m1_in, m1_out = svc.vp.nf["m1"]
        here = svc.nfs["m1"].record.device
        there = "host" if here == "snic0" else "snic0"
        mig = svc.request_migration("m1", there)
        for _ in range(5):
            await asyncio.sleep(0)
            if any(s["step"] == "remap" for s in svc.migration(mig["id"])["steps"]):
                break
        assert svc.migration(mig["id"])["status"] == "running"
        # during the move: rules that use the moving NF's ports, and one that sends the wire
        # straight to the VM - on the sNIC->host path the move gives up, so its host delivery
        # entry is one the move's clean-up deletes (the same table, priority and match)
        await svc.add_rule(f"priority=500,in_port={m1_out},actions=output:{vm}")
        await svc.add_rule(f"priority=501,in_port={m1_out},ip,actions=output:{vm}")
        await svc.add_rule(f"priority=200,in_port={wire},actions=output:{vm}")
        written = {r["rule"] for r in svc.list_rules()}
        await svc.wait_migrations()
        done = svc.migration(mig["id"])
        assert done["status"] == "done", done
        assert {r["rule"] for r in svc.list_rules()} == written
        assert _installed(svc) == _wanted(svc)  # nothing the writes installed was cleaned up
        if here == "snic0":
            assert done["steps"][-1]["kept_for_writes_during_move"] >= 1
        before = _vm_rx(svc)
        _inject_wire(svc, 30)
        assert _vm_rx(svc) - before >= 30  # the wire's frames reach the VM by the rule written during the move
        await backend.close()
        svc.store.close()

    run(go())


# ---------------------------------------------------------------- roll-back


def _fail_move(tmp_path, inject) -> None:
    """Start a move with a fault injected by ``inject(svc)``; check it was rolled back."""

    async def go():
        svc, backend, state = await _open(tmp_path / "a.db")
        here = svc.nfs["m1"].record.device
        there = "host" if here == "snic0" else "snic0"
        ports_before = dict(state.topo.port_map)
        rules_before = _installed(svc)
        _inject_wire(svc, 20)
        m1_before = svc.nf_counters()["m1"].get("packets", 0)
        inject(svc)
        mig = svc.request_migration("m1", there)
        await svc.wait_migrations()
        done = svc.migration(mig["id"])
        assert done["status"] == "failed" and "rolled back" in done["error"], done
        assert svc.nfs["m1"].record.device == here
        assert svc.placements()["placement"]["m1"] == here
        assert dict(state.topo.port_map) == ports_before
        assert _installed(svc) == rules_before == _wanted(svc)
        # the NF keeps running where it was, with its own counters, and nothing is lost
        m = backend.machine
        _inject_wire(svc, 40)
        assert svc.nf_counters()["m1"].get("packets", 0) - m1_before >= 40
        assert dict(m.emu.nf_counters(m.nfs[svc.nfs["m1"].emu_name])).get("packets", 0) >= 60
        drops = m.metrics().get("drops", {})
        assert not any(k.endswith(("nf_retired", "migration_buffer_full", "table_miss")) for k in drops), drops
        # a later move of the same NF works
        mig2 = svc.request_migration("m1", there)
        await svc.wait_migrations()
        assert svc.migration(mig2["id"])["status"] == "done"
        assert svc.nfs["m1"].record.device == there
        await backend.close()
        svc.store.close()

    run(go())


def test_a_move_whose_switch_over_fails_is_rolled_back(tmp_path):
    def inject(svc):
        real = svc.backend.apply_now
        calls = {"n": 0}

        def failing(ops):
            calls["n"] += 1
            if calls["n"] == 1:  # the remap's adds: half applied, then the switch refuses
                real(list(ops)[: len(ops) // 2])
                raise RuntimeError("injected: switch refused a flow mod")
            return real(ops)

        svc.backend.apply_now = failing

    _fail_move(tmp_path, inject)


def test_a_move_that_fails_after_the_switch_over_is_rolled_back(tmp_path):
    def inject(svc):
        real = svc.store.put_migration
        state = {"done": False}

        def failing(m, nf=None):
            if not state["done"] and m.steps and m.steps[-1]["step"] == "remap":
                state["done"] = True  # the destination buffers and the new rules are in: now fail
                raise OSError("injected: database unavailable")
            return real(m, nf)

        svc.store.put_migration = failing

    _fail_move(tmp_path, inject)
