"""UNO Fig. 2 predicted and SmartChain §II in emulation (short runs)."""

from pathlib import Path

import pytest

from tandem.experiments import smartchain_pcie, uno_fig2
from tandem.model import load_scenario

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fig2():
    return {(p.mode, p.nfs): p for p in uno_fig2.run((1, 2, 3), duration_s=0.004)}


def test_fig2_no_offload_is_flat(fig2):
    tput = [fig2[("no_offload", k)].throughput_gbps for k in (1, 2, 3)]
    assert max(tput) - min(tput) < 0.02 * max(tput), tput
    assert min(tput) > 9.5  # the 10 GbE ingress is the only limit
    # Crossings come from the link's packet counters, not from a formula.
    assert all(fig2[("no_offload", k)].pcie_crossings == pytest.approx(1.0, abs=0.05) for k in (1, 2, 3))


def test_fig2_full_offload_crosses_pcie_twice_per_nf_plus_once(fig2):
    for k in (1, 2, 3):
        assert fig2[("full_offload", k)].pcie_crossings == pytest.approx(2 * k + 1, rel=0.03)  # packets in flight at the end


def test_fig2_trend_offload_falls_below_no_offload_from_two_nfs(fig2):
    """UNO's qualitative result: full offload loses to no offload, and more so
    the longer the chain."""
    full = [fig2[("full_offload", k)].throughput_gbps for k in (1, 2, 3)]
    none = [fig2[("no_offload", k)].throughput_gbps for k in (1, 2, 3)]
    assert full[0] > full[1] > full[2], full
    for k in (2, 3):
        assert full[k - 1] < 0.75 * none[k - 1], (k, full, none)


def test_fig2_predictions_stay_within_the_measured_error(fig2):
    """No constant of the PCIe model is fitted to Fig. 2, so every UNO number is a
    prediction. Measured with the Gen2 x8 TLP model: -18 % at 2 NFs, +16 % at
    3 NFs (throughput), +17 % (aggregate PCIe at 3 NFs); the bound is 20 %."""
    from tandem.reproduce.paper import paper_experiment
    pe = paper_experiment("uno", "uno_fig2")
    ours = {"full_offload_2nf_gbps": fig2[("full_offload", 2)].throughput_gbps,
            "full_offload_3nf_gbps": fig2[("full_offload", 3)].throughput_gbps,
            "full_offload_3nf_pcie_gbps": fig2[("full_offload", 3)].pcie_gbps}
    assert {v.key for v in pe.values} == set(ours)
    for v in pe.values:
        assert v.label == "predicted"
        assert abs(ours[v.key] - v.value) / v.value <= 0.20, (v.key, ours[v.key], v.value)


def test_fig2_prediction_follows_the_tlp_parameters():
    """The bus is the limit: halving the lanes (x4) roughly halves full-offload
    throughput at 3 NFs, while no offload keeps the 10 GbE line rate."""
    frame_pps = uno_fig2.LINE_BPS / ((uno_fig2.FRAME + 20) * 8)
    x8, x4 = (uno_fig2.build("full_offload", 3, pps=frame_pps * 1.01, tlp={"lanes": n}).run(0.004)
              for n in (8, 4))
    t8, t4 = (r["flows"]["wire"]["throughput_gbps"] for r in (x8, x4))
    assert t4 == pytest.approx(t8 / 2, rel=0.05)
    with pytest.raises(ValueError, match="mps"):
        uno_fig2.build("full_offload", 1, pps=1.0, tlp={"mps": 0})


def test_fig2_full_offload_latency_grows_by_two_crossings_per_nf(fig2):
    lat = [fig2[("full_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    flat = [fig2[("no_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    one_way_us = uno_fig2.ONE_WAY_S * 1e6
    # Each NF adds a write and a read crossing: two one-way latencies, one DMA read
    # round trip (0.5 µs) and about 1 µs of bus time.
    for step in (lat[1] - lat[0], lat[2] - lat[1]):
        assert 2 * one_way_us + 0.5 < step < 2 * one_way_us + 2.5, lat
    assert max(flat) - min(flat) < 1.0


@pytest.fixture(scope="module")
def smartchain():
    return load_scenario(REPO / "examples" / "smartchain-ids.yaml")


def test_smartchain_round_trip_adds_bus_serialization_to_the_calibrated_latency(smartchain):
    """The 26 µs round trip is an input (calibrated from SmartChain §II), so it is
    not compared with itself. What the emulator adds is tested: a constant
    one-way latency at low load plus the bus time of the frame on each crossing,
    which grows with the frame size."""
    link = smartchain.links["pcie0"]
    small = smartchain_pcie.round_trip(link, packets=200, frame=64)
    big = smartchain_pcie.round_trip(link, packets=200, frame=1500)
    assert small["packets"] == big["packets"] == 201
    for r in (small, big):
        assert r["measured_us_max"] == pytest.approx(r["measured_us_min"], abs=0.002)  # no queueing at low load
        assert r["measured_us_p50"] > link.round_trip * 1e6
    extra_us = 2 * (1500 - 64) * 8 / link.bandwidth * 1e6
    assert big["measured_us_p50"] - small["measured_us_p50"] == pytest.approx(extra_us, abs=0.002)


def test_smartchain_two_element_chain_follows_eq9(smartchain):
    snic = smartchain.devices["snic0"]
    pa = smartchain.nf_types["payload_analyzer"].cost["snic"]
    mon = smartchain.nf_types["monitor"].cost["snic"]
    r = smartchain_pcie.chain_capacity(snic, pa, mon, duration_s=0.05)
    eq9 = pa.capacity * mon.capacity / (pa.capacity + mon.capacity) / 1e9
    assert r["paper_label"] == "predicted" and r["paper_measured_gbps"] == 1.8
    assert r["measured_gbps"] == pytest.approx(eq9, rel=0.03)
    assert r["offered_gbps"] > 1.3 * eq9  # it was overloaded, so this is the capacity
    assert r["snic_cores_used"] > 0.95 * snic.cores
