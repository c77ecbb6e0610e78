"""SmartChain Fig. 9(b): placement time for several graphs on several servers.

Usage: tandem bench smartchain_scale -- [--seeds 5] [--runs 3] [--ilp-time-limit 60]
       [--grid 1x1,5x5,10x1,10x10] [--throughput-mbps 100]
Each graph is topology 2 ("two_branch", 8 elements, 10 random action
dependencies); every server has a whole sNIC and CPU. For each grid point
prints the median / max wall time (analysis + solve) over seeds x runs of:
  decomposition — per-graph Pareto enumeration + assignment MILP (exact),
  ilp           — Fig. 6 extended to servers (HiGHS, time limit capped),
  enumeration   — per-graph enumeration + branch and bound (exact, no ILP),
and checks that all three report the same optimum. The paper reports ~1 s
for 10 graphs x 10 servers (MATLAB intlinprog).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from tandem.placement.smartchain.engine import solve
from tandem.placement.smartchain.sim import scale_instance


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ilp-time-limit", type=float, default=60.0)
    ap.add_argument("--grid", default="1x1,1x10,5x5,10x1,10x10")
    ap.add_argument("--throughput-mbps", type=float, default=100.0)
    ap.add_argument("--methods", default="decomposition,ilp,enumeration")
    a = ap.parse_args()
    methods = a.methods.split(",")
    print(f"# SmartChain scalability — theta_est {a.throughput_mbps:g} Mbps, {a.seeds} instances x {a.runs} runs, "
          f"ILP time limit {a.ilp_time_limit:g} s\n")
    print("| graphs x servers | " + " | ".join(f"{m} median / max (s)" for m in methods) + " | same optimum |")
    print("|---|" + "---|" * len(methods) + "---|")
    ok_all = True
    for point in a.grid.split(","):
        g, s = (int(v) for v in point.split("x"))
        times = {m: [] for m in methods}
        same = True
        for seed in range(a.seeds):
            p = scale_instance(g, s, seed, throughput_mbps=a.throughput_mbps)
            objs = {}
            for m in methods:
                for _ in range(a.runs):
                    t0 = time.perf_counter()
                    r = solve(p, m, a.ilp_time_limit if m == "ilp" else None)
                    times[m].append(time.perf_counter() - t0)
                objs[m] = (r.objective, r.status)
            vals = {round(v[0], 6) for v in objs.values() if v[1] == "optimal"}
            same &= len(vals) == 1
            if any(v[1] != "optimal" for v in objs.values()):
                print(f"  note: {p.name}: " + ", ".join(f"{m} {v[1]}" for m, v in objs.items()), file=sys.stderr)
        ok_all &= same
        cells = " | ".join(f"{statistics.median(times[m]):.4f} / {max(times[m]):.4f}" for m in methods)
        print(f"| {g} x {s} | {cells} | {'yes' if same else 'NO'} |")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
