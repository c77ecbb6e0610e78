"""UNO Fig. 13 analogue: moving the L7FW (with its per-flow state) host -> sNIC while
1.2 Gb/s of SD-WAN ESP traffic flows through SECGW -> L7FW, at 250/500/750/1,000 flows.

    tandem bench migration [--out DIR] [--quick]

Prints, per flow count: the move's modelled time (start -> buffer released), the
drain and state-transfer parts, the state bytes, the packets buffered, the added
latency of the buffered packets (modelled p50/p99/max), lost/duplicated/reordered,
and the wall time of the real state export + import (median of 3 runs). UNO's
PRADS figures (1.4 MB @ 750 flows, 1.6 MB @ 1,000; +40-50 ms average latency while
buffering) are printed beside them as the prediction to compare with. Goals:
p99 added latency <= 1 ms (modelled) and export + import <= 5 ms wall at 1,000 flows.
The experiment logic is tandem.experiments.uno_fig13 (writes DIR/data.csv).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tandem.experiments import uno_fig13


def main() -> int:
    ap = argparse.ArgumentParser(prog="tandem bench migration")
    ap.add_argument("--out", type=Path, default=Path("out/migration"))
    ap.add_argument("--quick", action="store_true", help="one run per point, shorter traces")
    a = ap.parse_args()
    res = uno_fig13.run(a.out, quick=a.quick)
    load = os.getloadavg()
    print(f"machine load (1/5/15 min): {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; cores: {os.cpu_count()}")
    hdr = (f"{'flows':>5} {'lanes':>5} {'move ms':>8} {'drain us':>8} {'xfer us':>8} {'state B':>9} {'buffered':>8}"
           f" {'add mean us':>11} {'add p50 us':>10} {'add p99 us':>10} {'add max us':>10} {'lost/dup/reo':>12} {'exp+imp wall ms':>15}")
    print(hdr)
    for r in res["rows"]:
        ldr = f"{r['lost']}/{r['duplicated']}/{r['reordered']}"
        print(f"{r['flows']:>5} {r['lanes']:>5} {r['migration_ms']:>8.3f} {r['drain_ms'] * 1e3:>8.1f} {r['transfer_us']:>8.1f}"
              f" {r['state_bytes']:>9} {r['buffered']:>8} {r['added_mean_us']:>11.1f} {r['added_p50_us']:>10.1f} {r['added_p99_us']:>10.1f}"
              f" {r['added_max_us']:>10.1f} {ldr:>12}"
              f" {r['export_import_wall_ms']:>15.3f}")
    u = res["uno"]
    print(f"UNO §5.2 (PRADS, predicted comparison): state {u['state_bytes_750'] / 1e6:.1f} MB @ 750 flows, "
          f"{u['state_bytes_1000'] / 1e6:.1f} MB @ 1,000; +{u['added_latency_ms'][0]}-{u['added_latency_ms'][1]} ms"
          " average per-packet latency during migration")
    top = next(r for r in res["rows"] if r["flows"] == 1000 and r["lanes"] == 8)
    ok_lat = top["added_p99_us"] <= 1000.0
    ok_wall = top["export_import_wall_ms"] <= 5.0
    print(f"goal p99 added latency <= 1 ms at 1,000 flows: {top['added_p99_us'] / 1e3:.3f} ms -> {'met' if ok_lat else 'NOT met'}")
    print(f"goal export + import <= 5 ms wall at 1,000 flows: {top['export_import_wall_ms']:.3f} ms -> {'met' if ok_wall else 'NOT met'}")
    print(f"data: {res['csv']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
