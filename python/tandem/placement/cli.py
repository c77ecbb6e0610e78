"""`tandem place PROBLEM INPUT`: solve a placement problem file and print the
result as a table or JSON. A thin shell: it looks the engine up in ENGINES
(import paths, so an engine that is not written yet fails only when asked for),
calls its `solve_file(path, method, time_limit_s) -> PlacementResult` and
prints. User errors print one line: exit 2 for bad input (a missing or wrong
file, a bad flag), 1 for a valid problem without a solution (infeasible
budgets); never a traceback (README "Exit codes").
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

from tandem.placement.result import PlacementResult

ENGINES: dict[str, str] = {
    "uno": "tandem.placement.uno:solve_file",
    "smartchain": "tandem.placement.smartchain:solve_file",
    "pof-fp": "tandem.placement.pof:solve_fp_file",
    "pof-fr": "tandem.placement.pof:solve_fr_file",
}

# Exceptions that mean "the input is wrong" (exit 2) or "it has no solution" (exit 1),
# by name so this shell does not import every engine.
_USER_ERRORS = ("UnoInputError", "UnoInfeasible", "ScenarioError", "ScenarioFileError", "InfeasibleError",
                "SmartChainError", "SmartChainInfeasible", "PofInputError", "PofInfeasible", "FileNotFoundError")


def resolve(problem: str):
    """The engine's solve function for a PROBLEM name (KeyError if unknown)."""
    target = ENGINES[problem]
    mod, _, fn = target.partition(":")
    return getattr(importlib.import_module(mod), fn)


_NO_SOLUTION = ("UnoInfeasible", "InfeasibleError", "SmartChainInfeasible", "PofInfeasible")


def _is_infeasible(e: BaseException) -> bool:
    return any(c.__name__ in _NO_SOLUTION for c in type(e).__mro__)


def _is_user_error(e: BaseException) -> bool:
    return any(c.__name__ in _USER_ERRORS for c in type(e).__mro__)


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
    head.add_row("gap", "—" if r.gap is None else f"{r.gap:.2e}")
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
        input: Path = typer.Argument(..., help="Problem file (YAML/JSON, see docs/placement.md) or a scenario."),
        method: Optional[str] = typer.Option(None, "--method", "-m", help="Engine method (uno: fast | milp | brute)."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
        time_limit: Optional[float] = typer.Option(None, "--time-limit", help="Solver time limit in seconds."),
    ) -> None:
        """Solve a placement problem and print objective, assignment, solve time, method, gap, status."""
        if problem not in ENGINES:
            _fail(f"unknown problem {problem!r}; choose one of {', '.join(ENGINES)}", 2)
        if time_limit is not None and not time_limit > 0:
            _fail(f"--time-limit must be > 0 seconds, got {time_limit}", 2)
        if not input.exists():
            _fail(f"{input}: no such file", 2)
        try:
            solve_file = resolve(problem)
        except (ImportError, AttributeError) as e:
            _fail(f"the {problem} engine is not available ({e})", 2)
        try:
            result = solve_file(input, method, time_limit)
        except Exception as e:  # noqa: BLE001 - user errors become one line; bugs are re-raised
            if not _is_user_error(e):
                raise
            msg = str(e).strip().replace("\n", "; ")
            binding = getattr(e, "binding", None) or getattr(e, "constraints", None)
            if binding and not any(b in msg for b in binding):
                msg += f" (binding: {', '.join(binding)})"
            _fail(msg, 1 if _is_infeasible(e) else 2)
        if as_json:
            typer.echo(json.dumps(_jsonable(result.to_json()), indent=2))
        else:
            render_table(result, Console())
        if result.status not in ("optimal", "feasible", "time_limit") and result.objective is None:
            raise typer.Exit(1)
