"""The common answer of every placement engine, so `tandem place` can print any
of them the same way (table or JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class PlacementResult:
    """One solved placement problem.

    ``assignment`` maps each placed thing (NF, element, flow id ...) to where it
    goes ("host", "snic0", "S_ig", "C", "offload" ...). ``gap`` is the proven
    relative optimality gap (0.0 for an exact optimum, None when the method
    proves nothing, e.g. a heuristic). ``details`` holds engine-specific figures
    (PCIe use, resource totals, counts) that are JSON-serialisable.
    """

    problem: str
    method: str
    status: str  # "optimal", "feasible", "infeasible", "time_limit"
    objective: float | None
    assignment: dict[str, str]
    solve_time_s: float
    gap: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
