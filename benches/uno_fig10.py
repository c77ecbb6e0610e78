"""UNO Fig. 10 analogue: host cores for the SD-WAN chain at 1-10 Gbps (10K UDP flows),
host only vs with the agent offloading to the sNIC, in the emulator.

    tandem bench uno_fig10 [-- --out DIR] [--quick] [--seed 1]

Writes DIR/data.csv and DIR/figure.png (default benches/results/uno_fig10/).
The 4 Gbps points are calibrated (the cost profiles were solved from them); the rest
are predictions.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from tandem.experiments import uno_fig10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "uno_fig10")
    ap.add_argument("--quick", action="store_true", help="1, 4 and 10 Gbps only, shorter runs")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t = time.perf_counter()
    r = uno_fig10.run(a.out, quick=a.quick, seed=a.seed)
    took = time.perf_counter() - t
    print(f"{'Gbps':>4s} {'host-only x86':>13s} {'(busy)':>7s} {'agent x86':>9s} {'agent sNIC':>10s} "
          f"{'(busy)':>7s} {'delivered':>9s} {'saved':>5s}  label       agent placement")
    for row in r["rows"]:
        saved = "-" if row["host_cores_saved"] is None else str(row["host_cores_saved"])
        print(f"{row['gbps']:4.0f} {row['host_only_host_cores']!s:>13s} {row['host_only_host_cores_used']:7.2f} "
              f"{row['agent_host_cores']!s:>9s} {row['agent_snic_cores']:10d} {row['agent_snic_cores_used']:7.2f} "
              f"{row['agent_delivered_gbps']:9.3f} {saved:>5s}  {row['label']:11s} {row['agent_placement']}"
              + ("" if row["agent_carries"] else f"  (sNIC misses the load: {row['agent_steady_delivered_pct']:.1f} %"
                                                 f" delivered in steady state; drops {row['agent_drops'] or 'none'})"))
    print(f"\nUNO §5.1 at 4 Gbps: {r['uno_4gbps']['host_only_host_cores']} x86 cores host only, "
          f"{r['uno_4gbps']['agent_snic_cores']} TILE-Gx cores offloaded (both calibrated on)")
    print(f"most host cores saved where the sNIC carries the load: {r['max_host_cores_saved']}")
    print(f"wall {took:.1f} s; load {os.getloadavg()[0]:.2f}")
    print(f"wrote {r['csv']}" + (f" and {r['png']}" if r["png"] else " (matplotlib missing: no PNG)"))


if __name__ == "__main__":
    main()
