"""`tandem rules check|fmt|gen` — thin shells over tandem.rules.ofctl / generate.

check: every flow file -> "FILE: N rules OK" on stdout, or one line per bad
line on stderr (``FILE:LINE:COL: TOKEN: message``); exit 0 all good, 2 some
line is bad or a file cannot be read. ``.groups`` files are read as add-group lines.
fmt: print the canonical form of each rule (or group) of one file.
gen: print seeded random rules (and optionally their groups) that OVS loads.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import typer

from tandem.rules.group_check import group_problems
from tandem.rules.generate import ALL_FEATURES, MAX_PRIORITY, OPTIONAL_FEATURES, random_groups, random_ruleset
from tandem.rules.ofctl import OfctlSyntaxError, format_group, format_rule, parse_group, parse_rule

rules_app = typer.Typer(help="Rule text tools (ovs-ofctl flow syntax).", no_args_is_help=True)


def _lines(text: str) -> list[tuple[int, str]]:
    return [(n, raw.split("#", 1)[0]) for n, raw in enumerate(text.splitlines(), 1) if raw.split("#", 1)[0].strip()]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        typer.echo(f"{path}: cannot read: {e.strerror if isinstance(e, OSError) else e}", err=True)
        raise typer.Exit(2) from None


def _parse_file(path: Path, text: str) -> tuple[list[str], list[OfctlSyntaxError]]:
    """Canonical lines and errors; ``.groups`` files hold groups, others flows."""
    out, errors = [], []
    groups = path.suffix == ".groups"
    parsed_groups = []
    for n, body in _lines(text):
        try:
            if groups:
                g = parse_group(body, str(path), n)
                parsed_groups.append((n, g))
                out.append(format_group(g))
            else:
                out.append(format_rule(parse_rule(body, str(path), n)))
        except OfctlSyntaxError as e:
            errors.append(e)
    if groups:  # across lines: duplicate ids, a group into itself, cycles
        errors = sorted(errors + group_problems(parsed_groups, str(path)), key=lambda e: e.line)
    return out, errors


@rules_app.command("check")
def check(files: list[Path] = typer.Argument(..., help="Flow files (.flows) or group files (.groups).")) -> None:
    """Parse flow/group files; report every bad line as FILE:LINE:COL: message."""
    bad = False
    for path in files:
        parsed, errors = _parse_file(path, _read(path))
        for e in errors:
            what = e.token or ("group" if path.suffix == ".groups" else "flow")
            typer.echo(f"{e.source}:{e.line}:{e.column}: {what}: {e.reason}", err=True)
        if errors:
            bad = True
        else:
            typer.echo(f"{path}: {len(parsed)} {'groups' if path.suffix == '.groups' else 'rules'} OK")
    raise typer.Exit(2 if bad else 0)


@rules_app.command("fmt")
def fmt(file: Path = typer.Argument(..., help="A flow (.flows) or group (.groups) file.")) -> None:
    """Print the canonical form of every rule (or group), one per line."""
    parsed, errors = _parse_file(file, _read(file))
    for e in errors:
        typer.echo(str(e), err=True)
    if errors:
        raise typer.Exit(2)
    for line in parsed:
        typer.echo(line)


@rules_app.command("gen")
def gen(
    count: int = typer.Option(100, min=1, help="Number of rules."),
    seed: int = typer.Option(0, help="Random seed (same seed, same rules)."),
    tables: int = typer.Option(1, min=1, max=255, help="Tables the rules spread over."),
    ports: str = typer.Option("1,2,3,4", help="Comma-separated OpenFlow port numbers."),
    groups: int = typer.Option(0, min=0, help="Also draw this many groups (ids 1..N) for rules to use."),
    groups_out: Optional[Path] = typer.Option(None, help="Write the groups here (add-group lines)."),
    without: list[str] = typer.Option([], "--without", help="Feature to turn off (repeatable)."),
    with_: list[str] = typer.Option([], "--with", help="Opt-in feature: pof, timeouts (repeatable)."),
) -> None:
    """Print seeded random rules in canonical ovs-ofctl syntax."""
    try:
        port_list = [int(p) for p in ports.split(",") if p.strip()]
    except ValueError:
        typer.echo(f"--ports: {ports!r} is not a comma-separated list of integers", err=True)
        raise typer.Exit(2) from None
    if not port_list:
        typer.echo("--ports: give at least one port number, e.g. --ports 1,2,3,4", err=True)
        raise typer.Exit(2)
    bad_port = next((p for p in port_list if not 1 <= p <= 0xFFFFFF00), None)
    if bad_port is not None:
        typer.echo(f"--ports: {bad_port} is not an OpenFlow port number (1..{0xFFFFFF00})", err=True)
        raise typer.Exit(2)
    if count > MAX_PRIORITY * tables:
        typer.echo(f"--count: {count:,} rules with distinct priorities need --tables {-(-count // MAX_PRIORITY)} or more"
                   f" (a table holds {MAX_PRIORITY:,} priorities)", err=True)
        raise typer.Exit(2)
    known = ALL_FEATURES | OPTIONAL_FEATURES
    for name in [*without, *with_]:
        if name not in known:
            typer.echo(f"unknown feature {name!r}; known: {', '.join(sorted(known))}", err=True)
            raise typer.Exit(2)
    if groups and groups_out is None:
        typer.echo("--groups needs --groups-out FILE (OVS needs the groups before the rules)", err=True)
        raise typer.Exit(2)
    rng = random.Random(seed)
    drawn = random_groups(rng, groups, port_list) if groups else []
    if groups_out is not None:
        groups_out.write_text("".join(format_group(g) + "\n" for g in drawn))
    features = (ALL_FEATURES | frozenset(with_)) - frozenset(without)
    for r in random_ruleset(rng, count, port_list, tables, features, groups=[g.group_id for g in drawn]):
        typer.echo(format_rule(r))


def register(app: typer.Typer) -> None:
    app.add_typer(rules_app, name="rules")


@rules_app.command("from-chains")
def from_chains(scenario: Path = typer.Argument(..., help="Scenario YAML file.")) -> None:
    """Print the virtual rules a controller would write for the scenario's chains and element
    graphs (what `tandem run` uses when the scenario has no rules:), with the virtual port table."""
    from tandem.model.load import ScenarioError, load_scenario
    from tandem.oneswitch.scenario import ScenarioOneSwitchError, chain_rules_text, port_table

    try:
        sc = load_scenario(scenario)
        lines = chain_rules_text(sc)
    except ScenarioError as e:
        typer.echo(str(e), err=True)
        raise typer.Exit(2)
    except ScenarioOneSwitchError as e:
        typer.echo(f"{scenario}: {e}", err=True)
        raise typer.Exit(1)
    typer.echo(f"# virtual ports of {sc.name} (placement-independent)")
    for v, name, kind in port_table(sc):
        typer.echo(f"#   {v:>4}  {name}  ({kind})")
    if sc.rules:
        typer.echo("# note: the scenario gives rules:, so tandem run uses those, not these")
    for line in lines:
        typer.echo(line)
