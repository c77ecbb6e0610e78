"""UNO Fig. 2 and SmartChain §II reproduced in emulation (short runs)."""

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
    assert all(fig2[("no_offload", k)].pcie_crossings == 1 for k in (1, 2, 3))


def test_fig2_full_offload_falls_with_chain_length(fig2):
    tput = [fig2[("full_offload", k)].throughput_gbps for k in (1, 2, 3)]
    assert tput[0] > tput[1] > tput[2], tput
    # UNO: 6 Gb/s with two chained NFs on PCIe Gen2 x8 (32 Gb/s).
    assert tput[1] == pytest.approx(6.0, rel=0.1)
    # The bus is what limits it: 2k+1 crossings share 32 Gb/s.
    for k, t in zip((2, 3), tput[1:]):
        assert t * (2 * k + 1) <= 32.0
        assert fig2[("full_offload", k)].pcie_gbps > 0.9 * 30


def test_fig2_full_offload_latency_grows_by_two_crossings_per_nf(fig2):
    lat = [fig2[("full_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    flat = [fig2[("no_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    for a, b in zip(lat, lat[1:]):
        assert b - a == pytest.approx(2 * uno_fig2.ONE_WAY_S * 1e6, rel=0.05)
    assert max(flat) - min(flat) < 1.0


def test_fig2_writes_csv_and_png(tmp_path, fig2):
    csv_path, png = uno_fig2.write_outputs(list(fig2.values()), tmp_path)
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith("mode,nfs,throughput_gbps")
    assert len(rows) == 7
    assert png is not None and png.stat().st_size > 10_000


@pytest.fixture(scope="module")
def smartchain():
    return load_scenario(REPO / "examples" / "smartchain-ids.yaml")


def test_smartchain_round_trip_is_the_link_model(smartchain):
    link = smartchain.links["pcie0"]
    r = smartchain_pcie.round_trip(link, packets=200)
    parts = link.round_trip_breakdown
    assert sum(parts.values()) == pytest.approx(link.round_trip)
    # measured = the scenario's round trip + two 64 B transfers on the bus
    assert r["measured_us_p50"] == pytest.approx(link.round_trip * 1e6 + r["bus_transfer_us"], abs=0.002)
    assert r["measured_us_max"] == pytest.approx(r["measured_us_min"], abs=0.002)
    assert r["packets"] == 201


def test_smartchain_two_element_chain_follows_eq9(smartchain):
    snic = smartchain.devices["snic0"]
    pa = smartchain.nf_types["payload_analyzer"].cost["snic"]
    mon = smartchain.nf_types["monitor"].cost["snic"]
    r = smartchain_pcie.chain_capacity(snic, pa, mon, duration_s=0.05)
    eq9 = pa.capacity * mon.capacity / (pa.capacity + mon.capacity) / 1e9
    assert r["eq9_gbps"] == pytest.approx(eq9)
    assert r["measured_gbps"] == pytest.approx(eq9, rel=0.03)
    assert r["offered_gbps"] > 1.3 * eq9  # it was overloaded, so this is the capacity
    assert r["snic_cores_used"] > 0.95 * snic.cores
