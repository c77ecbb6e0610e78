"""Run a scenario in the emulator and write its results.

Input: a Scenario, duration/seed overrides, an output directory, whether to
capture pcaps, the placement engine (``run.placement`` unless overridden)
and the switching (rule-driven by default). Output: ``DIR/metrics.json`` (the emulator's metrics plus the
scenario name, placement and run settings; byte-identical for the same
scenario + seed; with tenants, an ``isolation`` entry says whether FairNIC
isolation was on, each NF's tenant, the cores it was confined to and the
cache model's hit ratios) and, on request, for every sNIC Ethernet port and
VM port ``DIR/pcap/<port>.pcap`` (frames sent out of it) and
``<port>.in.pcap`` (frames that came in through it). Returns the metrics
dict. The progress callback gets the simulated seconds done.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Optional

from tandem.emu.scenario import build_from_scenario

CHUNKS = 20


def _ranges(cores: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, i = [], 0
    while i < len(cores):
        j = i
        while j + 1 < len(cores) and cores[j + 1] == cores[j] + 1:
            j += 1
        out.append(str(cores[i]) if i == j else f"{cores[i]}-{cores[j]}")
        i = j + 1
    return ",".join(out)


def run_scenario(sc, out_dir: Path, *, duration: Optional[float] = None, seed: Optional[int] = None,
                 pcap: bool = False, placement: Optional[dict[str, str]] = None,
                 progress: Optional[Callable[[float], None]] = None, mode: Optional[str] = None,
                 switching: str = "rules", decision=None,
                 pcap_snaplen: int = 65535, pcap_limit: Optional[int] = None,
                 wall_step_s: Optional[float] = None) -> dict:
    """``placement``: NF=DEV pins (``--place``); ``mode``: the placement engine
    (default ``run.placement``); ``decision``: an already taken ``Decision``
    (then neither is consulted). metrics.json gets the decision under ``decision``.
    ``wall_step_s``: advance the emulator in slices of about this much wall time, so
    Ctrl-C is seen between slices (the results are identical)."""
    from tandem.placement.from_scenario import decide

    duration = sc.run.duration if duration is None else duration
    seed = sc.run.seed if seed is None else seed
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    decision = decision or decide(sc, mode, placement)
    m, b = build_from_scenario(sc, seed=seed, placement=decision.placement, switching=switching,
                               migratable=bool(sc.migrations) or sc.run.agent is not None)
    placed = dict(sorted(b.placement.items()))  # where the run starts (moves change b.placement)
    for mv in sorted(sc.migrations, key=lambda mv: mv.at):
        if mv.at < duration:  # a --duration shorter than the scenario's drops later moves
            m.migrate(mv.nf, mv.to, mv.at)
    if pcap:
        pdir = out_dir / "pcap"
        pdir.mkdir(exist_ok=True)
        for name, (dev, port) in sorted({**b.eth_ports, **b.vm_ports}.items()):
            lim = {"snaplen": pcap_snaplen, "limit_bytes": pcap_limit}
            m.capture(dev, port, str(pdir / f"{name}.pcap"), **lim)  # what leaves through the port
            m.capture(dev, port, str(pdir / f"{name}.in.pcap"), rx=True, **lim)  # what comes in through it
    agent = _run_agent(sc, m, b.placement, duration, decision.pinned) if sc.run.agent is not None else None
    metrics = m.run(duration, chunks=CHUNKS if progress else 1, progress=progress, wall_step_s=wall_step_s)
    result = finish_result(sc, m, b, metrics, decision=decision, seed=seed, duration=duration,
                           switching=switching, placed=placed, agent=agent, pcap=pcap)
    (out_dir / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


def finish_result(sc, m, b, metrics: dict, *, decision, seed: int, duration: float, switching: str,
                  placed: dict, agent: Optional[dict] = None, pcap: bool = False) -> dict:
    """The metrics.json dict of a finished (or interrupted) run of machine `m` built as `b`."""
    partial = {}
    if m.interrupted:  # Ctrl-C: what was measured so far, marked partial
        partial = {"partial": True, "requested_duration_s": duration}
        duration = metrics.get("duration_s", duration)
    result = {
        "scenario": sc.name,
        "seed": seed,
        "duration_s": duration,
        **partial,
        "placement": placed,
        "decision": decision.as_json(),
        "switching": switching,
        **{k: v for k, v in metrics.items() if k not in ("seed", "duration_s")},
    }
    result["nf_counters"] = m.nf_counters()
    if agent is not None:
        result["agent"] = agent
    if sc.tenants:
        result["isolation"] = {
            "enabled": sc.run.isolation,
            "nf_tenant": dict(sorted(b.nf_tenant.items())),
            "nf_cores": {nf: _ranges(c) for nf, c in sorted(b.nf_cores.items())},
        }
        if b.cache:
            result["isolation"]["cache"] = {
                t: {dev: {"hit_ratio": hit, "added_ns_per_packet": extra * 1e9} for dev, (hit, extra) in sorted(per.items())}
                for t, per in sorted(b.cache.items())}
    _count_over_line_rate(sc, result)
    if pcap and m.capture_skipped():
        result["pcap_frames_skipped"] = m.capture_skipped()  # past --pcap-limit
    return result


def _run_agent(sc, m, placement: dict, duration: float, pins: Optional[dict] = None) -> dict:
    """``run.agent``: the agent loop re-places NFs every period before the run ends
    (tandem.agent.emu_loop) and migrates them with ``Machine.migrate``."""
    from tandem.agent.emu_loop import run_agent

    return run_agent(sc, m, placement, duration, pins=pins)


def estimate_pcap_bytes(sc, duration: float, *, snaplen: int = 65535, limit: Optional[int] = None,
                        files: Optional[int] = None) -> int:
    """Rough size of the pcap files of a `--pcap` run: each offered packet is written about
    twice (into the sNIC port it enters, out of the VM port it reaches), 16 bytes of record
    header plus up to `snaplen` bytes of frame. Line rates are not applied (an upper bound);
    with a per-file `limit` and a count of `files`, never more than their product."""
    total = 0.0
    for src in sc.traffic.values():
        pps = src.offered_pps()
        if src.pattern == "onoff" and src.on_time and src.off_time is not None:
            pps *= src.on_time / (src.on_time + src.off_time)
        frame = min(snaplen, src.mean_packet_size())
        total += 2 * pps * max(0.0, duration - src.start) * (16 + frame)
    if limit is not None and files:
        total = min(total, limit * files)
    return int(total)


def _count_over_line_rate(sc, result: dict) -> None:
    """Sources offering more than their ingress port carries (alone or together) are
    sent at no more than its line rate in all by the emulator; what each offered
    beyond what it sent is counted here as drops (``over_line_rate``), and the flow
    says what was offered (``requested_gbps``, and ``port_requested_gbps`` for all
    the port's sources when several share it) and what the port carries."""
    from tandem.model.advice import duty, over_line_rate

    for o in over_line_rate(sc):
        f = result["flows"].get(o.source)
        if f is None:
            continue
        src = sc.traffic[o.source]
        active = max(0.0, result["duration_s"] - src.start)
        asked = src.scheduled_packets(active) if src.pattern == "ramp" else src.offered_pps() * duty(src) * active
        excess = max(0, round(asked) - f["tx_packets"])
        f["requested_gbps"] = o.offered_bps / 1e9
        f["port_gbps"] = o.line_bps / 1e9
        if o.sharing:
            f["port_requested_gbps"] = o.port_offered_bps / 1e9
        f["dropped_over_line_rate"] = excess
        f["dropped"] += excess
        result["drops"]["over_line_rate"] = result["drops"].get("over_line_rate", 0) + excess
