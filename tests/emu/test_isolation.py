"""FairNIC tenant isolation in the emulator: core partitions (§6.4.1),
accelerator token buckets (§6.4.3), per-tenant metrics, determinism."""

from pathlib import Path

import pytest
import yaml

from tandem.emu.machine import EmuError
from tandem.emu.run import run_scenario
from tandem.emu.scenario import build_from_scenario, tenant_cores
from tandem.model import parse_scenario_text
from tandem.model.load import ScenarioError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "fairnic-isolation.yaml"


def scenario(isolation: bool = True, drop_traffic: tuple = (), **traffic_rates):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["run"]["isolation"] = isolation
    for name in drop_traffic:
        del doc["traffic"][name]
    for name, rate in traffic_rates.items():
        doc["traffic"][name]["packet_rate"] = rate
    return parse_scenario_text(yaml.safe_dump(doc))


def run(sc, seconds=0.02):
    m, b = build_from_scenario(sc)
    return m.run(seconds), b


def capacity_mpps(sc, tenant: str, nf: str) -> float:
    """What the tenant's reserved cores can forward of its NF's packets alone."""
    snic = sc.devices["snic0"]
    cycles = sc.nf_types[sc.instances[nf].type].cost["snic"].cycles_per_packet
    return sc.tenants[tenant].cores["snic0"] * snic.clock * snic.speed / cycles / 1e6


# ------------------------------------------------------------------ §6.4.1 core isolation


@pytest.fixture(scope="module")
def runs():
    alone, _ = run(scenario(drop_traffic=("b",)))
    on, b_on = run(scenario(isolation=True))
    off, b_off = run(scenario(isolation=False))
    return alone, (on, b_on), (off, b_off)


def test_without_isolation_the_light_tenant_is_coupled_to_the_heavy_one(runs):
    alone, _, (off, _) = runs
    a, b = off["tenants"]["a"]["throughput_mpps"], off["tenants"]["b"]["throughput_mpps"]
    a_alone = alone["tenants"]["a"]["throughput_mpps"]
    # Head-of-line blocking: both forward about the same packet rate, far below a's own.
    assert a == pytest.approx(b, rel=0.15)
    assert a < 0.3 * a_alone
    # Both tenants lose packets at the shared cores.
    assert off["tenants"]["a"]["drops"].get("core_queue_full", 0) > 0


def test_with_isolation_each_tenant_runs_at_its_own_rate(runs):
    alone, (on, _), (off, _) = runs
    sc = scenario()
    a_alone = alone["tenants"]["a"]["throughput_mpps"]
    assert a_alone == pytest.approx(capacity_mpps(sc, "a", "ovs1"), rel=0.02)
    assert on["tenants"]["a"]["throughput_mpps"] == pytest.approx(a_alone, rel=0.02)
    # b is held to what its own seven cores can do: less than it took from a's cores without isolation.
    b_on = on["tenants"]["b"]["throughput_mpps"]
    assert b_on == pytest.approx(capacity_mpps(sc, "b", "ovs2"), rel=0.03)
    assert b_on < off["tenants"]["b"]["throughput_mpps"]


def test_isolation_confines_each_tenant_to_its_reserved_cores(runs):
    _, (on, b_on), (off, b_off) = runs
    assert b_on.nf_cores == {"ovs1": list(range(0, 7)), "ovs2": list(range(7, 14))}
    assert b_off.nf_cores == {}  # isolation off: every NF may use every core
    assert b_on.nf_tenant == {"ovs1": "a", "ovs2": "b"}
    assert b_on.source_tenant == {"a": "a", "b": "b"}


def test_isolation_keeps_the_light_tenant_latency_when_it_stays_under_its_rate():
    # a offers 80 % of what its cores take; b still floods.
    sc_alone = scenario(drop_traffic=("b",), a="2.8Mpps")
    alone, _ = run(sc_alone)
    on, _ = run(scenario(isolation=True, a="2.8Mpps"))
    off, _ = run(scenario(isolation=False, a="2.8Mpps"))
    p50 = lambda m: m["tenants"]["a"]["latency_ns"]["p50"]  # noqa: E731
    assert on["tenants"]["a"]["dropped"] == 0
    assert p50(on) <= 1.5 * p50(alone)
    assert p50(off) > 10 * p50(on)  # queues build up behind b's packets


def test_unreserved_cores_form_the_shared_pool():
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["tenants"] = {"a": {"cores": {"snic0": 4}}, "b": {}}
    sc = parse_scenario_text(yaml.safe_dump(doc))
    assert tenant_cores(sc)["snic0"] == {"a": [0, 1, 2, 3], "": list(range(4, 14))}
    _, b = build_from_scenario(sc)
    assert b.nf_cores == {"ovs1": [0, 1, 2, 3], "ovs2": list(range(4, 14))}


