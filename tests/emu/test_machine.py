"""The emulator's building blocks through the Python API: sources, NFs,
accelerators, capture/replay, bounded queues, errors."""

import pytest

from tandem.emu.machine import EmuError, Machine


def wire_machine(seed=1, **src):
    """source -> sNIC switch port 1 -> NF (on sNIC) -> port 3 -> 10 GbE port 4."""
    m = Machine(seed)
    m.device("snic", 4, 1e9)
    p_in = m.new_port("snic")
    if "accel_bps" in src:
        m.accelerator("snic", "crypto0", src.pop("accel_bps"), setup_s=src.pop("accel_setup_s", 0.0))
    m.nf("nf", "snic", "fixed_cost", cycles_per_packet=src.pop("nf_cycles", 0.0),
         accelerator=src.pop("accelerator", None))
    a, b = m.attach_nf("nf", "snic")
    out = m.eth("snic", "snic.p0", 10e9)
    m.forward("snic", p_in, a)
    m.forward("snic", b, out)
    m.source("s", m.sw("snic", p_in), **src)
    return m, p_in, out


def test_onoff_source_sends_only_while_on():
    m, *_ = wire_machine(pattern="onoff", pps=1e6, on_s=1e-3, off_s=3e-3)
    f = m.run(0.02)["flows"]["s"]
    # 5 periods of 4 ms, on for 1 ms each at 1 Mpps -> ~5000 packets
    assert f["tx_packets"] == pytest.approx(5000, rel=0.02)


def test_poisson_rate_and_seed_dependence():
    runs = [wire_machine(seed, pattern="poisson", pps=2e6)[0].run(0.01)["flows"]["s"]["tx_packets"] for seed in (1, 1, 2)]
    assert runs[0] == runs[1] != runs[2]
    assert runs[0] == pytest.approx(20_000, rel=0.03)


def test_size_mix_and_range():
    m, *_ = wire_machine(pps=1e5, sizes=[(64, 7), (570, 4), (1518, 1)])
    f = m.run(0.05)["flows"]["s"]
    mean = f["tx_bytes"] / f["tx_packets"]
    assert mean == pytest.approx((64 * 7 + 570 * 4 + 1518) / 12, rel=0.05)
    m, *_ = wire_machine(pps=1e5, size_range=(100, 200))
    f = m.run(0.05)["flows"]["s"]
    assert 140 < f["tx_bytes"] / f["tx_packets"] < 160


def test_line_rate_caps_and_queue_drops_are_counted_by_reason():
    m, *_ = wire_machine(pps=30e6)  # more than 10 GbE can carry at 64 B
    met = m.run(0.002)
    assert met["flows"]["s"]["throughput_mpps"] == pytest.approx(14.88, rel=0.01)
    assert met["drops"]["eth_tx_queue_full"] > 0
    assert met["drops_by_place"]["snic.p0"]["eth_tx_queue_full"] == met["drops"]["eth_tx_queue_full"]


def test_nf_cost_shows_as_cores_used_and_caps_throughput():
    # 1000 cycles at 1 GHz = 1 µs per packet on one core (RSS by flow): 1 Mpps per core.
    m, *_ = wire_machine(pps=10e6, nf_cycles=1000.0, flows=1)
    met = m.run(0.01)
    assert met["flows"]["s"]["throughput_mpps"] == pytest.approx(1.0, rel=0.01)
    assert met["devices"]["snic"]["cores_used"] == pytest.approx(1.0, rel=0.01)
    assert met["drops"]["core_queue_full"] > 0


def test_accelerator_throughput_and_setup_bound_an_nf():
    # 1 µs setup + 1500 B at 12 Gb/s (1 µs) = 2 µs per packet -> 0.5 Mpps.
    m, *_ = wire_machine(pps=2e6, sizes=[(1500, 1)], accelerator="crypto0", accel_bps=12e9, accel_setup_s=1e-6)
    met = m.run(0.01)
    assert met["flows"]["s"]["throughput_mpps"] == pytest.approx(0.5, rel=0.02)
    assert met["devices"]["snic"]["accelerators"]["crypto0"]["utilization"] == pytest.approx(1.0, rel=0.02)
    assert met["drops"]["accelerator_queue_full"] > 0


def test_capture_then_replay_reproduces_frames_and_timing(tmp_path):
    m, p_in, out = wire_machine(pps=1e5, flows=8, sizes=[(100, 1)])
    m.capture("snic", out, str(tmp_path / "out.pcap"))
    first = m.run(0.001)
    n = first["flows"]["s"]["tx_packets"]  # every frame the switch sent out of `out` is captured
    r = Machine(1)
    r.device("snic", 1, 1e9)
    r.connect(r.sw("snic", 1), r.sink("rx"))
    r.forward("snic", 2, 1)
    r.source("replay", r.sw("snic", 2), pattern="pcap", pcap=str(tmp_path / "out.pcap"))
    r.capture("snic", 1, str(tmp_path / "again.pcap"))
    again = r.run(0.001)
    assert again["flows"]["replay"]["tx_packets"] == n
    a, b = (tmp_path / "out.pcap").read_bytes(), (tmp_path / "again.pcap").read_bytes()
    assert a[24 + 16: 24 + 16 + 100] == b[24 + 16: 24 + 16 + 100]  # same first frame
    assert len(a) == len(b)


def test_nf_state_export_import_round_trip():
    m, *_ = wire_machine(pps=1e5)
    m.run(0.001)
    state = m.emu.nf_export_state(m.nfs["nf"])
    assert len(state) == 32 and state != bytes(32)
    other, *_ = wire_machine(pps=1.0)
    other.emu.nf_import_state(other.nfs["nf"], state)
    assert other.emu.nf_export_state(other.nfs["nf"]) == state
    with pytest.raises(ValueError, match="32 bytes"):
        other.emu.nf_import_state(other.nfs["nf"], b"xx")


def test_configuration_errors_name_the_part():
    m = Machine()
    with pytest.raises(EmuError, match="device bad: .*positive"):
        m.device("bad", 0, 1e9)
    m.device("d", 1, 1e9)
    with pytest.raises(EmuError, match="NF x: .*no accelerator"):
        m.nf("x", "d", "fixed_cost", accelerator="regex0")
    with pytest.raises(EmuError, match="unknown NF kind"):
        m.nf("y", "d", "teleporter")
    m.forward("d", 1, 2)
    with pytest.raises(EmuError, match="port 1 already forwards"):
        m.forward("d", 1, 3)
    with pytest.raises(EmuError, match="source s: .*pps must be positive"):
        m.source("s", m.sw("d", 1), pps=0)
    with pytest.raises(EmuError, match="pareto shape"):
        m.source("s", m.sw("d", 1), pps=1, flow_size=("pareto", 10, 0.5))
    with pytest.raises(EmuError, match="run duration"):
        m.run(0)


def test_flow_sizes_renew_flows():
    m, *_ = wire_machine(pps=1e5, flows=4, flow_size=("fixed", 10))
    f = m.run(0.001)["flows"]["s"]
    assert f["tx_packets"] == 101


def test_running_in_chunks_changes_nothing():
    a, *_ = wire_machine(3, pattern="poisson", pps=3e6, nf_cycles=300.0, flows=64)
    b, *_ = wire_machine(3, pattern="poisson", pps=3e6, nf_cycles=300.0, flows=64)
    ticks = []
    ma = a.run(0.005)
    mb = b.run(0.005, chunks=7, progress=ticks.append)
    assert ma == mb
    assert len(ticks) == 7 and ticks[-1] == pytest.approx(0.005)
