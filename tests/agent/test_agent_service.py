"""The NF agent's service and store, in-process: NFs on the emulator, rules, migrations
(one per NF at a time), restart from the state database with packets injected through
the backend reaching the NF and the VM again, and transactions that keep the database whole."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from tandem.agent.api_server import open_agent
from tandem.agent.service import AgentError, Conflict, NotFound
from tandem.agent.store import NfRecord, Store
from tandem.model.load import load_scenario
from tandem.nf.traffic import udp

SCENARIO = Path(__file__).with_name("agent-scenario.yaml")
STEPS = ["provision", "buffer", "remap", "drain", "transfer", "release", "retire", "cleanup"]


def run(coro):
    return asyncio.run(coro)


def _frames(n: int) -> list[bytes]:
    return [udp(f"10.9.0.{1 + i % 20}", "10.0.255.1", 4000 + i % 7, 9, b"x" * 64) for i in range(n)]


async def _open(db: Path):
    sc = load_scenario(SCENARIO)
    return await open_agent(sc, Store(db))


def _inject_wire(svc, frames: list[bytes]) -> None:
    """Frames arriving on the sNIC's wire port (virtual port of snic0.eth0)."""
    v = svc.vp.number["snic0.eth0"]
    ref = svc.state.topo.port_map[v]
    for f in frames:
        svc.backend.inject(ref.switch, ref.port, f)
    svc.backend.run_for(0.01)


def _nf_packets(svc, name: str) -> int:
    return svc.nf_counters()[name].get("packets", 0)


def _vm_rx(svc) -> int:
    """Packets delivered to the VM's port (the host switch's tx counter of that port)."""
    v = svc.vp.number["vm1.eth0"]
    ref = svc.state.topo.port_map[v]
    c = dict(svc.backend.machine.emu.switch_counters(svc.backend.machine.devices[ref.switch]))
    return c.get(f"port.{ref.port}.tx_packets", 0)


def test_scenario_nfs_rules_and_traffic(tmp_path):
    async def go():
        svc, backend, state = await _open(tmp_path / "a.db")
        assert [n["name"] for n in svc.list_nfs()] == ["m1"]
        assert len(state.virtual_rules()) == 2  # the chain's hops: wire -> m1, m1 -> vm1
        before_nf, before_vm = _nf_packets(svc, "m1"), _vm_rx(svc)
        _inject_wire(svc, _frames(30))
        assert _nf_packets(svc, "m1") - before_nf >= 30
        assert _vm_rx(svc) - before_vm >= 30
        await backend.close()
        svc.store.close()

    run(go())


def test_create_nf_rules_migrate_restart(tmp_path):
    db = tmp_path / "a.db"

    async def first():
        svc, backend, state = await _open(db)
        nf = await svc.create_nf("mon2", "monitor", {}, 2, "snic0")
        assert nf["ports"] == [1000, 1001] and nf["device"] == "snic0"
        # send the wire's traffic through mon2 after m1: rewrite m1 -> vm into m1 -> mon2 -> vm
        vm = svc.vp.number["vm1.eth0"]
        m1_out = svc.vp.nf["m1"][1]
        await svc.add_rule(f"priority=300,in_port={m1_out},actions=output:1000")
        await svc.add_rule(f"priority=300,in_port=1001,actions=output:{vm}")
        _inject_wire(svc, _frames(25))
        assert _nf_packets(svc, "mon2") >= 25
        mig = svc.request_migration("m1", "snic0" if svc.nfs["m1"].record.device == "host" else "host")
        with pytest.raises(Conflict, match="one migration per NF"):
            svc.request_migration("m1", "host")
        await svc.wait_migrations()
        done = svc.migration(mig["id"])
        assert done["status"] == "done", done
        assert [s["step"] for s in done["steps"]] == STEPS
        assert done["state_bytes"] > 0
        vm_before = _vm_rx(svc)
        _inject_wire(svc, _frames(20))
        assert _vm_rx(svc) - vm_before >= 20  # traffic flows on the new placement
        snap = (svc.list_nfs(), svc.list_rules(), svc.placements()["placement"],
                {sw: len(backend.rules[sw]) for sw in backend.switches()})
        svc.sync_rules()
        # no close: the process "dies" here (the database is all that is left)
        return snap

    async def second(snap):
        svc, backend, state = await _open(db)
        assert svc.list_nfs() == snap[0]
        assert svc.list_rules() == snap[1]
        assert svc.placements()["placement"] == snap[2]
        assert {sw: len(backend.rules[sw]) for sw in backend.switches()} == snap[3]  # nothing duplicated
        before = (_nf_packets(svc, "m1"), _nf_packets(svc, "mon2"), _vm_rx(svc))
        _inject_wire(svc, _frames(20))
        assert _nf_packets(svc, "m1") - before[0] >= 20
        assert _nf_packets(svc, "mon2") - before[1] >= 20
        assert _vm_rx(svc) - before[2] >= 20
        await backend.close()
        svc.store.close()

    snap = run(first())
    run(second(snap))


