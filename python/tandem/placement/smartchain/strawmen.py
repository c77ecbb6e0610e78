"""SmartChain's two strawmen (§IV-A), for comparison.

  * sequential: walk the elements in processing order and put them on the sNIC
    until the next one does not fit; it and everything after it go to the CPU;
  * suitability-greedy: walk in processing order; an element with positive
    suitability goes to the sNIC if it fits, everything else to the CPU (to the
    sNIC if the CPU is full).
Neither rebuilds the graph: packets follow the original edges, so each change
of device along a path costs a PCIe crossing. Their positions are the least
ones along the original edges, which makes a graph's CPU-position count equal
to the most CPU visits any of its paths makes.
Several graphs are placed one after another, each on the server with the most
sNIC capacity left. Inputs: `Problem`. Output: `Placement`, or the reason it
is infeasible (a strawman does not search). Cost: O(elements).
"""

from __future__ import annotations

from tandem.placement.smartchain.evaluate import GraphPlacement, Placement, least_levels
from tandem.placement.smartchain.model import Problem


def _place(problem: Problem, greedy: bool) -> tuple[Placement | None, str]:
    rem = [[s.snic_capacity, s.cpu_capacity] for s in problem.servers]
    out: list[GraphPlacement] = []
    for g in problem.graphs:
        si = max(range(len(rem)), key=lambda k: (rem[k][0], -k))
        r = rem[si]
        on_cpu: list[bool] = []
        nic_open = True
        for i, e in enumerate(g.elements):
            ls, lc = problem.load(g, i)
            if greedy:
                want_nic = e.suitability > 0 and ls <= r[0] + 1e-9
                cpu = not want_nic and (lc <= r[1] + 1e-9 or ls > r[0] + 1e-9)
            else:
                nic_open = nic_open and ls <= r[0] + 1e-9
                cpu = not nic_open
            if cpu:
                r[1] -= lc
                if r[1] < -1e-9:
                    srv = problem.servers[si].name
                    return None, f"C3: CPU of server {srv} overloaded when placing {g.name}/{e.name}"
            else:
                r[0] -= ls
            on_cpu.append(cpu)
        out.append(GraphPlacement(si, tuple(least_levels(on_cpu, g.predecessors))))
    return Placement(tuple(out)), ""


def sequential(problem: Problem) -> tuple[Placement | None, str]:
    return _place(problem, greedy=False)


def suitability_greedy(problem: Problem) -> tuple[Placement | None, str]:
    return _place(problem, greedy=True)
