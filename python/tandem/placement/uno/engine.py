"""UNO placement entry points: `solve(problem, method)` and `solve_file(path)`
(what `tandem place uno` calls). Dispatches to the methods; the model
(`uno.model`) knows nothing of them, so the imports run one way:
engine -> {fast, milp, brute, io} -> model.
"""

from __future__ import annotations

from pathlib import Path

from tandem.placement.result import PlacementResult
from tandem.placement.uno.brute import solve_brute
from tandem.placement.uno.fast import solve_fast
from tandem.placement.uno.io import load_problem
from tandem.placement.uno.milp import solve_milp
from tandem.placement.uno.model import METHODS, UnoInputError, UnoProblem, check_pinned


def solve(p: UnoProblem, method: str | None = None, time_limit_s: float | None = None,
          rel_gap: float | None = None) -> PlacementResult:
    """Solve with `method` (default "fast"), proven within `rel_gap` (default
    1e-9; "brute" is exact). Raises UnoInfeasible naming the binding
    constraint when no placement exists."""
    gap = 1e-9 if rel_gap is None else rel_gap
    method = method or "fast"
    check_pinned(p)
    if method == "milp":
        return solve_milp(p, time_limit_s=time_limit_s, rel_gap=gap)
    if method == "fast":
        return solve_fast(p, time_limit_s=time_limit_s, rel_gap=gap)
    if method == "brute":
        return solve_brute(p)
    raise UnoInputError(f"unknown UNO method {method!r}; choose one of {', '.join(METHODS)}")


def solve_file(path: Path, method: str | None = None, time_limit_s: float | None = None,
               rel_gap: float | None = None) -> PlacementResult:
    """Load a UNO problem (placement YAML/JSON or a Tandem scenario) and solve it."""
    return solve(load_problem(Path(path)), method, time_limit_s, rel_gap)
