"""`tandem run SCENARIO.yaml [--duration 1s] [--seed N] --out DIR [--pcap] [--placement uno|smartchain|pinned]
[--place NF=DEV] [--switching rules|portmap]`.

Thin shell: load the scenario (errors print FILE:LINE:COL: path: message, exit 2), take
the placement decision (printed: NF -> device, objective, host vs sNIC cores,
PCIe load), run
it in the emulator with a progress bar, write metrics.json (+ pcaps), print a
summary table (plus a per-tenant table when the scenario has tenants).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

console = Console()
# Error lines stay whole (FILE:LINE:COL: ... for editors), with no markup or highlighting.
err_console = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)


def _duration(text: Optional[str]) -> Optional[float]:
    if text is None:
        return None
    from tandem.model.units import DURATION, UnitError, parse

    try:
        v = float(parse(text, DURATION))
    except UnitError as e:
        raise typer.BadParameter(f"{text!r}: {e}", param_hint="--duration") from None
    if v <= 0:
        raise typer.BadParameter(f"{text!r}: must be > 0", param_hint="--duration")
    return v


PCAP_WARN_BYTES = 1 << 30  # warn when a --pcap run would write more than this
WALL_STEP_S = 0.02  # wall time per emulator slice: Ctrl-C is seen within about this


def _exit_at_once(code: int) -> None:
    """Exit with ``code`` now, skipping the interpreter's teardown (freeing every module
    and object: 0.1-0.15 s with numpy, HiGHS and pydantic loaded) once what was asked
    for is written: after Ctrl-C, stopping is the point. Only when this process's
    streams are its own: inside a test runner that swapped them, an ordinary exit."""
    if sys.stdout is sys.__stdout__ and sys.stderr is sys.__stderr__:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise typer.Exit(code)


def _size(text: Optional[str], flag: str) -> Optional[int]:
    if text is None:
        return None
    from tandem.model.units import SIZE, UnitError, parse

    try:
        v = int(parse(text, SIZE))
    except UnitError as e:
        raise typer.BadParameter(f"{text!r}: {e}", param_hint=flag) from None
    if v < 24 + 16 + 14:
        raise typer.BadParameter(f"{text!r}: must hold at least the file header and one frame (54B)", param_hint=flag)
    return v


def _human_bytes(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


class _Ticker:
    """Progress where no bar can be drawn (stderr is not a terminal): one line every `every` s."""

    def __init__(self, total: float, every: float = 5.0):
        import time

        self.clock = time.monotonic
        self.total, self.every = total, every
        self.start = self.last = self.clock()

    def __call__(self, done: float) -> None:
        now = self.clock()
        if now - self.last < self.every or done >= self.total:
            return
        self.last = now
        wall = now - self.start
        eta = wall * (self.total - done) / done if done > 0 else float("inf")
        err_console.print(f"emulating: {done:.6g}/{self.total:g} s simulated in {wall:.0f} s wall"
                          f" ({done / wall:.3g}× real time), about {eta:.0f} s left; Ctrl-C stops and keeps the results so far")


def _placement(items: list[str], sc) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        nf, sep, dev = item.partition("=")
        if not sep or nf not in sc.nfs() or dev not in sc.devices:
            raise typer.BadParameter(
                f"{item!r}: write NF=DEVICE with an NF of the scenario ({', '.join(sc.nfs()) or 'none'})"
                f" and a device ({', '.join(sc.devices)})", param_hint="--place")
        out[nf] = dev
    return out


def nf_counters_table(m: dict) -> Table:
    """One row per NF: its own non-zero counters (real NFs; the model NF has rx/tx only)."""
    t = Table(title="NF counters")
    t.add_column("NF")
    t.add_column("counters")
    for name, cs in sorted(m.get("nf_counters", {}).items()):
        t.add_row(name, ", ".join(f"{k} {v}" for k, v in cs.items() if v) or "-")
    return t


def migrations_table(m: dict) -> Table:
    """One row per NF move (metrics ``migrations``): where, when, state, buffering, guarantees."""
    t = Table(title="NF migrations")
    for col in ("NF", "from → to", "start ms", "took µs", "state B", "buffered", "added p99 µs", "lost/dup/reord"):
        t.add_column(col, justify="left" if col in ("NF", "from → to") else "right")
    for g in m["migrations"]:
        took = f"{(g['end_s'] - g['start_s']) * 1e6:.1f}" if g["phase"] == "done" else g["phase"]
        t.add_row(g["nf"], f"{g['from']} → {g['to']}", f"{g['start_s'] * 1e3:.3f}", took, str(g["state_bytes"]),
                  str(g["buffered_packets"]), f"{g['added_latency_ns']['p99'] / 1e3:.1f}",
                  f"{g['lost']}/{g['duplicated']}/{g['reordered']}")
    return t


def summary_table(m: dict) -> Table:
    t = Table(title=f"{m['scenario']} — {m['duration_s']:g} s simulated, seed {m['seed']}")
    for col in ("flow", "offered Gb/s", "Gb/s", "Mpps", "p50 µs", "p99 µs", "p99.9 µs", "dropped"):
        t.add_column(col, justify="left" if col == "flow" else "right")
    for name, f in m["flows"].items():
        lat = f["latency_ns"]
        t.add_row(name, f"{f.get('requested_gbps', f['offered_gbps']):.3f}", f"{f['throughput_gbps']:.3f}", f"{f['throughput_mpps']:.3f}",
                  f"{lat['p50'] / 1e3:.1f}", f"{lat['p99'] / 1e3:.1f}", f"{lat['p999'] / 1e3:.1f}", str(f["dropped"]))
    return t


def tenants_table(m: dict) -> Table:
    """Per tenant (FairNIC): rates, latency, drops by reason; the title says whether isolation was on."""
    iso = m.get("isolation", {}).get("enabled")
    t = Table(title=f"tenants — isolation {'on' if iso else 'off'}")
    for col in ("tenant", "offered Gb/s", "Gb/s", "Mpps", "p50 µs", "p99 µs", "drops"):
        t.add_column(col, justify="left" if col in ("tenant", "drops") else "right")
    for name, f in m["tenants"].items():
        lat = f["latency_ns"]
        drops = ", ".join(f"{r} {n}" for r, n in f["drops"].items()) or "0"
        t.add_row(name, f"{f['offered_gbps']:.3f}", f"{f['throughput_gbps']:.3f}", f"{f['throughput_mpps']:.3f}",
                  f"{lat['p50'] / 1e3:.1f}", f"{lat['p99'] / 1e3:.1f}", drops)
    return t


def resources_table(m: dict) -> Table:
    t = Table(title="resources")
    for col in ("device / link", "cores used", "energy J", "PCIe a→b Gb/s", "PCIe b→a Gb/s"):
        t.add_column(col, justify="left" if col == "device / link" else "right")
    for name, d in m["devices"].items():
        t.add_row(name, f"{d['cores_used']:.2f} / {d['cores']}", f"{d['energy_j']:.2f}", "", "")
    for name, ln in m["pcie"].items():
        t.add_row(f"{name} ({ln['a']}→{ln['b']})", "", "", f"{ln['a_to_b_gbps']:.3f}", f"{ln['b_to_a_gbps']:.3f}")
    return t


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_cmd(
        scenario: Path = typer.Argument(..., help="Scenario YAML file."),
        out: Path = typer.Option(..., "--out", help="Directory for metrics.json (and pcap/)."),
        duration: Optional[str] = typer.Option(None, "--duration", help="Simulated time, e.g. 1s or 200ms (default: the scenario's run.duration)."),
        seed: Optional[int] = typer.Option(None, "--seed", min=0, max=2**64 - 1, help="Random seed, 0..2^64-1 (default: the scenario's run.seed)."),
        pcap: bool = typer.Option(False, "--pcap", help="Capture every sNIC Ethernet port and VM port to pcap."),
        place: Optional[list[str]] = typer.Option(None, "--place", help="Pin NF on DEVICE: NF=DEVICE (repeatable; the engine places the others)."),
        placement_mode: Optional[str] = typer.Option(None, "--placement", help="Placement engine: uno | smartchain | pinned (default: the scenario's run.placement)."),
        switching: str = typer.Option("rules", "--switching", help="rules (dp-core pipelines, OneSwitch-translated rules) | portmap (the named fast path)."),
        pcap_snaplen: int = typer.Option(65535, "--pcap-snaplen", min=14, max=65535, help="With --pcap: keep only the first N bytes of each frame."),
        pcap_limit: Optional[str] = typer.Option(None, "--pcap-limit", help="With --pcap: largest size of each pcap file (e.g. 100MB); later frames are counted, not written."),
    ) -> None:
        """Run a scenario in the built-in emulator; write metrics.json and print a summary."""
        from tandem.emu.machine import EmuError
        from tandem.emu.run import run_scenario
        from tandem.model.load import ScenarioError, ScenarioFileError, load_scenario

        secs = _duration(duration)
        limit = _size(pcap_limit, "--pcap-limit")
        try:
            sc = load_scenario(scenario)
        except ScenarioFileError as e:
            err_console.print(str(e))
            raise typer.Exit(2)
        except ScenarioError as e:
            err_console.print(str(e))
            raise typer.Exit(2)
        placement = _placement(place or [], sc)
        from tandem.placement.from_scenario import MODES, DecisionError, decide, explain

        if placement_mode is not None and placement_mode not in MODES:
            raise typer.BadParameter(f"{placement_mode!r}: choose one of {', '.join(MODES)}", param_hint="--placement")
        if switching not in ("rules", "portmap"):
            raise typer.BadParameter(f"{switching!r}: choose rules or portmap", param_hint="--switching")
        try:
            decision = decide(sc, placement_mode, placement)
        except DecisionError as e:
            err_console.print(f"{scenario}: cannot place: {e} (set run.placement: pinned, or --placement pinned)")
            raise typer.Exit(1)
        for line in explain(sc, decision):
            console.print(line, markup=False, highlight=False)
        total = secs if secs is not None else sc.run.duration
        if pcap:
            from tandem.emu.run import estimate_pcap_bytes

            files = 2 * (sum(len(d.ports) for d in sc.devices.values() if d.kind == "snic")
                         + sum(len(i.ports) for i in sc.instances.values() if i.kind == "vm"))
            est = estimate_pcap_bytes(sc, total, snaplen=pcap_snaplen, limit=limit, files=files)
            if est > PCAP_WARN_BYTES:
                err_console.print(f"warning: --pcap will write about {_human_bytes(est)} to {out / 'pcap'} for {total:g} s simulated;"
                                  " cut it with --pcap-snaplen 128 and/or --pcap-limit 100MB, or a shorter --duration")
        runner = dict(duration=secs, seed=seed, pcap=pcap, decision=decision, switching=switching,
                      pcap_snaplen=pcap_snaplen, pcap_limit=limit, wall_step_s=WALL_STEP_S)
        try:
            if err_console.is_terminal:
                with Progress(TextColumn("[bold]emulating"), BarColumn(), TextColumn("{task.fields[done]}"),
                              TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                              console=err_console, transient=True) as bar:
                    task = bar.add_task("run", total=total, done="")
                    m = run_scenario(sc, out, **runner,
                                     progress=lambda s: bar.update(task, completed=s, done=f"{s:.6g}/{total:g} s simulated"))
            else:
                m = run_scenario(sc, out, **runner, progress=_Ticker(total))
        except EmuError as e:
            err_console.print(f"{scenario}: cannot emulate: {e}")
            raise typer.Exit(2)
        except OSError as e:  # the output directory cannot be written (README "Exit codes": 3)
            err_console.print(f"error: {e}")
            raise typer.Exit(3)
        console.print(summary_table(m))
        if m.get("tenants"):
            console.print(tenants_table(m))
        console.print(resources_table(m))
        console.print(f"switching: {switching}" + (" (dp-core OpenFlow pipelines on every device, rules translated"
                                                   " by OneSwitch for this placement)" if switching == "rules" else
                                                   " (fixed port maps, the fast path)"))
        if any(m.get("nf_counters", {}).values()):
            console.print(nf_counters_table(m))
        if m.get("migrations"):
            console.print(migrations_table(m))
        for name, f in m["flows"].items():
            if "requested_gbps" in f:
                shared = f" ({f['port_requested_gbps']:.4g} Gb/s with the port's other sources)" if "port_requested_gbps" in f else ""
                console.print(f"{name}: offered {f['requested_gbps']:.4g} Gb/s{shared}, its ingress port carries {f['port_gbps']:.4g} Gb/s"
                              f" (sent {f['offered_gbps']:.4g}); {f['dropped_over_line_rate']} packets over the line rate counted as drops")
        if m["drops"]:
            console.print("drops: " + ", ".join(f"{k} {v}" for k, v in sorted(m["drops"].items())))
        if m.get("pcap_frames_skipped"):
            console.print(f"pcap: {m['pcap_frames_skipped']} frames not written (files reached --pcap-limit)")
        console.print(f"wrote {out / 'metrics.json'}" + (f" and {out / 'pcap'}/" if pcap else ""))
        if m.get("partial"):
            err_console.print(f"interrupted: {m['duration_s']:.6g} of {m['requested_duration_s']:g} s simulated;"
                              f" {out / 'metrics.json'} holds these partial results (\"partial\": true)")
            _exit_at_once(130)