def test_a_tenant_without_cores_when_others_reserve_all_is_refused():
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["tenants"] = {"a": {"cores": {"snic0": 14}}, "b": {}}
    sc = parse_scenario_text(yaml.safe_dump(doc))
    with pytest.raises(EmuError, match="ovs2 on snic0: its tenant b reserves no cores"):
        build_from_scenario(sc)
    doc["run"]["isolation"] = False
    build_from_scenario(parse_scenario_text(yaml.safe_dump(doc)))  # fine without isolation


def test_an_nf_serves_one_tenant():
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["instances"]["ovs1"]["tenant"] = "b"
    with pytest.raises(ScenarioError, match="ovs1 belongs to tenant b"):
        parse_scenario_text(yaml.safe_dump(doc))


def test_same_seed_same_metrics(tmp_path):
    sc = scenario(isolation=False)
    a = run_scenario(sc, tmp_path / "1", duration=0.005)
    b = run_scenario(sc, tmp_path / "2", duration=0.005)
    assert (tmp_path / "1" / "metrics.json").read_bytes() == (tmp_path / "2" / "metrics.json").read_bytes()
    assert a["isolation"] == {"enabled": False, "nf_tenant": {"ovs1": "a", "ovs2": "b"}, "nf_cores": {}}
    assert set(a["tenants"]) == {"a", "b"}


def test_same_seed_same_metrics_with_every_isolation_mechanism(tmp_path):
    # Core partitions, token buckets and DRR ports (accelerator scenario, Poisson traffic).
    doc = yaml.safe_load(ACCEL.read_text())  # run.isolation: true
    for src in doc["traffic"].values():
        src["pattern"] = "poisson"
    for t in doc["tenants"].values():
        t["ingress_buffer"] = "256KiB"
    sc = parse_scenario_text(yaml.safe_dump(doc))
    runs = [run_scenario(sc, tmp_path / str(i), duration=0.005, seed=seed) for i, seed in enumerate((3, 3, 4))]
    texts = [(tmp_path / str(i) / "metrics.json").read_text() for i in range(3)]
    assert texts[0] == texts[1] and texts[0] != texts[2]
    assert runs[0]["tenants"]["b"]["accelerators"]["snic0.zip0"]["delayed"] > 0


# ------------------------------------------------------------------ §6.4.3 accelerator rate limiting

ACCEL = REPO / "examples" / "fairnic-accelerator.yaml"


def accel_scenario(isolation: bool, without_b: bool = False):
    doc = yaml.safe_load(ACCEL.read_text())
    doc["run"]["isolation"] = isolation
    if without_b:
        del doc["traffic"]["b"]
    return parse_scenario_text(yaml.safe_dump(doc))


def test_accelerator_token_buckets_restore_the_benign_tenant():
    alone, _ = run(accel_scenario(True, without_b=True))
    on, _ = run(accel_scenario(True))
    off, _ = run(accel_scenario(False))
    a = lambda m: m["tenants"]["a"]["throughput_gbps"]  # noqa: E731
    b = lambda m: m["tenants"]["b"]["throughput_gbps"]  # noqa: E731
    # Shared FIFO: b's flood fills the compressor's queue and a loses most of its traffic.
    assert a(off) < 0.5 * a(alone)
    assert off["tenants"]["a"]["drops"].get("accelerator_queue_full", 0) > 0
    # Token buckets: a gets its alone throughput, b is held near its 5 Gb/s share
    # of the compressor (its frames are a little longer on the wire than in the job).
    assert a(on) == pytest.approx(a(alone), rel=0.02)
    assert on["tenants"]["a"]["dropped"] == 0
    assert 4.0 < b(on) <= 5.5
    assert on["tenants"]["b"]["drops"].get("accelerator_rate_limited", 0) > 0
    buckets = on["tenants"]["b"]["accelerators"]["snic0.zip0"]
    assert buckets["delayed"] > 0 and buckets["rate_gbps"] == 5.0
    assert off["tenants"]["b"]["accelerators"] == {}  # isolation off: no buckets


# ------------------------------------------------------------------ DRR egress sharing

