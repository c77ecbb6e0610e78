"""UNO Fig. 16 on the Fig. 15 graph (examples/uno-fig15-dpi.yaml): as the PCIe
budget T grows, host cores fall and sNIC cores rise until the sNIC capacity
D = 36 is reached, after which nothing changes."""

from pathlib import Path

import pytest

from tandem.placement.uno.io import load_problem
from tandem.placement.uno.sweep import sweep_pcie

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "uno-fig15-dpi.yaml"
TS = list(range(10, 101, 5))


@pytest.fixture(scope="module")
def rows():
    return sweep_pcie(load_problem(EXAMPLE), TS, "fast")


def test_graph_is_the_papers_size():
    p = load_problem(EXAMPLE)
    assert sum(n.kind == "vm" for n in p.nodes) == 9
    assert sum(n.kind == "nf" for n in p.nodes) == 18
    assert p.snics[0].capacity["cores"] == 36


def test_host_cores_fall_and_snic_cores_rise_with_T(rows):
    host = [r["host_cores"] for r in rows]
    snic = [r["snic_cores"] for r in rows]
    assert all(a >= b - 1e-9 for a, b in zip(host, host[1:]))
    assert all(a <= b + 1e-9 for a, b in zip(snic, snic[1:]))
    assert host[0] > host[-1] + 10  # a real trade-off, not a flat line
    assert snic[0] < 2 and snic[-1] > 30
    for r in rows:
        assert r["pcie_used_gbps"] <= r["T_gbps"] + 1e-9


def test_saturates_at_snic_capacity_near_80_gbps(rows):
    D = 36.0
    dpi_snic_cores = 4.5 * 10 / 9  # one more DPI of a tier would need 5 sNIC cores
    sat = [r for r in rows if r["snic_cores"] > D - dpi_snic_cores]
    first = sat[0]["T_gbps"]
    assert 70 <= first <= 85, first
    assert all(r["snic_cores"] <= D + 1e-9 for r in rows)
    plateau = {round(r["snic_cores"], 6) for r in rows if r["T_gbps"] >= first}
    assert len(plateau) == 1  # more PCIe budget no longer helps


def test_fast_equals_milp_at_every_T(rows):
    milp = sweep_pcie(load_problem(EXAMPLE), TS, "milp")
    for a, b in zip(rows, milp):
        assert a["objective"] == pytest.approx(b["objective"], rel=1e-6)
