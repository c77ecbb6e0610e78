"""Every example validates, round-trips, and carries the papers' calibration."""

from __future__ import annotations

from pathlib import Path

import pytest

from tandem.model import load_scenario
from tandem.model.scenario import Scenario
from tandem.model.summary import offload_estimate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ALL = sorted(EXAMPLES.glob("*.yaml"))


def test_the_three_examples_exist():
    assert {p.name for p in ALL} >= {"uno-sdwan.yaml", "uno-fig15-dpi.yaml", "smartchain-ids.yaml"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_example_validates_and_round_trips(path):
    scn = load_scenario(path)
    again = Scenario.model_validate(scn.model_dump(by_alias=True))
    assert again == scn


def test_sdwan_constants_solve_their_calibration_equations():
    """The SD-WAN cost constants are calibrated (UNO §5.3 ratios and Fig. 10's two
    core counts set them; see the example's comment), so this checks the file
    holds that solution, not that Tandem reproduces UNO."""
    s = load_scenario(EXAMPLES / "uno-sdwan.yaml")
    assert s.host.cores == 24 and s.host.clock == 2.7e9
    snic = s.snics["snic0"]
    assert (snic.cores, snic.clock, len(snic.ports)) == (36, 1.2e9, 4)
    link = s.link_for("snic0")
    assert link.bandwidth == 32e9 and link.round_trip == pytest.approx(26e-6)
    assert s.chains["sdwan"].nfs == ["secgw1", "l7fw1"]
    # UNO ratios n_i/h_i: L7FW 4, SECGW 0.75 (§5.3)
    ratio = lambda t: s.nf_types[t].cost["snic"].cores_per_gbps / s.nf_types[t].cost["host"].cores_per_gbps  # noqa: E731
    assert ratio("l7fw") == pytest.approx(4, rel=0.01)
    assert ratio("secgw") == pytest.approx(0.75, rel=0.01)
    # calibrated on Fig. 10: 4 Gbps needs 6 x86 cores on the host, 8 TILE-Gx cores offloaded
    (est,) = offload_estimate(s)
    assert est.offered_gbps == 4
    assert est.host_cores == pytest.approx(6, abs=0.05)
    assert est.snic_cores == pytest.approx(8, abs=0.05)
    # the cycle costs are the same calibration in emulator units
    for t in ("l7fw", "secgw"):
        host = s.nf_types[t].cost["host"]
        assert host.cycles_per_byte == pytest.approx(host.cores_per_gbps * 2.7e9 / 1.25e8, rel=0.01)


def test_fig15_counts():
    s = load_scenario(EXAMPLES / "uno-fig15-dpi.yaml")
    assert len(s.vms()) == 9 and len(s.nfs()) == 18
    assert {i.type for i in s.nfs().values()} == {"dpi"}
    assert s.uno_capacity_cores("snic0") == 36
    dpi = s.nf_types["dpi"].cost
    # 5 host cores / 10 sNIC cores at 9 Gbps
    assert dpi["host"].cores_per_gbps * 9 == pytest.approx(5, rel=1e-3)
    assert dpi["snic"].cores_per_gbps * 9 == pytest.approx(10, rel=1e-3)
    vertices = {e.src for e in s.placement.uno.edges} | {e.dst for e in s.placement.uno.edges}
    assert set(s.instances) <= vertices


TABLE_I = {  # element: (θ_C, θ_S, t_C, t_S) — SmartChain Table I
    "header_classifier": (4e9, 10e9, 14.8e-6, 0.8e-6),
    "logger": (4e9, 2e9, 15e-6, 245e-6),
    "monitor": (10e9, 3.2e9, 4e-6, 24e-6),
    "payload_analyzer": (200e6, 5e9, 800e-6, 65e-6),
    "alert": (4e9, 10e9, 15.1e-6, 2.1e-6),
    "load_balancer": (4e9, 10e9, 14.5e-6, 0.5e-6),
}


def test_smartchain_graph_and_table_one():
    s = load_scenario(EXAMPLES / "smartchain-ids.yaml")
    (g,) = s.element_graphs.values()
    assert len(g.nodes) == 6
    branch_points = [n for n in g.nodes if len(g.successors(n)) > 1]
    assert len(branch_points) == 2
    for t, (tc, ts, lc, ls) in TABLE_I.items():
        cost = s.nf_types[t].cost
        assert (cost["host"].capacity, cost["snic"].capacity) == (tc, ts)
        assert cost["host"].latency == pytest.approx(lc) and cost["snic"].latency == pytest.approx(ls)
    assert s.link_for("snic0").round_trip_breakdown == pytest.approx({"fpc_ehi": 5e-6, "sriov": 15e-6, "pcie": 2e-6, "cpu": 4e-6})
    share = g.reach_fractions()
    assert share[g.root] == 1.0 and share["alert"] == pytest.approx(0.02) and share["balancer"] == pytest.approx(0.98)
