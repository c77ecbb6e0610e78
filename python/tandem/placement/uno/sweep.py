"""UNO Fig. 16: sweep the PCIe budget T and record host cores, sNIC cores and
PCIe use of the optimal placement (pure; the bench writes CSV/PNG).
Input: a UnoProblem (e.g. examples/uno-fig15-dpi.yaml) and a list of T values
in Gbps applied to every sNIC link. Output: one row per T."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from tandem.placement.uno.engine import solve
from tandem.placement.uno.model import UnoProblem


def with_pcie_budget(p: UnoProblem, T: float) -> UnoProblem:
    return dataclasses.replace(p, snics=tuple(dataclasses.replace(s, pcie_gbps=float(T)) for s in p.snics))


def sweep_pcie(p: UnoProblem, Ts: Iterable[float], method: str = "fast") -> list[dict]:
    rows = []
    for T in Ts:
        r = solve(with_pcie_budget(p, T), method)
        d = r.details
        up = sum(d["pcie_up_gbps"].values())
        down = sum(d["pcie_down_gbps"].values())
        rows.append({
            "T_gbps": float(T),
            "host_cores": d["host_use"].get("cores", 0.0),
            "snic_cores": sum(u.get("cores", 0.0) for u in d["snic_use"].values()),
            "pcie_up_gbps": up,
            "pcie_down_gbps": down,
            "pcie_used_gbps": up + down if p.pcie == "shared" else max(up, down) if p.pcie == "duplex" else down,
            "offloaded_nfs": sum(1 for n in p.nodes if n.kind == "nf" and n.pin is None and r.assignment[n.name] != "host"),
            "objective": r.objective,
            "status": r.status,
            "method": r.method,
            "solve_time_s": r.solve_time_s,
        })
    return rows
