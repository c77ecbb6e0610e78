"""The `make demo` story: the SD-WAN chain's load ramps, the NF agent places and moves it.

Input: a scenario with ``run.agent`` (default ``examples/demo-sdwan-ramp.yaml``: ESP
traffic from four branch tunnels ramping from 1 to 10 Gbps in 100 ms steps) and an
output directory. It takes UNO's
starting decision (printed with the engine's reasons), builds the emulated machine
(rule-driven, migratable) and runs the agent loop over it (``agent.emu_loop``). Every
agent period a live rich table shows the time, offered and delivered Gb/s, where each NF
runs, host and sNIC cores busy in that period, PCIe Gb/s, the agent's verdict and the
migrations so far. Delivered is what reaches the VM: with a SECGW in the chain, the
decrypted inner packets (ESP's outer header, IV, trailer and ICV removed). After the run
it prints what the real NFs did (``nf_counters``: frames decrypted and refused by the
SECGW, applications the L7FW detected). It writes ``metrics.json`` (as ``tandem run``), a
``timeline.csv`` (one row per period), ``timeline.png`` and a self-contained
``report.html`` (images inlined), and returns the report's path.
State: none beyond the run. Cost: one emulated run of the scenario (a few seconds).
"""

from __future__ import annotations

import base64
import csv
import html
import json
from pathlib import Path
from typing import Optional

from rich.console import Console
from rich.live import Live
from rich.table import Table

COLUMNS = ("time_ms", "offered_gbps", "delivered_gbps", "placement", "host_cores", "snic_cores", "pcie_gbps",
           "decision", "migrations")


class _Meter:
    """Per-period figures from two cumulative metrics snapshots."""

    def __init__(self, sc) -> None:
        self.sc, self.prev = sc, None

    def period(self, met: dict) -> dict:
        t = float(met.get("duration_s") or 0.0)
        flows = met.get("flows", {})
        cur = {
            "t": t,
            "tx_bits": sum(f.get("tx_bytes", 0) for f in flows.values()) * 8,
            "rx_bits": sum(f.get("rx_bytes", 0) for f in flows.values()) * 8,
            "busy": {d: v.get("busy_core_s", 0.0) for d, v in met.get("devices", {}).items()},
            "pcie_bits": sum(v.get("total_gbps", 0.0) for v in met.get("pcie", {}).values()) * 1e9 * t,
        }
        prev, self.prev = self.prev or {"t": 0.0, "tx_bits": 0, "rx_bits": 0, "busy": {}, "pcie_bits": 0.0}, cur
        dt = max(cur["t"] - prev["t"], 1e-12)
        busy = {d: (b - prev["busy"].get(d, 0.0)) / dt for d, b in cur["busy"].items()}
        return {"time_ms": round(t * 1e3, 3),
                "offered_gbps": round((cur["tx_bits"] - prev["tx_bits"]) / dt / 1e9, 3),
                "delivered_gbps": round((cur["rx_bits"] - prev["rx_bits"]) / dt / 1e9, 3),
                "host_cores": round(busy.get(self.sc.host_id, 0.0), 2),
                "snic_cores": round(sum(v for d, v in busy.items() if d != self.sc.host_id), 2),
                "pcie_gbps": round((cur["pcie_bits"] - prev["pcie_bits"]) / dt / 1e9, 3)}


def _table(rows: list[dict], title: str) -> Table:
    t = Table(title=title, title_justify="left")
    for c, j in (("ms", "right"), ("offered Gb/s", "right"), ("delivered Gb/s", "right"), ("placement", "left"),
                 ("host cores", "right"), ("sNIC cores", "right"), ("PCIe Gb/s", "right"), ("agent", "left")):
        t.add_column(c, justify=j)
    for r in rows[-14:]:
        t.add_row(f"{r['time_ms']:.0f}", f"{r['offered_gbps']:.2f}", f"{r['delivered_gbps']:.2f}", r["placement"],
                  f"{r['host_cores']:.2f}", f"{r['snic_cores']:.2f}", f"{r['pcie_gbps']:.2f}", r["decision"])
    return t


