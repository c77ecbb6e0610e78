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
    assert fig2[("full_offload", 2)].pcie_gbps > 0.9 * 30
    # UNO: 3 Gb/s x 7 crossings = 21 Gb/s aggregate at k = 3 (ring-context misses).
    assert tput[2] == pytest.approx(3.0, rel=0.05)
    assert fig2[("full_offload", 3)].pcie_gbps == pytest.approx(21.0, rel=0.05)


def _full_offload_k3(ring_contexts: int) -> dict:
    frame_pps = uno_fig2.LINE_BPS / ((uno_fig2.FRAME + 20) * 8)
    m = uno_fig2.build("full_offload", 3, pps=frame_pps * 1.01, ring_contexts=ring_contexts)
    return m.run(0.004)


def test_ring_context_misses_only_when_busy_rings_outnumber_cached_contexts():
    # 7 busy rings: with 6 cached contexts round-robin service misses on (nearly)
    # every crossing; with 7 or an unlimited cache only the 7 cold misses remain.
    thrash, fits, unlimited = (_full_offload_k3(n) for n in (6, 7, 0))
    crossings = sum(thrash["pcie"]["pcie"][f"{d}_packets"] for d in ("a_to_b", "b_to_a"))
    assert thrash["pcie"]["pcie"]["dma_ring_misses"] >= 0.95 * crossings
    assert fits["pcie"]["pcie"]["dma_ring_misses"] == 7
    assert unlimited["pcie"]["pcie"]["dma_ring_misses"] == 0
    # Without misses the bus model is linear in crossings: 32 Gb/s / (7 x 400 ns) -> 4.29 Gb/s.
    tput = [r["flows"]["wire"]["throughput_gbps"] for r in (thrash, fits, unlimited)]
    assert tput[1] == pytest.approx(tput[2], rel=0.01)
    assert tput[2] == pytest.approx(uno_fig2.FRAME * 8 / (7 * (uno_fig2.FRAME * 8 / 32e9 + uno_fig2.DMA_S)) / 1e9,
                                    rel=0.05)  # 4 ms includes the pipeline fill
    assert tput[0] < 0.75 * tput[2]


def test_fig2_full_offload_latency_grows_by_two_crossings_per_nf(fig2):
    lat = [fig2[("full_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    flat = [fig2[("no_offload", k)].latency_us_p50 for k in (1, 2, 3)]
    crossing_us = uno_fig2.ONE_WAY_S * 1e6 + (uno_fig2.FRAME * 8 / 32e9 + uno_fig2.DMA_S) * 1e6
    # k = 1 -> 2: two more crossings; k = 2 -> 3: two more, and now all 7 rings miss their context.
    assert lat[1] - lat[0] == pytest.approx(2 * crossing_us, abs=0.3)
    assert lat[2] - lat[1] == pytest.approx(2 * crossing_us + 7 * uno_fig2.RING_MISS_S * 1e6, abs=0.3)
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
