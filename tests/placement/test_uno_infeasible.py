"""Budgets too small for the pinned nodes (or for any placement) give an error
naming the binding constraint, from every method."""

import pytest

from tandem.placement.uno.engine import solve
from tandem.placement.uno.model import Edge, Node, Snic, UnoInfeasible, UnoProblem


def chain(T, D, accel_use=0.0):
    nodes = [Node("eth0", "port", pin="snic0"), Node("vm1", "vm", pin="host"),
             Node("fw", "nf", {"cores": 2.0}, {"cores": 4.0})]
    if accel_use:
        nodes.append(Node("aes", "nf", {"cores": 3.0}, {"cores": accel_use}, pin="snic0"))
    edges = (Edge("eth0", "fw", 5.0), Edge("fw", "vm1", 5.0), Edge("vm1", "eth0", 1.0))
    return UnoProblem(tuple(nodes), edges, (Snic("snic0", T, {"cores": D}),))


@pytest.mark.parametrize("method", ["fast", "milp", "brute"])
def test_pcie_too_small_for_pinned_traffic(method):
    with pytest.raises(UnoInfeasible) as e:
        solve(chain(T=0.5, D=10), method)  # vm1 -> eth0 (1 Gbps) must cross
    assert e.value.binding == ["pcie[snic0,down]"]
    assert "T[snic0,down] = 0.5 Gbps" in str(e.value)


@pytest.mark.parametrize("method", ["fast", "milp", "brute"])
def test_snic_capacity_too_small_for_accelerated_nf(method):
    with pytest.raises(UnoInfeasible) as e:
        solve(chain(T=10, D=3, accel_use=4.0), method)
    assert e.value.binding == ["capacity[snic0,cores]"]
    assert "aes" in str(e.value)


@pytest.mark.parametrize("method", ["fast", "milp"])
def test_no_placement_fits_names_pcie(method):
    # pinned nodes alone fit (1 Gbps), but fw on either side makes 5 Gbps cross one way
    with pytest.raises(UnoInfeasible) as e:
        solve(chain(T=4.0, D=10), method)
    assert any(b.startswith("pcie[snic0") for b in e.value.binding), e.value.binding
    assert "pcie[snic0" in str(e.value)
