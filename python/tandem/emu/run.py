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
                 switching: str = "rules", decision=None) -> dict:
    """``placement``: NF=DEV pins (``--place``); ``mode``: the placement engine
    (default ``run.placement``); ``decision``: an already taken ``Decision``
    (then neither is consulted). metrics.json gets the decision under ``decision``."""
    from tandem.placement.from_scenario import decide

    duration = sc.run.duration if duration is None else duration
    seed = sc.run.seed if seed is None else seed
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    decision = decision or decide(sc, mode, placement)
    m, b = build_from_scenario(sc, seed=seed, placement=decision.placement, switching=switching)
    if pcap:
        pdir = out_dir / "pcap"
        pdir.mkdir(exist_ok=True)
        for name, (dev, port) in sorted({**b.eth_ports, **b.vm_ports}.items()):
            m.capture(dev, port, str(pdir / f"{name}.pcap"))  # what leaves through the port
            m.capture(dev, port, str(pdir / f"{name}.in.pcap"), rx=True)  # what comes in through it
    metrics = m.run(duration, chunks=CHUNKS if progress else 1, progress=progress)
    result = {
        "scenario": sc.name,
        "seed": seed,
        "duration_s": duration,
        "placement": dict(sorted(b.placement.items())),
        "decision": decision.as_json(),
        "switching": switching,
        **{k: v for k, v in metrics.items() if k not in ("seed", "duration_s")},
    }
    result["nf_counters"] = m.nf_counters()
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
    (out_dir / "metrics.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
