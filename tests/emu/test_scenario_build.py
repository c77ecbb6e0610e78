"""Scenario -> emulator: placement, chains across PCIe, element-graph branches."""

from pathlib import Path

import pytest

from tandem.emu.machine import EmuError
from tandem.emu.scenario import build_from_scenario
from tandem.model import load_scenario, parse_scenario_text

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def ids():
    return load_scenario(REPO / "examples" / "smartchain-ids.yaml")


def test_element_graph_on_the_snic_splits_flows_by_fraction(ids):
    on_snic = {n: "snic0" for n in ids.nfs()}
    m, b = build_from_scenario(ids, placement=on_snic)  # rule-driven: branches split by tp_src's low byte
    met = m.run(0.02)
    f = met["flows"]["west-east"]
    assert met["pcie"]["pcie0"]["total_gbps"] == 0  # nothing crosses PCIe
    # 20 % of flows are suspicious, 10 % of those hit a signature and are dropped by `alert`
    # (its output port's rule has no actions: the pipeline drops those frames as no_output)
    share = met["drops"]["no_output"] / f["tx_packets"]
    assert share == pytest.approx(0.02, abs=0.012)
    assert met["nfs"]["analyzer"]["packets"] / f["tx_packets"] == pytest.approx(0.2, abs=0.04)
    # everything not dropped reaches the balancer, then the wire (a few are still in flight at the end)
    assert 0 <= met["nfs"]["balancer"]["packets"] - f["rx_packets"] < 0.03 * f["rx_packets"]
    assert set(met["drops"]) == {"no_output"}  # the sNIC keeps up: alert is the only loss
    # Table I capacities: 1/10 + 0.2/5 + 0.02/10 + 0.8/3.2 + 0.8/2 + 0.98/10 = 0.89 of the sNIC per Gb/s
    assert met["devices"]["snic0"]["utilization"] == pytest.approx(0.89 * f["offered_gbps"], rel=0.08)


def test_split_placement_crosses_pcie_per_hop(ids):
    # classifier on the sNIC, everything after it on the host: in once, out once
    place = {n: ("snic0" if n == "classifier" else "host") for n in ids.nfs()}
    m, b = build_from_scenario(ids, placement=place)
    met = m.run(0.005)
    link = met["pcie"]["pcie0"]
    # OneSwitch joins the switches by one PCIe port pair per link and tags what crosses it:
    # classifier->analyzer and ->monitor go up, balancer->egress comes down
    assert b.vf_pairs == 1
    assert link["b_to_a_gbps"] > 0 and link["a_to_b_gbps"] > 0


SCN = """
name: t
devices:
  host: {kind: host, cores: 4, clock: 2GHz}
  snic0: {kind: snic, cores: 8, clock: 1GHz, ports: {eth0: {rate: 10Gbps}, eth1: {rate: 10Gbps}}}
links:
  pcie0: {snic: snic0, round_trip: 10us}
nf_types:
  fw: {cost: {host: {cycles_per_packet: 200}, snic: {cycles_per_packet: 400}}}
instances:
  a: {kind: nf, type: fw}
  b: {kind: nf, type: fw, pin: snic0}
  vm1: {kind: vm}
chains:
  c1: {nfs: [a, b], ingress: snic0.eth0, egress: vm1}
traffic:
  t1: {target: c1, packet_rate: 1Mpps, packet_size: 128B}
"""


def test_chain_latency_counts_each_crossing():
    sc = parse_scenario_text(SCN)
    m, b = build_from_scenario(sc)
    assert b.placement == {"a": "host", "b": "snic0"}
    met = m.run(0.002)
    lat = met["flows"]["t1"]["latency_ns"]
    # eth0 -> a (host): 1 crossing, a -> b (sNIC): 1, b -> vm1 (host): 1 -> 3 x 5 µs + NF work
    assert 15_000 < lat["min"] < 16_000
    assert met["flows"]["t1"]["throughput_mpps"] == pytest.approx(1.0, rel=0.01)
    assert met["devices"]["host"]["cores_used"] == pytest.approx(1e6 * 200 / 2e9, rel=0.05)


def test_conflicting_chains_are_refused_with_a_reason():
    sc = parse_scenario_text(SCN.replace("traffic:", "  c2: {nfs: [a], ingress: snic0.eth1, egress: snic0.eth0}\ntraffic:"))
    with pytest.raises(EmuError, match="chain c2 and chain c1 both send what leaves switch host"):
        build_from_scenario(sc, switching="portmap")
    # rule-driven: two chains leaving a.out for different places need traffic that tells them apart
    with pytest.raises(EmuError, match="chains.c2: shares port a.out with chains.c1 but goes elsewhere"):
        build_from_scenario(sc)


def test_placement_without_a_cost_profile_is_named():
    sc = parse_scenario_text(SCN.replace("cost: {host: {cycles_per_packet: 200}, snic: {cycles_per_packet: 400}}",
                                         "cost: {snic: {cycles_per_packet: 400}}").replace("a: {kind: nf, type: fw}",
                                                                                             "a: {kind: nf, type: fw, pin: snic0}"))
    with pytest.raises(EmuError, match="NF a: type fw has no cost profile for host"):
        build_from_scenario(sc, placement={"a": "host"})


def test_link_dma_fields_reach_the_emulator():
    # The port-map fast path gives every crossing hop its own VF: a on the host between two
    # sNIC hops -> three VF pairs -> several busy rings.
    ids = parse_scenario_text(SCN)
    place = {"a": "host", "b": "snic0"}
    plain = build_from_scenario(ids, placement=place, switching="portmap")[0].run(0.002)["pcie"]["pcie0"]
    link = ids.links["pcie0"].model_copy(update={"dma_ring_contexts": 1, "dma_ring_miss": 50e-9,
                                                 "dma_time_per_crossing": 10e-9})
    tight = ids.model_copy(update={"links": {**ids.links, "pcie0": link}})
    thrash = build_from_scenario(tight, placement=place, switching="portmap")[0].run(0.002)["pcie"]["pcie0"]
    assert plain["dma_ring_misses"] == 0
    # one cached context, several rings in use: many crossings refetch their ring's context
    assert thrash["dma_ring_misses"] > 100
