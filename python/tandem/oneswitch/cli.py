"""`tandem translate`: virtual rules + topology in, per-switch ovs-ofctl flow files out.

A thin shell over translate.py: reads the topology YAML and the virtual
``V.flows`` (ovs-ofctl syntax, one rule per line, ``#`` comments), translates,
writes ``DIR/<switch>.flows`` (and ``DIR/<switch>.groups`` when a switch needs
groups; load those first with ``ovs-ofctl -O OpenFlow13 add-groups``), and
prints the virtual count, physical rules per switch and the ratio (``--json``:
one JSON object). User errors print ``file:line: problem`` and exit 2. Large rule files show progress on stderr (a bar on a
terminal, a line every few seconds otherwise).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from tandem.rules.ir import Group, Rule

from .topology import TopologyError, load_topology
from .translate import Compiler, TranslationError, compiler_result


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().splitlines()
    except OSError as e:
        raise typer.BadParameter(f"{path}: cannot read: {e.strerror}") from None
    except UnicodeDecodeError:
        raise typer.BadParameter(f"{path}: not a text file") from None


Progress = Callable[[str, int, int], None]  # (phase, done, total)
PROGRESS_EVERY = 2000  # rules between progress calls


def _parse_rules(path: Path, progress: Progress | None = None) -> list[tuple[int, Rule]]:
    from tandem.rules.ofctl import parse_rule

    out = []
    lines = _read_lines(path)
    for n, raw in enumerate(lines, start=1):
        body = raw.split("#", 1)[0]
        if body.strip():
            out.append((n, parse_rule(body, str(path), n)))
        if progress and n % PROGRESS_EVERY == 0:
            progress("reading", n, len(lines))
    return out


def _parse_groups(path: Path) -> list[Group]:
    from tandem.rules.ofctl import parse_group

    out = []
    for n, raw in enumerate(_read_lines(path), start=1):
        body = raw.split("#", 1)[0]
        if body.strip():
            out.append(parse_group(body, str(path), n))
    return out


def run_translate(topology: Path, rules: Path, out: Path, groups: Path | None = None,
                  progress: Progress | None = None) -> dict:
    """Do the work of ``tandem translate`` and return the summary (raises on user error).
    ``progress(phase, done, total)`` is called every few thousand rules."""
    topo = load_topology(topology)
    numbered = _parse_rules(rules, progress)
    vgroups = _parse_groups(groups) if groups else []
    try:
        comp = Compiler(topo, groups=vgroups)
    except TranslationError as e:
        raise TranslationError(f"{groups}: {e.what}", e.reason) from None
    for i, (line, rule) in enumerate(numbered, start=1):
        try:
            comp.add(rule)
        except TranslationError as e:
            raise TranslationError(f"{rules}:{line}: {e.what}", e.reason) from None
        if progress and i % PROGRESS_EVERY == 0:
            progress("translating", i, len(numbered))
    tr = compiler_result(comp)
    _write(out, topo, tr)
    summary = tr.stats.as_dict()
    summary["out"] = str(out)
    return summary


def _write(out: Path, topo, tr) -> None:
    from tandem.rules.ofctl import format_group, format_rule

    try:
        out.mkdir(parents=True, exist_ok=True)
        for sw in topo.switch_names:
            (out / f"{sw}.flows").write_text("".join(format_rule(r) + "\n" for r in tr.per_switch[sw]))
            gpath = out / f"{sw}.groups"
            if tr.groups[sw]:
                gpath.write_text("".join(format_group(g) + "\n" for g in tr.groups[sw]))
            elif gpath.exists():
                gpath.unlink()
    except OSError as e:
        raise typer.BadParameter(f"{out}: cannot write: {e.strerror}") from None


def run_translate_scenario(scenario: Path, out: Path, rules: Path | None, groups: Path | None,
                           place: list[str]) -> dict:
    """``tandem translate --scenario``: the topology derived from the scenario for the
    placement `tandem run` would take (``--place`` pins on top), its virtual rules (or
    ``--rules``), translated; the summary names the placement and the virtual ports."""
    from tandem.model.load import load_scenario
    from tandem.placement.from_scenario import decide

    from .scenario import derive_topology, port_table, virtual_rules

    sc = load_scenario(scenario)
    pins = {}
    for item in place:
        nf, sep, dev = item.partition("=")
        if not sep or nf not in sc.nfs() or dev not in sc.devices:
            raise typer.BadParameter(f"--place {item!r}: write NF=DEVICE with an NF and a device of the scenario")
        pins[nf] = dev
    placement = decide(sc, None, pins).placement
    topo = derive_topology(sc, placement)
    vrules = [r for _, r in _parse_rules(rules)] if rules else virtual_rules(sc)
    vgroups = _parse_groups(groups) if groups else []
    comp = Compiler(topo, groups=vgroups)
    for r in vrules:
        comp.add(r)
    tr = compiler_result(comp)
    _write(out, topo, tr)
    summary = tr.stats.as_dict()
    summary["out"] = str(out)
    summary["placement"] = dict(sorted(placement.items()))
    summary["virtual_ports"] = {str(v): name for v, name, _ in port_table(sc)}
    return summary


class _ProgressView:
    """Progress of a long translation on stderr: a rich bar per phase on a terminal, else a
    line every few seconds. Nothing at all for work that ends within the first second."""

    def __init__(self, console: Console, every_s: float = 3.0) -> None:
        import time

        self.console, self.every_s, self.clock = console, every_s, time.monotonic
        self.start = self.last = self.clock()
        self.bar = None
        self.tasks: dict[str, int] = {}

    def __enter__(self) -> "_ProgressView":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self.clock()
        if now - self.start < 1.0:
            return
        if self.console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            if self.bar is None:
                self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                    TextColumn("rules, ETA"), TimeRemainingColumn(), console=self.console, transient=True)
                self.bar.start()
            if phase not in self.tasks:
                self.tasks[phase] = self.bar.add_task(phase, total=total)
            self.bar.update(self.tasks[phase], completed=done)
        elif now - self.last >= self.every_s:
            self.last = now
            self.console.print(f"{phase}: {done:,}/{total:,} rules after {now - self.start:.0f} s", highlight=False)


def register(app: typer.Typer) -> None:
    @app.command("translate")
    def translate_cmd(
        out: Path = typer.Option(..., "--out", help="Directory for <switch>.flows (and <switch>.groups)."),
        topology: Optional[Path] = typer.Option(None, "--topology", help="Topology YAML (switches, PCIe links, virtual ports)."),
        rules: Optional[Path] = typer.Option(None, "--rules", help="Virtual rules, ovs-ofctl syntax, one per line (with --scenario: instead of the scenario's)."),
        groups: Optional[Path] = typer.Option(None, "--groups", help="Virtual groups, ovs-ofctl add-group syntax, one per line."),
        scenario: Optional[Path] = typer.Option(None, "--scenario", help="Derive the topology (and, without --rules, the virtual rules) from a scenario."),
        place: Optional[list[str]] = typer.Option(None, "--place", help="With --scenario: NF=DEVICE (repeatable); the others go where run.placement decides."),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as one JSON object."),
    ) -> None:
        """Translate virtual OpenFlow 1.3 rules onto the host and sNIC switches (OneSwitch)."""
        from tandem.model.load import ScenarioError
        from tandem.rules.ofctl import OfctlSyntaxError

        from tandem.batchgc import paused_gc

        err = Console(stderr=True)
        if (scenario is None) == (topology is None):
            err.print("[red]error:[/] give exactly one of --topology (with --rules) or --scenario", highlight=False)
            raise typer.Exit(2)
        if scenario is None and rules is None:
            err.print("[red]error:[/] --topology needs --rules", highlight=False)
            raise typer.Exit(2)
        try:
            with paused_gc(), _ProgressView(err) as show:  # this process only translates; see tandem.batchgc
                if scenario is not None:
                    summary = run_translate_scenario(scenario, out, rules, groups, place or [])
                else:
                    summary = run_translate(topology, rules, out, groups, progress=show)
        except ScenarioError as e:
            err.print(str(e), markup=False, highlight=False, soft_wrap=True)
            raise typer.Exit(2)
        except (TopologyError, TranslationError, OfctlSyntaxError, typer.BadParameter, ValueError) as e:
            err.print(f"[red]error:[/] {e}", markup=True, highlight=False, soft_wrap=True)
            raise typer.Exit(2)
        if as_json:
            typer.echo(json.dumps(summary, sort_keys=True))
            return
        con = Console()
        table = Table(title=f"OneSwitch translation -> {out}")
        table.add_column("switch")
        table.add_column("physical rules", justify="right")
        table.add_column("groups", justify="right")
        for sw, n in summary["physical"].items():
            table.add_row(sw, str(n), str(summary["groups"][sw]))
        con.print(table)
        if "placement" in summary:
            con.print("placement: " + ", ".join(f"{n}->{d}" for n, d in summary["placement"].items()), highlight=False)
            con.print("virtual ports: " + ", ".join(f"{v}={n}" for v, n in summary["virtual_ports"].items()), highlight=False)
        con.print(f"virtual rules: {summary['virtual']}   physical rules: {summary['physical_total']} "
                  f"(of which {summary['shared_rules']} shared dispatch/delivery)   ratio: {summary['ratio']:.3f}")

    from .serve import register as register_serve

    register_serve(app)