def test_refusals_name_the_field(tmp_path):
    async def go():
        svc, backend, _ = await _open(tmp_path / "a.db")
        with pytest.raises(AgentError) as e:
            await svc.create_nf("x", "nosuch", {}, 2)
        assert e.value.path == "type" and "l7fw" in e.value.message and "monitor" in e.value.message
        with pytest.raises(AgentError) as e:
            await svc.create_nf("x", "monitor", {"depth": "deep"}, 2)
        assert e.value.path.startswith("config.depth")
        with pytest.raises(AgentError) as e:
            await svc.create_nf("x", "monitor", {}, 2, "snic9")
        assert e.value.path == "device" and "snic0" in e.value.message
        with pytest.raises(Conflict):
            await svc.create_nf("m1", "monitor", {}, 2)
        with pytest.raises(NotFound):
            svc.request_migration("zz", "host")
        with pytest.raises(AgentError) as e:
            svc.request_migration("m1", svc.nfs["m1"].record.device)
        assert e.value.path == "destination"
        with pytest.raises(AgentError) as e:
            await svc.add_rule("priority=1,in_port=1,actions=frobnicate")
        assert e.value.path == "rule"
        with pytest.raises(AgentError) as e:
            svc.import_state("m1", b"not a state blob")
        assert e.value.path == "body"
        # nothing of the refused requests reached the database
        assert [r.name for r in svc.store.nfs()] == ["m1"]
        await backend.close()
        svc.store.close()

    run(go())


def test_delete_refused_while_rules_use_the_nf(tmp_path):
    async def go():
        svc, backend, _ = await _open(tmp_path / "a.db")
        await svc.create_nf("mon2", "monitor", {}, 1, "host")
        r = await svc.add_rule("priority=5,in_port=1000,actions=drop")
        with pytest.raises(Conflict, match="virtual rules still use"):
            await svc.delete_nf("mon2")
        await svc.delete_rule(r["id"])
        await svc.delete_nf("mon2")
        assert "mon2" not in svc.nfs and all(n.name != "mon2" for n in svc.store.nfs())
        with pytest.raises(Conflict, match="scenario"):
            await svc.delete_nf("m1")
        await backend.close()
        svc.store.close()

    run(go())


def test_store_transactions_keep_the_database_whole(tmp_path):
    st = Store(tmp_path / "s.db")
    st.put_nf(NfRecord("id1", "a", "monitor", {}, {}, "api", "host", [1000, 1001]))
    with pytest.raises(sqlite3.IntegrityError):
        st.put_nf(NfRecord("id2", "a", "monitor", {}, {}, "api", "host", [1002]))  # same name
    with pytest.raises(sqlite3.IntegrityError):
        st.put_nf(NfRecord("id3", "b", "monitor", {}, {}, "elsewhere", "host", [1002]))  # bad origin
    assert [r.name for r in st.nfs()] == ["a"]
    assert st.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert st.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    st.close()
    (tmp_path / "junk.db").write_bytes(b"this is not sqlite" * 100)
    from tandem.agent.store import StoreError

    with pytest.raises(StoreError, match="junk.db"):
        Store(tmp_path / "junk.db")


def test_optimize_applies_moves_as_migrations(tmp_path):
    async def go():
        svc, backend, _ = await _open(tmp_path / "a.db")
        here = svc.nfs["m1"].record.device
        there = "host" if here == "snic0" else "snic0"
        out = await svc.optimize({"m1": there}, apply=False)
        assert out["moves"] == [{"nf": "m1", "from": here, "to": there}] and out["migrations"] == []
        assert svc.nfs["m1"].record.device == here  # not applied
        out = await svc.optimize({"m1": there}, apply=True)
        assert len(out["migrations"]) == 1
        await svc.wait_migrations()
        assert svc.nfs["m1"].record.device == there
        assert svc.placements()["decision"]["applied"] is True
        out = await svc.optimize({"m1": there}, apply=True)
        assert out["moves"] == [] and out["migrations"] == []
        with pytest.raises(AgentError) as e:
            await svc.optimize({"zz": "host"}, apply=False)
        assert e.value.path == "pins.zz"
        await backend.close()
        svc.store.close()

    run(go())


def test_state_export_import_moves_real_state(tmp_path):
    async def go():
        svc, backend, _ = await _open(tmp_path / "a.db")
        _inject_wire(svc, _frames(40))
        blob = svc.export_state("m1")
        await svc.create_nf("copy", "monitor", {}, 2, "host")
        empty = svc.export_state("copy")
        assert empty != blob  # m1 has seen 40 packets of 20 flows, the copy nothing
        svc.import_state("copy", blob)
        assert svc.export_state("copy") == blob
        await svc.create_nf("fw", "l7fw", {"apps": []}, 2, "host")
        with pytest.raises(AgentError) as e:
            svc.import_state("fw", blob)  # a monitor's state is not an L7FW's
        assert e.value.path == "body"
        await backend.close()
        svc.store.close()

    run(go())


