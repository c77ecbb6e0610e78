"""`tandem pof run|add|del|dump`: drive a POF offload scenario and inspect or change
its POF-FTs afterwards, like `tc filter add|del` and `tc -s filter show` on
OVS-POF-TC. A thin shell over `scenario.py`; errors print one line and exit 1."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape

from .decision import PolicyError
from .scenario import PofScenarioError, restore, run_scenario, save
from .system import PofFt, PofOffloadError
from .textfmt import PofSyntaxError, parse_actions, parse_match

pof_app = typer.Typer(help="POF offload (OVS-POF-TC): run a scenario, add/delete/dump POF-FTs of a run.",
                      no_args_is_help=True)
out = Console()
err = Console(stderr=True, soft_wrap=True)
ERRORS = (PofScenarioError, PofOffloadError, PofSyntaxError, PolicyError)


def _fail(msg: str) -> None:
    err.print(f"[red]error:[/] {escape(msg)}")
    raise typer.Exit(1)


@pof_app.command("run")
def run_cmd(scenario: Path = typer.Argument(..., help="POF offload scenario (YAML/JSON)."),
            out_dir: Path = typer.Option(..., "--out", "-o", help="Run directory to write (state, CSV, pcap)."),
            pcap: bool = typer.Option(True, help="Write egress.pcap with each flow's first packets.")) -> None:
    """Run a scenario on the emulated server and print the POF-FT dump."""
    try:
        s = run_scenario(scenario, out_dir, pcap)
    except ERRORS as e:
        _fail(str(e))
    print(s.dump())


@pof_app.command("add")
def add_cmd(run: Path = typer.Argument(..., help="Scenario run directory."),
            ft_id: str = typer.Option(..., "--id", help="POF-FT name."),
            match: str = typer.Option(..., "--match", help="OFFSET/LENGTH=VALUE[,...] (bits)."),
            actions: str = typer.Option(..., "--actions", help="set_field:O/L=V, add_field:O/L=V, output:PORT."),
            priority: int = typer.Option(100, "--priority"),
            frame_bytes: int = typer.Option(64, "--frame-bytes", help="Packet size of the flow."),
            rate_pps: float = typer.Option(0.0, "--rate-pps", help="Announced rate until counters exist.")) -> None:
    """Install a POF-FT in a run; the decision module places it (offloads complete after tau_add)."""
    try:
        s, params = restore(run)
        s.add(PofFt(ft_id, parse_match(match, "--match"), parse_actions(actions, "--actions"), priority=priority,
                    frame_bytes=frame_bytes, rate_hint_pps=rate_pps))
        s.advance(s.now + max(s.model.tau_add_s, s.model.tau_del_s))
        save(s, run, params)
    except ERRORS as e:
        _fail(str(e))
    print(s.dump())


@pof_app.command("del")
def del_cmd(run: Path = typer.Argument(..., help="Scenario run directory."),
            ft_id: str = typer.Argument(..., help="POF-FT name.")) -> None:
    """Delete a POF-FT from both paths."""
    try:
        s, params = restore(run)
        s.delete(ft_id)
        s.advance(s.now + max(s.model.tau_add_s, s.model.tau_del_s))
        save(s, run, params)
    except ERRORS as e:
        _fail(str(e))
    print(s.dump())


@pof_app.command("dump")
def dump_cmd(run: Path = typer.Argument(..., help="Scenario run directory.")) -> None:
    """Show every POF-FT like `tc -s filter show`: match, actions, in_hw/not_in_hw, per-path counters."""
    try:
        s, _ = restore(run)
    except ERRORS as e:
        _fail(str(e))
    print(s.dump())


def register(app: typer.Typer) -> None:
    app.add_typer(pof_app, name="pof")
