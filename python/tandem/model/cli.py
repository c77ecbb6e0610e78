"""`tandem validate` and `tandem demo` — thin shells over tandem.model.

validate: each file -> one "OK" line on stdout, or one line per problem on
stderr (FILE:LINE:COL: yaml.path: value — expectation). Exit 0 all valid,
2 some file has problems or cannot be read (README "Exit codes"). No
tracebacks for user error. demo: validate one scenario (default examples/uno-sdwan.yaml in the
repository) and print ``summary.summarize`` — the emulator's live run will be
appended to that list of renderables.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from tandem.model.load import ScenarioError, ScenarioFileError, load_scenario
from tandem.model.scenario import Scenario


def repo_root() -> Path:
    """The repository (the package is installed editable from python/)."""
    return Path(__file__).resolve().parents[3]


def default_demo_scenario() -> Path:
    env = os.environ.get("TANDEM_DEMO_SCENARIO")
    return Path(env) if env else repo_root() / "examples" / "uno-sdwan.yaml"


def one_line(path: str, s: Scenario) -> str:
    counts = [
        (len(s.devices), "device"),
        (len(s.links), "link"),
        (len(s.nf_types), "NF type"),
        (len(s.instances), "instance"),
        (len(s.chains), "chain"),
        (len(s.element_graphs), "element graph"),
        (len(s.traffic), "traffic source"),
    ]
    text = ", ".join(f"{n} {w}{'' if n == 1 else 's'}" for n, w in counts if n)
    return f"OK {path}: {s.name} ({text})"


def _load_or_report(path: str) -> tuple[Optional[Scenario], int]:
    try:
        return load_scenario(path), 0
    except ScenarioFileError as e:
        typer.echo(str(e), err=True)
        return None, 2
    except ScenarioError as e:
        typer.echo(str(e), err=True)
        return None, 2


def register(app: typer.Typer) -> None:
    @app.command()
    def validate(
        scenario: list[str] = typer.Argument(..., metavar="SCENARIO", help="Scenario YAML files to check."),
    ) -> None:
        """Check scenario files: one OK line each, or one line per problem (exit 2)."""
        worst = 0
        for path in scenario:
            scn, code = _load_or_report(path)
            if scn is not None:
                typer.echo(one_line(path, scn))
                from tandem.model.advice import over_line_rate

                for o in over_line_rate(scn):
                    typer.echo(f"warning: {path}: {o.message()}", err=True)
            worst = max(worst, code)
        raise typer.Exit(worst)

    @app.command()
    def demo(
        scenario: Optional[str] = typer.Argument(None, help="Scenario YAML (default: examples/uno-sdwan.yaml; "
                                                 "with --story examples/demo-sdwan-ramp.yaml)."),
        story: bool = typer.Option(False, "--story", help="Run the NF agent story: the load ramps, the agent "
                                   "places and migrates the NFs; live view, then DIR/report.html."),
        out: Path = typer.Option(Path("results/demo"), "--out", help="Output directory of --story."),
    ) -> None:
        """Validate a scenario and print its summary: devices, links, NFs, chains, traffic.
        With --story, run the NF agent over it as its load changes and write a report."""
        from tandem.model.summary import summarize

        if story:
            from tandem.agent.demo import run_demo

            path = scenario or str(repo_root() / "examples" / "demo-sdwan-ramp.yaml")
            if _load_or_report(path)[0] is None:
                raise typer.Exit(2)
            run_demo(Path(path), out, live=sys.stdout.isatty())
            return
        path = scenario or str(default_demo_scenario())
        scn, code = _load_or_report(path)
        if scn is None:
            raise typer.Exit(code)
        console = Console()
        typer.echo(one_line(path, scn))
        for part in summarize(scn):
            console.print(part)
            console.print()
