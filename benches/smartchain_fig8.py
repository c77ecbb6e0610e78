"""SmartChain Fig. 8: latency benefit of SmartChain vs the two strawmen on the
three Fig. 7 topologies with 5-20 random action dependencies.

Usage: tandem bench smartchain_fig8 -- [--reps 1000] [--throughput-mbps 1000]
       [--deps 5,6,...,20] [--ilp-check 5]
Prints a markdown table per topology: mean benefit (us) of SmartChain as in
the paper (K = 1 round trip), SmartChain with enough round trips (K = n/2),
sequential and suitability-greedy; the mean gain over each strawman (paired
over instances where both are feasible); and how many instances SmartChain
loses (must be 0 for K = n/2). `--ilp-check N` also solves the first N
repetitions of every point with the ILP and stops if it disagrees with the
enumeration solver used for speed.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from tandem.placement.smartchain.engine import solve
from tandem.placement.smartchain.sim import TOPOLOGIES, compare, fig8_instance


def gain(a: list[float | None], b: list[float | None]) -> tuple[float, int]:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    if not pairs:
        return float("nan"), 0
    xa, ya = np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs])
    return (xa - ya) / abs(ya) * 100.0, len(pairs)


def losses(a: list[float | None], b: list[float | None]) -> int:
    return sum(1 for x, y in zip(a, b) if y is not None and (x is None or x < y - 1e-9))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--throughput-mbps", type=float, default=1000.0)
    ap.add_argument("--deps", default=",".join(str(d) for d in range(5, 21)))
    ap.add_argument("--ilp-check", type=int, default=5)
    a = ap.parse_args()
    deps_list = [int(x) for x in a.deps.split(",")]
    t0 = time.perf_counter()
    print(f"# SmartChain Fig. 8 — {a.reps} repetitions per point, theta_est = {a.throughput_mbps:g} Mbps, "
          f"t_trans = 26 us\n")
    summary = {"seq": [], "greedy": [], "k1_lost_greedy": 0, "k_lost": 0, "instances": 0}
    for topo in TOPOLOGIES:
        print(f"## {topo} ({TOPOLOGIES[topo][1]} elements)\n")
        print("| action deps | SmartChain K=1 | SmartChain K=n/2 | sequential | greedy | gain vs seq | gain vs greedy "
              "| K=1 < greedy | K=n/2 < any | infeasible K=1 / seq / greedy |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for d in deps_list:
            rows = {k: [] for k in ("smartchain", "smartchain_k", "sequential", "greedy")}
            for seed in range(a.reps):
                p = fig8_instance(topo, d, seed, a.throughput_mbps)
                r = compare(p)
                for k in rows:
                    rows[k].append(r[k])
                if seed < a.ilp_check and r["smartchain"] is not None:
                    ilp = solve(p, "ilp").objective
                    if abs(ilp - r["smartchain"]) > 1e-6:
                        print(f"ILP {ilp} != enumeration {r['smartchain']} on {p.name}", file=sys.stderr)
                        return 1
            sc, sck = rows["smartchain"], rows["smartchain_k"]
            g_seq, _ = gain(sck, rows["sequential"])
            g_gr, _ = gain(sck, rows["greedy"])
            lost_k = losses(sck, rows["sequential"]) + losses(sck, rows["greedy"])
            lost_1 = losses(sc, rows["greedy"])
            summary["seq"].append(g_seq)
            summary["greedy"].append(g_gr)
            summary["k1_lost_greedy"] += lost_1
            summary["k_lost"] += lost_k
            summary["instances"] += a.reps

            def mean(v: list[float | None]) -> str:
                x = [y for y in v if y is not None]
                return f"{np.mean(x):.1f}" if x else "-"

            inf = "/".join(str(sum(v is None for v in rows[k])) for k in ("smartchain", "sequential", "greedy"))
            print(f"| {d} | {mean(sc)} | {mean(sck)} | {mean(rows['sequential'])} | {mean(rows['greedy'])} "
                  f"| {g_seq:.1f}% | {g_gr:.1f}% | {lost_1} | {lost_k} | {inf} |")
        print()
    print(f"max mean gain (K=n/2): vs sequential {np.nanmax(summary['seq']):.1f}%, vs greedy "
          f"{np.nanmax(summary['greedy']):.1f}% (paper: up to 58%)")
    print(f"instances where SmartChain K=n/2 < a strawman: {summary['k_lost']} of {summary['instances']}")
    print(f"instances where SmartChain K=1 (paper) < greedy: {summary['k1_lost_greedy']} of {summary['instances']}")
    print(f"wall time {time.perf_counter() - t0:.1f} s")
    return 0 if summary["k_lost"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
