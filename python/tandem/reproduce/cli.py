"""`tandem reproduce`: run the papers' experiments and compare with the papers.

    tandem reproduce --list
    tandem reproduce NAME... --out DIR [--quick] [--jobs N]
    tandem reproduce all --out DIR [--quick] [--jobs N] [--update-docs]

A thin shell over runner.py and report.py: rich progress, one line per finished
experiment, DIR/report.html at the end. Exit 0 when every experiment ran (whatever
its verdict), 4 when one raised (it is still in the report), 2 on a bad name.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from tandem.errors import INPUT, INTERNAL, TandemError

console = Console()
DOCS = Path(__file__).resolve().parents[3] / "docs" / "reproduction.md"


def _list(quick: bool) -> None:
    from tandem.reproduce.paper import paper_experiment
    from tandem.reproduce.registry import EXPERIMENTS
    t = Table(title="tandem reproduce: experiments")
    for c in ("name", "paper", "figure", "what it shows", "expected time"):
        t.add_column(c)
    for e in EXPERIMENTS:
        t.add_row(e.name, e.paper, paper_experiment(e.paper, e.name).figure, e.shows,
                  f"{e.quick_seconds if quick else e.seconds:g} s" + (" (quick)" if quick else ""))
    console.print(t)
    total = sum(e.quick_seconds if quick else e.seconds for e in EXPERIMENTS)
    console.print(f"{len(EXPERIMENTS)} experiments, about {total / 60:.0f} min (measured on 2 shared cores)"
                  + (" with --quick" if quick else "; --quick is faster"))


def reproduce(
    names: Optional[list[str]] = typer.Argument(None, help="Experiment names, or 'all'."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output directory (one folder per experiment)."),
    quick: bool = typer.Option(False, "--quick", help="Smallest sizes (minutes for all, not hours)."),
    jobs: int = typer.Option(1, "--jobs", "-j", min=1, max=64, help="Experiments run in parallel processes."),
    list_: bool = typer.Option(False, "--list", help="List the experiments and exit."),
    update_docs: bool = typer.Option(False, "--update-docs", help="Also regenerate docs/reproduction.md."),
) -> None:
    """Reproduce the papers' figures and tables side by side with the papers' values."""
    from tandem.reproduce import report, runner
    from tandem.reproduce.registry import select
    if list_:
        _list(quick)
        return
    if not names:
        raise TandemError("name experiments to run (or 'all'); `tandem reproduce --list` shows them", INPUT)
    if out is None:
        raise TandemError("--out DIR is required: where the experiments write their files", INPUT)
    exps = select(names)
    order = [e.name for e in exps]
    t0 = time.perf_counter()
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/"
                  "{task.total}"), TimeElapsedColumn(), console=console, transient=False) as prog:
        task = prog.add_task(f"reproducing ({jobs} job{'s' if jobs > 1 else ''})", total=len(exps))
        running: list[str] = []

        def on_start(n: str) -> None:
            running.append(n)
            if jobs == 1:
                prog.update(task, description=f"running {n}")

        def on_done(s: dict) -> None:
            col = report.VERDICT_COLOUR.get(s["verdict"], "white")
            prog.console.print(f"[{col}]{s['verdict']:>16}[/]  {s['name']:<18} {s['seconds']:6.1f} s  "
                               f"{(s['error'] or s['trend'].get('says') or '')}", no_wrap=True, overflow="ellipsis")
            prog.advance(task)

        summaries = runner.run_many(order, out, quick=quick, jobs=jobs, on_start=on_start, on_done=on_done)
    wall = time.perf_counter() - t0
    load = os.getloadavg()
    meta = (f"{'quick' if quick else 'full'} run of {len(summaries)} experiments, {wall:.0f} s wall with {jobs} "
            f"job(s), load {load[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    page = report.write_html(summaries, out, meta)
    console.print(f"{meta}\nreport: {page}")
    if update_docs:
        if len(summaries) != len(select(["all"])):
            raise TandemError("--update-docs needs every experiment: run `tandem reproduce all --update-docs`", INPUT)
        cmd = "tandem reproduce all" + (" --quick" if quick else "") + " --update-docs"
        console.print(f"docs: {report.write_markdown(summaries, DOCS, cmd)}")
    if any(s["error"] for s in summaries):
        raise typer.Exit(INTERNAL)


def register(app: typer.Typer) -> None:
    app.command("reproduce")(reproduce)