def test_a_bug_in_a_handler_is_a_json_500_not_a_crash():
    import httpx

    from tandem.agent.rest import make_app

    class Broken:
        counters = {"api_errors": 0}

        def list_nfs(self):
            raise RuntimeError("boom")

        def health(self):
            return {"status": "ok"}

    async def go():
        transport = httpx.ASGITransport(app=make_app(Broken()), raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
            r = await client.get("/v1/nfs")
            assert r.status_code == 500 and r.json()["error"]["message"].startswith("internal error: RuntimeError: boom")
            assert (await client.get("/healthz")).json() == {"status": "ok"}

    run(go())


def test_a_stored_rule_that_does_not_fit_is_one_clear_error(tmp_path):
    from tandem.errors import INPUT, TandemError

    db = tmp_path / "a.db"
    st = Store(db)
    st.put_rule(0, 9, "table=0,priority=9,in_port=1", "table=0,priority=9,in_port=1,actions=output:70000")
    st.close()
    with pytest.raises(TandemError) as e:
        run(_open(db))
    assert e.value.code == INPUT and "a.db: rule 1" in str(e.value) and "output:70000" in str(e.value)


def _seq_frames(first: int, n: int, flows: int = 4) -> list[bytes]:
    """Marked frames of ``flows`` UDP flows; frame k carries (flow, k) so the receiver can
    check each flow's order and count."""
    return [udp(f"10.77.0.{1 + k % flows}", "10.0.255.1", 5000 + k % flows, 9,
                b"RESTMIG" + (k % flows).to_bytes(2, "big") + k.to_bytes(4, "big") + b"p" * 48)
            for k in range(first, first + n)]


def _received(path: Path) -> list[tuple[int, int]]:
    from tandem.backends.emu import _read_pcap_frames

    out = []
    for f in _read_pcap_frames(path):
        i = f.find(b"RESTMIG")
        if i >= 0:
            out.append((int.from_bytes(f[i + 7:i + 9], "big"), int.from_bytes(f[i + 9:i + 13], "big")))
    return out


def test_rest_migration_is_loss_free_for_packets_in_flight(tmp_path):
    """Packets queued at the source when a REST migration starts and packets sent while it
    runs all reach the VM exactly once and in order, both ways (host <-> sNIC); the move
    spans simulated time and its progress records the modelled figures."""

    async def go():
        svc, backend, state = await _open(tmp_path / "a.db")
        m = backend.machine
        backend.run_for(0.001)
        vm = state.topo.port_map[svc.vp.number["vm1.eth0"]]
        cap = tmp_path / "vm.pcap"
        m.capture(vm.switch, vm.port, str(cap))
        wire = state.topo.port_map[svc.vp.number["snic0.eth0"]]
        sent = 0
        for _ in range(2):
            here = svc.nfs["m1"].record.device
            there = "host" if here == "snic0" else "snic0"
            old = svc.nfs["m1"].emu_name
            for f in _seq_frames(sent, 300):  # a burst: still queued at (or on its way to) the source
                backend.inject(wire.switch, wire.port, f)
                backend.run_for(1e-9)  # distinct birth times (the sinks' duplicate check keys on them)
            sent += 300
            mig = svc.request_migration("m1", there)
            for _ in range(5):
                await asyncio.sleep(0)
                if any(s["step"] == "remap" for s in svc.migration(mig["id"])["steps"]):
                    break
            assert svc.migration(mig["id"])["status"] == "running"
            with pytest.raises(Conflict, match="one migration per NF"):
                svc.request_migration("m1", here)
            m.emu.finish()  # flush the capture
            out_at_start = len(_received(cap))
            assert out_at_start < sent  # some of the burst is still at (or on its way to) the source
            for f in _seq_frames(sent, 300):  # sent after the switch-over: buffered at the destination
                backend.inject(wire.switch, wire.port, f)
                backend.run_for(1e-9)
            sent += 300
            await svc.wait_migrations()
            done = svc.migration(mig["id"])
            assert done["status"] == "done", done
            assert [s["step"] for s in done["steps"]] == STEPS
            # the source drained the burst (it was not retired with packets inside), the destination buffered
            assert dict(m.emu.nf_counters(m.nfs[old])).get("nf_retired", 0) == 0
            p = done["progress"]
            assert p["step"] == "cleanup" and p["buffered_packets"] >= 300 and p["replayed_packets"] == p["buffered_packets"]
            assert p["state_bytes"] == done["state_bytes"] > 0 and p["duration_s"] > p["transfer_s"] > 0
            assert p["lost"] == p["duplicated"] == p["reordered"] == 0
            assert svc.nfs["m1"].record.device == there
            backend.run_for(0.01)
        got = _received(cap)
        assert len(got) == sent  # none lost, none twice
        for flow in range(4):
            seqs = [k for fl, k in got if fl == flow]
            assert seqs == list(range(flow, sent, 4))  # every one, in order
        await backend.close()
        svc.store.close()

    run(go())
