"""`tandem place PROBLEM INPUT`: solve a placement problem file and print the
result as a table or JSON. A thin shell: it looks the engine up in ENGINES
(import paths, so an engine that is not written yet fails only when asked for),
calls its `solve_file(path, method, time_limit_s) -> PlacementResult` and
prints. User errors are the `placement.errors.PlacementError` hierarchy (and a
scenario's `ScenarioError`): one line on stderr, exit 1 (no solution) or 2 (bad
input, usage, unreadable file); never a traceback.
"""

from __future__ import annotations

import importlib
import json
import math
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tandem.model.load import ScenarioError
from tandem.placement.errors import PlacementError
from tandem.placement.from_scenario import DecisionError
from tandem.placement.result import PlacementResult

ENGINES: dict[str, str] = {
    "uno": "tandem.placement.uno.engine:solve_file",
    "smartchain": "tandem.placement.smartchain.engine:solve_file",
    "pof-fp": "tandem.placement.pof.engine:solve_fp_file",
    "pof-fr": "tandem.placement.pof.engine:solve_fr_file",
}



def resolve(problem: str):
    """The engine's solve function for a PROBLEM name (KeyError if unknown)."""
    target = ENGINES[problem]
    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


def _derived(problem: str):
    """solve(path, method, time_limit) on the problem derived from a scenario file."""
    def solve_scenario(path: Path, method: Optional[str], time_limit_s: Optional[float],
                       rel_gap: Optional[float] = None) -> PlacementResult:
        from tandem.model.load import load_scenario
        from tandem.placement import from_scenario

        sc = load_scenario(path)
        gap = {} if rel_gap is None else {"rel_gap": rel_gap}
        if problem == "uno":
            from tandem.placement.uno.engine import solve
            return solve(from_scenario.uno_problem(sc), method or "fast", time_limit_s, **gap)
        if problem == "smartchain":
            from tandem.placement.smartchain.engine import solve
            return solve(from_scenario.smartchain_problem(sc), method, time_limit_s, **gap)
        if problem == "pof-fp":
            from tandem.placement.pof.engine import solve_fp
            return solve_fp(from_scenario.pof_fp_problem(sc), method, time_limit_s, rel_gap)
        if problem == "pof-fr":
            from tandem.placement.pof.engine import solve_fr
            return solve_fr(from_scenario.pof_fr_problem(sc), method, time_limit_s, rel_gap)
        raise from_scenario.DecisionError(f"--scenario derives uno, smartchain and pof problems, not {problem}")
    return solve_scenario


def _fail(msg: str, code: int) -> None:
    """One plain line on stderr (no wrapping, no markup), then exit."""
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code)


def render_table(r: PlacementResult, console: Console, max_rows: int = 60) -> None:
    head = Table(title=f"{r.problem} placement — {r.method}", show_header=False)
    head.add_column("field", style="bold")
    head.add_column("value")
    head.add_row("status", r.status)
    head.add_row("objective", "—" if r.objective is None else f"{r.objective:.6g}")
    head.add_row("certified gap", "none (not proven)" if r.gap is None else f"{r.gap:.2e}")
    head.add_row("solve time", f"{r.solve_time_s * 1e3:.1f} ms")
    for k, v in r.details.items():
        if isinstance(v, (dict, list)) and len(json.dumps(v, default=str)) > 120:
            continue
        head.add_row(escape(str(k)), escape(json.dumps(_jsonable(v), default=str) if isinstance(v, (dict, list)) else str(v)))
    console.print(head)
    t = Table(title=f"assignment ({len(r.assignment)} items)")
    t.add_column("item")
    t.add_column("placed on")
    for i, (k, v) in enumerate(sorted(r.assignment.items())):
        if i == max_rows:
            t.add_row("…", f"{len(r.assignment) - max_rows} more (use --json)")
            break
        t.add_row(escape(str(k)), escape(str(v)))
    console.print(t)


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "item"):  # numpy scalars
        return x.item()
    return x


def register(app: typer.Typer) -> None:
    @app.command()
    def place(
        problem: str = typer.Argument(..., help=f"Placement problem: {' | '.join(ENGINES)}."),
        input: Optional[Path] = typer.Argument(None, help="Problem file (YAML/JSON, see docs/placement.md) or a scenario."),
        scenario: Optional[Path] = typer.Option(None, "--scenario", help="Place the problem derived from a scenario (uno, smartchain: the one `tandem run` solves; pof-fp, pof-fr: its traffic's flows)."),
        method: Optional[str] = typer.Option(None, "--method", "-m", help="Engine method (uno: fast | milp | brute)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Solver time limit in seconds."),
        gap: Optional[float] = typer.Option(None, "--gap", help="Relative optimality gap to prove (default 1e-9)."),
    ) -> None:
        """Solve a placement problem and print objective, assignment, solve time, method, gap, status."""
        if problem not in ENGINES:
            _fail(f"unknown problem {problem!r}; choose one of {', '.join(ENGINES)}", 2)
        if time_limit is not None and not time_limit > 0:
            _fail(f"--time-limit must be > 0 seconds, got {time_limit}", 2)
        if gap is not None and not (0 <= gap < 1):
            _fail(f"--gap must be in [0, 1), got {gap}", 2)
        if (input is None) == (scenario is None):
            _fail("give a problem file or --scenario S.yaml (one of them)", 2)
        path = input if input is not None else scenario
        if not path.exists():
            _fail(f"{path}: no such file", 2)
        try:
            solve_file = resolve(problem) if scenario is None else _derived(problem)
        except (ImportError, AttributeError) as e:
            _fail(f"the {problem} engine is not available ({e})", 2)
        try:
            result = solve_file(path, method, time_limit, **({} if gap is None else {"rel_gap": gap}))
        except PlacementError as e:  # user errors become one line; anything else is a bug and propagates
            msg = str(e).strip().replace("\n", "; ")
            binding = getattr(e, "binding", None)
            if binding and not any(b in msg for b in binding):
                msg += f" (binding: {', '.join(binding)})"
            _fail(msg, e.exit_code)
        except (ScenarioError, DecisionError) as e:
            _fail(str(e).strip().replace("\n", "; "), 2)
        if as_json:
            typer.echo(json.dumps(_jsonable(result.to_json()), indent=2))
        else:
            render_table(result, Console())
        if result.status != "optimal" and result.objective is not None:  # stopped early: say how far from proven
            gap = "unknown (no bound)" if result.gap is None else f"{result.gap:.2e}"
            typer.echo(f"warning: not proven optimal ({result.status}); certified relative gap {gap}", err=True)
        if result.status not in ("optimal", "feasible", "time_limit") and result.objective is None:
            raise typer.Exit(1)