def _plot(rows: list[dict], migs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [r["time_ms"] for r in rows]
    fig, (a, b) = plt.subplots(2, 1, figsize=(7, 5.6), sharex=True)
    a.plot(t, [r["offered_gbps"] for r in rows], "o-", ms=3, label="offered")
    a.plot(t, [r["delivered_gbps"] for r in rows], "s--", ms=3, label="delivered to the VM (after the SECGW's decap)")
    a.plot(t, [r["pcie_gbps"] for r in rows], ":", label="PCIe")
    a.set(ylabel="Gb/s", title="SD-WAN (SECGW → L7FW) as the load ramps; NF agent on, emulated")
    b.plot(t, [r["host_cores"] for r in rows], "o-", ms=3, label="host (x86) cores busy")
    b.plot(t, [r["snic_cores"] for r in rows], "^-", ms=3, label="sNIC cores busy")
    b.set(xlabel="simulated time (ms)", ylabel="cores")
    for ax in (a, b):
        for m in migs:
            ax.axvline(m["start_s"] * 1e3, color="red", lw=1, alpha=0.6)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if migs:
        b.text(migs[0]["start_s"] * 1e3, b.get_ylim()[1] * 0.9, " migration", color="red", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def nf_lines(result: dict) -> list[str]:
    """One line per real NF of the run: what the SECGW decrypted and refused, what the L7FW found."""
    out = []
    for nf, c in sorted((result.get("nf_counters") or {}).items()):
        if "decrypted" in c:
            refused = {k: v for k, v in c.items() if k not in ("packets", "decrypted", "encrypted") and v}
            out.append(f"{nf} (SECGW): {c['decrypted']:,} ESP frames decrypted and authenticated; refused: "
                       + (", ".join(f"{k} {v:,}" for k, v in sorted(refused.items())) or "none")
                       + f" (auth_failed {c.get('auth_failed', 0)}, replayed {c.get('replayed', 0)})")
        elif "detected_http" in c:
            out.append(f"{nf} (L7FW): {c['packets']:,} packets; flows identified: HTTP {c['detected_http']:,}, "
                       f"TLS {c['detected_tls']:,}, DNS {c.get('detected_dns', 0):,}, unidentified {c.get('undetected', 0):,}; "
                       f"blocked {c.get('blocked', 0):,}")
    return out


def _report(path: Path, sc, why: list[str], rows: list[dict], result: dict, png: Path) -> None:
    img = base64.b64encode(png.read_bytes()).decode()
    e = html.escape
    mig_rows = "".join(
        f"<tr><td>{e(m['nf'])}</td><td>{e(m['from'])} → {e(m['to'])}</td><td>{m['start_s'] * 1e3:.1f}</td>"
        f"<td>{(m['end_s'] - m['start_s']) * 1e6:.1f}</td><td>{m['state_bytes']}</td><td>{m['buffered_packets']}</td>"
        f"<td>{m['added_latency_ns']['p99'] / 1e3:.1f}</td><td>{m['lost']}/{m['duplicated']}/{m['reordered']}</td></tr>"
        for m in result.get("migrations", []))
    steps = "".join(f"<tr>{''.join(f'<td>{e(str(r[c]))}</td>' for c in COLUMNS)}</tr>" for r in rows)
    drops = ", ".join(f"{k} {v}" for k, v in sorted(result.get("drops", {}).items())) or "none"
    path.write_text(f"""<!doctype html><html><head><meta charset="utf-8"><title>Tandem demo: {e(sc.name)}</title>
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}</style></head><body>
<h1>Tandem demo: {e(sc.name)}</h1><p>{e(sc.description or '')}</p>
<h2>Starting placement (UNO engine)</h2><ul>{''.join(f'<li>{e(w)}</li>' for w in why)}</ul>
<h2>Timeline</h2><img alt="timeline" src="data:image/png;base64,{img}">
<h2>Migrations</h2><table><tr><th>NF</th><th>move</th><th>start ms</th><th>took µs</th><th>state bytes</th>
<th>buffered packets</th><th>added p99 µs</th><th>lost/dup/reordered</th></tr>{mig_rows}</table>
<p>Final placement: {e(json.dumps(result.get('agent', {}).get('final_placement', {})))}. Drops in the run: {e(drops)}.</p>
<h2>What the NFs did</h2><ul>{''.join(f'<li>{e(x)}</li>' for x in nf_lines(result)) or '<li>no NF counters (cost-model NFs)</li>'}</ul>
<h2>Every agent period</h2><table><tr>{''.join(f'<th>{c}</th>' for c in COLUMNS)}</tr>{steps}</table>
</body></html>
""")


def run_demo(scenario: Path, out_dir: Path, *, console: Optional[Console] = None, live: bool = True) -> Path:
    from tandem.agent.emu_loop import run_agent
    from tandem.emu.run import finish_result
    from tandem.emu.scenario import build_from_scenario
    from tandem.errors import INPUT, TandemError
    from tandem.model.load import load_scenario
    from tandem.placement.from_scenario import decide, explain

    console = console or Console()
    sc = load_scenario(str(scenario))
    if sc.run.agent is None:
        raise TandemError(f"{scenario}: the demo needs run.agent (the NF agent's settings)", INPUT)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    decision = decide(sc)
    why = list(explain(sc, decision))
    console.print(f"[bold]{sc.name}[/bold]: {sc.description or ''}")
    for line in why:
        console.print(f"  {line}")
    m, b = build_from_scenario(sc, seed=sc.run.seed, placement=decision.placement, switching="rules",
                               migratable=True)
    duration = sc.run.duration
    m.emu.set_horizon(duration * 1e9)
    meter, rows = _Meter(sc), []
    where = dict(decision.placement)
    moves: list[str] = []
    title = "NF agent: every period (simulated time)"
    view = Live(_table(rows, title), console=console, refresh_per_second=8, transient=False) if live else None

    def on_step(rec: dict) -> None:
        for mv in rec.get("moves", []):
            where[mv["nf"]] = mv["to"]
            moves.append(f"{mv['nf']}→{mv['to']}@{rec['time_s'] * 1e3:.0f}ms")
        row = meter.period(m.metrics())
        row.update(placement=" ".join(f"{n}@{d}" for n, d in sorted(where.items())),
                   decision=("move " + ", ".join(f"{x['nf']}→{x['to']}" for x in rec["moves"])) if rec.get("moves")
                   else rec.get("reason", "")[:60],
                   migrations=len(moves))
        rows.append(row)
        if view is not None:
            view.update(_table(rows, title))

    if view is not None:
        view.start()
    try:
        agent = run_agent(sc, m, b.placement, duration, pins=decision.pinned, on_step=on_step)
        metrics = m.run(duration)
    finally:
        if view is not None:
            view.stop()
    result = finish_result(sc, m, b, metrics, decision=decision, seed=sc.run.seed, duration=duration,
                           switching="rules", placed=dict(sorted(decision.placement.items())), agent=agent)
    (out_dir / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    with (out_dir / "timeline.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(rows)
    png = out_dir / "timeline.png"
    _plot(rows, result.get("migrations", []), png)
    report = out_dir / "report.html"
    _report(report, sc, why, rows, result, png)
    migs = result.get("migrations", [])
    lost = sum(x["lost"] + x["duplicated"] + x["reordered"] for x in migs)
    console.print(f"migrations: {len(migs)} ({', '.join(moves) or 'none'}); lost/duplicated/reordered in moves: {lost}")
    for line in nf_lines(result):
        console.print(line)
    drops = result.get("drops", {})
    if drops:
        console.print("drops in the run (not from migrations): "
                      + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())))
        if "accelerator_queue_full" in drops:
            console.print("  the sNIC's crypto engine is saturated: UNO keeps an NF that uses an sNIC accelerator "
                          "on that sNIC (§3.2.1), so the chain is crypto-bound above the engine's rate; flows whose "
                          "first packets it dropped stay unidentified by an L7FW")
    console.print(f"report: {report}")
    return report
