"""Loss-free NF migration in the emulator (dp_emu::migration, Machine.migrate).

The acceptance run: the SD-WAN chain (SECGW on the sNIC -> L7FW) at > 1 Gb/s
with 1,000 flows of ESP traffic; the L7FW moves host -> sNIC -> host ten times
(20 moves) in one run. Checked from the frames the VM port received (pcap),
where each flow's inner IPv4 IDs count its packets: no flow misses a frame
the same run without migration delivered, none arrives twice, none out of
order; the L7FW's per-flow detections and verdicts and both NFs' counters are
those of the run without migration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tandem.emu.machine import EmuError
from tandem.emu.scenario import build_from_scenario
from tandem.experiments import uno_fig13 as fig13
from tandem.model.load import ScenarioError, parse_scenario_text
from tandem.nf.traffic import read_pcap

FLOWS = 1000
DATA_PACKETS = 12  # per flow, after the handshake and request: ~15,000 frames


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> tuple[Path, float]:
    d = tmp_path_factory.mktemp("mig")
    n, secs = fig13.write_traffic(d / "sdwan.pcap", FLOWS, DATA_PACKETS, 1.2)
    return d / "sdwan.pcap", secs


def _run(trace, tmp: Path, moves: list[tuple[float, str]]):
    pcap, secs = trace
    duration = secs + 0.002
    sc = fig13.load(fig13.scenario_yaml(pcap, duration), tmp / "s.yaml")
    m, b = build_from_scenario(sc, migratable=True)
    dev, port = b.vm_ports["vm1.eth0"]
    m.capture(dev, port, str(tmp / "vm1.pcap"))
    for at, to in moves:
        m.migrate("f1", to, at)
    met = m.run(duration)
    detections = m.emu.nf_command(m.nfs[m.current_instance("f1")], "detections")
    return m, met, fig13.inner_flows(read_pcap(tmp / "vm1.pcap")), detections


def test_l7fw_moves_host_snic_host_ten_times_without_loss_dup_or_reorder(trace, tmp_path):
    pcap, secs = trace
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    mb, base, base_flows, base_det = _run(trace, tmp_path / "a", [])
    start, step = 0.05 * secs, 0.9 * secs / 20
    moves = [(start + i * step, "snic0" if i % 2 == 0 else "host") for i in range(20)]
    m, met, flows, det = _run(trace, tmp_path / "b", moves)

    assert met["flows"]["branch"]["offered_gbps"] >= 1.0
    assert len(base_flows) > 0.9 * FLOWS  # (blocked DNS flows deliver nothing)
    # from the delivered frames: per flow, IDs strictly increasing (no duplicate, no reorder) ...
    for key, ids in flows.items():
        assert all(a < b for a, b in zip(ids, ids[1:])), f"flow {key}: {ids}"
    # ... and exactly what the run without migration delivered (no loss)
    assert flows == base_flows
    assert sum(map(len, flows.values())) == met["sinks"]["vm1.eth0"]["rx_packets"]
    # the NFs decided the same: per-flow detections/verdicts, counters, drops
    assert det == base_det and det.count("\n") == FLOWS
    assert "block" in det and "allow" in det
    assert m.nf_counters() == mb.nf_counters() and m.nf_counters()["f1"]["packets"] > 0
    assert met["drops"] == base["drops"]
    # the emulator's own record of the 20 moves agrees
    migs = met["migrations"]
    assert [g["to"] for g in migs] == [to for _, to in moves]
    assert all(g["phase"] == "done" for g in migs)
    assert sum(g["lost"] + g["duplicated"] + g["reordered"] for g in migs) == 0
    assert sum(g["buffered_packets"] for g in migs) == sum(g["replayed_packets"] for g in migs) > 100
    held = [g["state_flows"] for g in migs]  # the state grows with the flows seen; none is lost on the way
    assert held == sorted(held) and held[-1] >= FLOWS * 0.9 and all(g["state_bytes"] > 0 for g in migs)
    assert m.current_instance("f1") == "f1#20" and m.mover.where["f1"] == "host"


def test_migrate_errors_name_the_problem(trace, tmp_path):
    pcap, secs = trace
    sc = fig13.load(fig13.scenario_yaml(pcap, secs), tmp_path / "s.yaml")
    m, _ = build_from_scenario(sc, migratable=True)
    with pytest.raises(EmuError, match="unknown NF 'nope'.*f1, s1"):
        m.migrate("nope", "snic0", 0.001)
    with pytest.raises(EmuError, match="unknown device 'snic9'"):
        m.migrate("f1", "snic9", 0.001)
    with pytest.raises(EmuError, match="unknown cost parameter"):
        m.migrate("f1", "snic0", 0.001, speed=2)
    m.migrate("f1", "snic0", 0.001)
    m.advance(0.001)  # the move has started: the run is inside it now
    assert m.migrating() == ["f1"]
    with pytest.raises(EmuError, match="already migrating"):
        m.migrate("f1", "host", 0.002)
    with pytest.raises(EmuError, match="in the past"):
        m.migrate("s1", "host", 0.0001)
    m.advance(0.003)
    assert m.migrating() == [] and m.metrics()["migrations"][0]["phase"] == "done"
    m.migrate("f1", "snic0", 0.004)
    with pytest.raises(EmuError, match="already on snic0"):
        m.advance(0.005)
    plain, _ = build_from_scenario(sc)
    with pytest.raises(EmuError, match="migratable=True"):
        plain.migrate("f1", "snic0", 0.001)


def test_advance_lets_a_loop_read_metrics_then_migrate(trace, tmp_path):
    pcap, secs = trace
    sc = fig13.load(fig13.scenario_yaml(pcap, secs), tmp_path / "s.yaml")
    m, _ = build_from_scenario(sc, migratable=True)
    seen = []
    for k in range(1, 5):
        m.advance(k * secs / 5)
        seen.append(m.metrics()["flows"]["branch"]["rx_packets"])
        if k == 2:
            m.migrate("f1", "snic0", k * secs / 5)
    assert seen == sorted(seen) and seen[0] > 0
    met = m.run(secs)
    assert met["migrations"][0]["phase"] == "done" and met["nfs"]["f1#1"]["device"] == "snic0"


BASE = fig13.scenario_yaml(Path("x.pcap"), 0.01).replace("pattern: replay, pcap: 'x.pcap'", "bandwidth: 1Gbps")


@pytest.mark.parametrize("moves, where, message", [
    ("  - {at: 1ms, nf: f9, to: snic0}\n", "migrations[0].nf", "unknown NF 'f9'"),
    ("  - {at: 1ms, nf: f1, to: snic7}\n", "migrations[0].to", "unknown device 'snic7'"),
    ("  - {at: 20ms, nf: f1, to: snic0}\n", "migrations[0].at", "not inside the run"),
    ("  - {at: 1ms, nf: f1, to: snic0}\n  - {at: 1ms, nf: f1, to: host}\n", "migrations[1].at", "cannot overlap"),
    ("  - {at: 1ms, nf: f1, to: snic0}\n  - {at: 2ms, nf: f1, to: snic0}\n", "migrations[1].to", "already on snic0"),
    ("  - {at: -1ms, nf: f1, to: snic0}\n", "migrations[0].at", ""),
])
def test_scenario_migrations_are_validated_with_their_line(moves, where, message):
    text = BASE + "migrations:\n" + moves
    line = text.splitlines().index("migrations:") + 2 + int(where[11])  # the offending entry's line
    with pytest.raises(ScenarioError) as e:
        parse_scenario_text(text, "s.yaml")
    msg = str(e.value)
    assert where in msg and message in msg, msg
    assert msg.startswith(f"s.yaml:{line}:"), msg


def test_tandem_run_applies_the_scenario_migrations(trace, tmp_path):
    from tandem.emu.run import run_scenario

    pcap, secs = trace
    text = fig13.scenario_yaml(pcap, secs, [(secs / 3, "f1", "snic0"), (2 * secs / 3, "f1", "host")])
    sc = fig13.load(text, tmp_path / "s.yaml")
    res = run_scenario(sc, tmp_path / "out")
    on_disk = json.loads((tmp_path / "out" / "metrics.json").read_text())
    migs = on_disk["migrations"]
    assert [(g["nf"], g["from_instance"], g["from"], g["to"]) for g in migs] == [
        ("f1", "f1", "host", "snic0"), ("f1", "f1#1", "snic0", "host")]
    for g in migs:
        assert g["end_s"] > g["start_s"] and g["state_bytes"] > 0 and g["buffered_packets"] >= 0
        assert set(g["added_latency_ns"]) >= {"p50", "p99", "max"}
        assert (g["lost"], g["duplicated"], g["reordered"]) == (0, 0, 0)
    assert res["placement"]["f1"] == "host"


def test_snic_to_snic_move_goes_through_the_host(trace, tmp_path):
    """host -> snic0 -> snic1 -> host: the state crosses both PCIe links on the sNIC-to-sNIC
    move, and the delivered frames equal those of the run without moves."""
    pcap, secs = trace
    two = fig13.scenario_yaml(pcap, secs + 0.002).replace(
        "links:\n", "  snic1:\n    kind: snic\n    cores: 36\n    clock: 1.2GHz\n    ports: {eth0: {rate: 10Gbps}}\n"
        "links:\n  pcie1: {snic: snic1, bandwidth: 32Gbps, round_trip: 26us}\n")
    got = {}
    for tag, moves in (("a", []), ("b", [(0.2 * secs, "snic0"), (0.45 * secs, "snic1"), (0.7 * secs, "host")])):
        (tmp_path / tag).mkdir()
        sc = fig13.load(two, tmp_path / tag / "s.yaml")
        m, b = build_from_scenario(sc, migratable=True)
        m.capture(*b.vm_ports["vm1.eth0"], str(tmp_path / tag / "vm1.pcap"))
        for at, to in moves:
            m.migrate("f1", to, at)
        met = m.run(secs + 0.002)
        got[tag] = (fig13.inner_flows(read_pcap(tmp_path / tag / "vm1.pcap")), m.nf_counters(), met)
    assert got["a"][0] == got["b"][0] and got["a"][1] == got["b"][1]
    migs = got["b"][2]["migrations"]
    assert [(g["from"], g["to"]) for g in migs] == [("host", "snic0"), ("snic0", "snic1"), ("snic1", "host")]
    assert all(g["phase"] == "done" and g["lost"] == 0 for g in migs)
    # two PCIe crossings (two one-way latencies of 13 us) for the sNIC-to-sNIC state
    assert migs[1]["transfer_s"] > 26e-6 > migs[0]["transfer_s"]