EGRESS = """
name: fairnic-egress
devices:
  host: {kind: host}
  snic0:
    kind: snic
    cores: 8
    clock: 1.2GHz
    ports: {a_in: {rate: 40Gbps}, b_in: {rate: 40Gbps}, out: {rate: 10Gbps}}
links:
  pcie0: {snic: snic0}
nf_types:
  fwd: {cost: {snic: {cycles_per_packet: 600}}}
instances:
  fa: {kind: nf, type: fwd, pin: snic0}
  fb: {kind: nf, type: fwd, pin: snic0}
tenants:
  a: {cores: {snic0: 4}, drr_weight: WA}
  b: {cores: {snic0: 4}, drr_weight: WB}
chains:
  a: {nfs: [fa], ingress: snic0.a_in, egress: snic0.out, tenant: a}
  b: {nfs: [fb], ingress: snic0.b_in, egress: snic0.out, tenant: b}
traffic:
  a: {target: a, bandwidth: RATE_A, packet_size: 1500B, flows: 100}
  b: {target: b, bandwidth: 20Gbps, packet_size: 1500B, flows: 100}
run: {duration: 20ms, isolation: ISO, placement: pinned}
"""


def egress_run(isolation: bool, rate_a: str, wa: float = 1.0, wb: float = 1.0) -> dict:
    text = EGRESS.replace("ISO", str(isolation).lower()).replace("RATE_A", rate_a)
    m, _ = run(parse_scenario_text(text.replace("WA", str(wa)).replace("WB", str(wb))))
    return m


def test_drr_egress_gives_each_tenant_its_weighted_share_of_a_shared_port():
    goodput = 10 * 1500 / 1520  # Gb/s of frames on the 10 GbE wire (20 B of preamble and gap each)
    gbps = lambda m, t: m["tenants"][t]["throughput_gbps"]  # noqa: E731
    # FIFO: b's flood fills the shared queue; a gets roughly its share of the offered
    # load (3 of 23 Gb/s), far under the 3 Gb/s it asks for.
    off = egress_run(False, "3Gbps")
    assert gbps(off, "a") < 0.5 * 3.0
    assert off["tenants"]["a"]["drops"].get("eth_tx_queue_full", 0) > 0
    # DRR, equal weights: a asks for less than half and gets all of it; b takes the rest.
    on = egress_run(True, "3Gbps")
    assert gbps(on, "a") == pytest.approx(3.0, rel=0.02)
    assert on["tenants"]["a"]["dropped"] == 0
    assert gbps(on, "b") == pytest.approx(goodput - 3.0, rel=0.03)
    # Weights 1:3 with both over their share: the line splits 1:3.
    w = egress_run(True, "6Gbps", wa=1.0, wb=3.0)
    assert gbps(w, "a") == pytest.approx(goodput / 4, rel=0.03)
    assert gbps(w, "b") == pytest.approx(goodput * 3 / 4, rel=0.03)


# ------------------------------------------------------------------ ingress buffers


def buffered(isolation: bool, a_rate: str = "5Mpps", buffers: bool = True):
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["run"]["isolation"] = isolation
    doc["traffic"]["a"]["packet_rate"] = a_rate
    if buffers:
        for t in doc["tenants"].values():
            t["ingress_buffer"] = "32KiB"
    return parse_scenario_text(yaml.safe_dump(doc))


def test_a_tenant_ingress_buffer_bounds_its_queueing_not_its_rate():
    unbounded, _ = run(buffered(True, buffers=False))
    bounded, _ = run(buffered(True))
    a0, a1 = unbounded["tenants"]["a"], bounded["tenants"]["a"]
    # The buffer is shared by the tenant's seven cores; a core whose flows find it
    # full now and then idles a little, so the rate may dip slightly.
    assert 0.9 * a0["throughput_mpps"] <= a1["throughput_mpps"] <= a0["throughput_mpps"]
    # What does not fit in 32 KiB (512 frames of 64 B) is refused at once instead of queueing at the cores.
    assert set(a1["drops"]) == {"ingress_buffer_full"}
    # No packet waits longer than one core takes to work through the whole buffer.
    sc = buffered(True)
    one_packet_ns = sc.nf_types["ovs_light"].cost["snic"].cycles_per_packet / sc.devices["snic0"].clock * 1e9
    assert a1["latency_ns"]["max"] <= 1.05 * 512 * one_packet_ns
    assert a1["latency_ns"]["p99"] < 0.5 * a0["latency_ns"]["p99"]


def test_without_isolation_a_flooding_tenant_fills_the_shared_ingress_buffer():
    # a stays under its rate: with its own buffer it loses nothing ...
    on, _ = run(buffered(True, a_rate="2.8Mpps"))
    assert on["tenants"]["a"]["dropped"] == 0
    # ... sharing the sNIC's buffer with b's flood, it is refused there.
    off, _ = run(buffered(False, a_rate="2.8Mpps"))
    assert off["tenants"]["a"]["drops"].get("ingress_buffer_full", 0) > 0.3 * off["tenants"]["a"]["tx_packets"]


