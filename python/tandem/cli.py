"""`tandem` command line. A thin shell: each command parses arguments, calls pure
code, and prints. Feature packages contribute their commands through a
`register(app)` function in their own `cli.py`, listed in COMMAND_MODULES, so
this file stays small and no feature edits another's commands."""

from __future__ import annotations

import importlib
import os
import runpy
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from tandem import __version__
from tandem.errors import TandemGroup

app = typer.Typer(
    name="tandem",
    help="Run network functions across a server and its SmartNICs as one machine.",
    no_args_is_help=True,
    add_completion=False,
    cls=TandemGroup,  # every exception -> one line + a documented exit code (tandem/errors.py)
)
console = Console()
err_console = Console(stderr=True)

# Packages whose cli.py adds commands. Each must exist: a missing one is an ImportError.
COMMAND_MODULES = (
    "tandem.model.cli",
    "tandem.rules.cli",
    "tandem.oneswitch.cli",
    "tandem.placement.cli",
    "tandem.emu.cli",
    "tandem.pof_offload.cli",
    "tandem.reproduce.cli",
    "tandem.agent.rest_cli",
)


def _version_callback(value: bool) -> None:
    if value:
        console.print(f"tandem {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Optional[bool] = typer.Option(
        None, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Tandem command line."""


def benches_dir() -> Path:
    """The repository's benches/ folder (the package is installed editable)."""
    env = os.environ.get("TANDEM_BENCHES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "benches"


def list_benches() -> list[str]:
    d = benches_dir()
    return sorted(p.stem for p in d.glob("*.py") if not p.name.startswith("_")) if d.is_dir() else []


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def bench(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Benchmark name (a file in benches/), or 'all', or 'list'."),
) -> None:
    """Run a benchmark program from benches/ (results go to stdout; record them in BENCHMARKS.md).

    Everything after NAME is passed to the benchmark: `tandem bench pof_tables --sizes 64`."""
    args = [a for a in ctx.args if a != "--"]
    names = list_benches()
    if name == "list":
        for n in names:
            console.print(n)
        return
    todo = names if name == "all" else [name.replace("-", "_")]  # dp-oracle == dp_oracle
    for n in todo:
        path = benches_dir() / f"{n}.py"
        if not path.is_file():
            err_console.print(f"[red]error:[/] no benchmark '{n}' in {benches_dir()}; known: {', '.join(names) or 'none'}")
            raise typer.Exit(2)
        console.rule(f"bench {n}")
        saved = sys.argv
        sys.argv = [str(path), *(args or [])]
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as e:
            if e.code not in (None, 0):
                raise typer.Exit(int(e.code) if isinstance(e.code, int) else 1)
        finally:
            sys.argv = saved


def _register_feature_commands() -> None:
    for modname in COMMAND_MODULES:
        importlib.import_module(modname).register(app)


_register_feature_commands()

if __name__ == "__main__":
    app()