# ------------------------------------------------------------------ cache shares (§6.4.2)

CACHE = """
name: fairnic-cache
devices:
  host: {kind: host}
  snic0:
    kind: snic
    cores: 16
    clock: 1.2GHz
    cache: 4MiB
    cache_miss_penalty: 100ns
    ports: {k_in: {rate: 40Gbps}, k_out: {rate: 40Gbps}, t_in: {rate: 40Gbps}, t_out: {rate: 40Gbps}}
links:
  pcie0: {snic: snic0}
nf_types:
  kvs: {cost: {snic: {cycles_per_packet: 1200}}}
  thrasher: {cost: {snic: {cycles_per_packet: 1200}}}
instances:
  kvs1: {kind: nf, type: kvs, pin: snic0}
  thr1: {kind: nf, type: thrasher, pin: snic0}
tenants:
  k: {cores: {snic0: 8}, cache_share: 0.5, working_set: 5MiB, memory_accesses_per_packet: 20}
  t: {cores: {snic0: 8}, cache_share: 0.5, working_set: THRASH, memory_accesses_per_packet: 50}
chains:
  k: {nfs: [kvs1], ingress: snic0.k_in, egress: snic0.k_out, tenant: k}
  t: {nfs: [thr1], ingress: snic0.t_in, egress: snic0.t_out, tenant: t}
traffic:
  k: {target: k, packet_rate: 8Mpps, packet_size: 64B, flows: 1000}
  t: {target: t, packet_rate: 1Mpps, packet_size: 64B, flows: 1000}
run: {duration: 10ms, isolation: ISO, placement: pinned}
"""


def cache_run(isolation: bool, thrash: str = "64MiB", alone: bool = False, k_rate: str = "1Mpps"):
    """(k's tenant metrics, k's cache hit ratio)."""
    doc = yaml.safe_load(CACHE.replace("ISO", str(isolation).lower()).replace("THRASH", thrash))
    doc["traffic"]["k"]["packet_rate"] = k_rate
    if alone:
        for key in ("instances", "chains", "traffic"):
            del doc[key]["thr1" if key == "instances" else "t"]
    sc = parse_scenario_text(yaml.safe_dump(doc))
    m, b = build_from_scenario(sc)
    return m.run(sc.run.duration)["tenants"]["k"], b.cache["k"]["snic0"][0]


def test_cache_share_partition_shields_a_tenant_from_a_cache_thrasher():
    # What is modelled is a static capacity split (each tenant's cache_share of the
    # sNIC cache, FairNIC §6.4.2's outcome), not page colours or cache ways.
    (alone, hit_alone), (on, hit_on), (off, hit_off) = cache_run(False, alone=True), cache_run(True), cache_run(False)
    # Alone it has the whole cache; partitioned, its half; shared, the thrasher's working set crowds it out.
    assert hit_alone == pytest.approx(4 / 5) and hit_on == pytest.approx(2 / 5)
    assert hit_off == pytest.approx(4 / (5 + 64))
    # Each miss costs 100 ns of core time: the fastest packet (one that found a core idle) shows it.
    fastest = lambda m: m["latency_ns"]["min"]  # noqa: E731
    assert fastest(on) - fastest(alone) == pytest.approx(20 * (hit_alone - hit_on) * 100, abs=2)
    assert fastest(off) - fastest(on) == pytest.approx(20 * (hit_on - hit_off) * 100, abs=2)
    # A greedier thrasher hurts it only without isolation.
    assert cache_run(True, thrash="256MiB") == (on, hit_on)
    worse, hit_worse = cache_run(False, thrash="256MiB")
    assert hit_worse < hit_off and fastest(worse) > fastest(off)


def test_cache_misses_lower_a_core_bound_tenant_rate():
    # Saturated on its own 8 cores: 8 / (1 µs + 20 accesses × misses × 100 ns) Mpps.
    on, hit = cache_run(True, k_rate="8Mpps")
    assert on["throughput_mpps"] == pytest.approx(8 / (1.0 + 20 * (1 - hit) * 0.1), rel=0.02)


def test_tandem_run_prints_a_tenants_table(tmp_path):
    from typer.testing import CliRunner

    from tandem.cli import app

    r = CliRunner().invoke(app, ["run", str(EXAMPLE), "--duration", "5ms", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "tenants — isolation on" in r.output and "core_queue_full" in r.output
    m = yaml.safe_load((tmp_path / "metrics.json").read_text())
    assert m["isolation"]["nf_cores"] == {"ovs1": "0-6", "ovs2": "7-13"}
