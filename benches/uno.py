"""UNO placement speed: the exact fast method next to the HiGHS cut MILP on the
same graphs, both at the same relative gap (default 1e-9, the engines' default).

    tandem bench uno -- [--family chains|random] [--sizes 100 500 5000] [--runs 5] [--snics K]
                        [--milp-limit 60] [--gap 1e-9] [--md FILE]
    tandem bench uno -- --problem FILE [--problem FILE ...]

Families: `chains` (uno.generate.random_problem: NF chains between a port/VM and
a VM), `random` (random_graph_problem: random sparse NF graphs, VMs on the host,
ports on an sNIC, one large free component). `--problem` times your own
placement files (YAML/JSON or a scenario) instead.

For every size, `runs` graphs (seeds 0..runs-1) are solved once by each method;
the median, min and max times are printed, and the proof path of the fast method
is counted. Both answers are checked from their placements (objective and every
budget recomputed here): an answer exceeding a budget by more than
floating-point noise (1e-12 relative) is reported — ours fails the bench, a
MILP answer is solved again with HiGHS's feasibility tolerance at 1e-10 and,
if still over, reported as "MILP answer infeasible" and not compared. Two
answers that meet every budget, both proven, must agree within twice the gap,
else MISMATCH (exit 1). Where HiGHS stops at its limit and ours is proven, its
answer must still bracket ours — its incumbent not below our optimum, its dual
bound not above it (within twice the gap) — else CONTRADICTION (exit 1); the
cases so checked are counted as "bracketed".
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from tandem.placement.uno.fast import solve_fast
from tandem.placement.uno.milp import solve_milp
from tandem.placement.uno.generate import random_graph_problem, random_problem
from tandem.placement.uno.io import load_problem
from tandem.placement.uno.model import budget_excess
from tandem.placement.solver import SolverOptions

NOISE = 1e-12  # relative: what floating-point summation can add to a row exactly at its budget
TIGHT = 1e-10  # HiGHS feasibility tolerance for the re-solve of a MILP answer that exceeds a budget


def violations(p, r) -> dict[str, str]:
    """Rows the placement of `r` exceeds (recomputed from the placement, not the
    solver's numbers), beyond floating-point noise: row -> 'by X (relative Y)'."""
    if r.objective is None:
        return {}
    budgets = {**{f"pcie[{s.name},{d}]": s.pcie_gbps for s in p.snics for d in ("up", "down", "both")},
               **{f"capacity[{s.name},{res}]": v for s in p.snics for res, v in s.capacity.items()},
               **{f"host_capacity[{res}]": v for res, v in p.host_capacity.items()}}
    out = {}
    for row, x in budget_excess(p, r.assignment).items():
        b = abs(budgets.get(row, 1.0))
        if x > NOISE * max(1.0, b):
            out[row] = f"by {x:.3g} (relative {x / max(1.0, b):.2g})"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="tandem bench uno")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 5000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--milp-limit", type=float, default=60.0, help="HiGHS time limit per solve (s)")
    ap.add_argument("--gap", type=float, default=1e-9, help="relative optimality gap both methods prove")
    ap.add_argument("--family", choices=("chains", "random"), default="chains", help="generated graph family")
    ap.add_argument("--problem", action="append", default=[], help="a placement file to time (repeatable)")
    ap.add_argument("--snics", type=int, default=1)
    ap.add_argument("--no-milp", action="store_true")
    ap.add_argument("--md", help="append a markdown table to this file")
    args = ap.parse_args()
    lines = ["| nodes | free | fast median s (min–max) | fast not optimal | MILP median s (min–max) | MILP not optimal | speed-up | fast proof paths |",
             "|---:|---:|---:|---:|---:|---:|---:|---|"]
    gen = random_graph_problem if args.family == "random" else random_problem
    if args.problem:
        cases = [(f, [load_problem(Path(f))]) for f in args.problem]
    else:
        cases = [(n, [gen(n, seed=seed, snics=args.snics) for seed in range(args.runs)]) for n in args.sizes]
    print(f"family {'files' if args.problem else args.family}, gap {args.gap:g}, {args.runs} graphs per size, "
          f"sNICs {args.snics}, HiGHS limit {args.milp_limit:g} s, load {os.getloadavg()[0]:.2f}")
    print(f"answers checked from their placements: a budget exceeded by more than {NOISE:g} relative is a violation")
    bad = 0
    for n, problems in cases:
        tf, tm, paths, free, unsolved, fast_unsolved = [], [], collections.Counter(), [], 0, 0
        cpu = []  # the fast method's CPU seconds: what a busy machine does not inflate
        milp_infeasible = 0
        bracketed = 0  # HiGHS unproven, its incumbent and bound on either side of our proven optimum
        crashes = 0
        for seed, p in enumerate(problems):
            _ = p.arrays
            free.append(len(p.arrays.free))
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                rf = solve_fast(p, time_limit_s=args.milp_limit, rel_gap=args.gap)
            except Exception as e:  # noqa: BLE001 - a crash is a figure of this bench
                print(f"CRASH n={n} seed={seed}: {type(e).__name__}: {e}", file=sys.stderr)
                crashes += 1
                continue
            tf.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            paths[rf.details.get("fast_path", "?")] += 1
            fast_unsolved += rf.status != "optimal"
            over = violations(p, rf)
            if over:  # our answer must meet every budget exactly
                print(f"FAST INFEASIBLE n={n} seed={seed}: {over}", file=sys.stderr)
                bad += 1
            if not args.no_milp:
                t0 = time.perf_counter()
                rm = solve_milp(p, time_limit_s=args.milp_limit, rel_gap=args.gap)
                tm.append(time.perf_counter() - t0)
                if rm.objective is not None and violations(p, rm):
                    # HiGHS accepts rows up to its feasibility tolerance (1e-6 by default): solve
                    # again with its tightest one; the time of the first solve is what is reported
                    first = violations(p, rm)
                    rm = solve_milp(p, time_limit_s=args.milp_limit, rel_gap=args.gap,
                                    options=SolverOptions(time_limit_s=args.milp_limit, mip_rel_gap=args.gap,
                                                          feasibility_tol=TIGHT))
                    again = violations(p, rm) if rm.objective is not None else {}
                    print(f"note n={n} seed={seed}: MILP solution exceeds {first}; re-solved with feasibility "
                          f"tolerance {TIGHT:g}: " + (f"still exceeds {again}" if again else
                                                      f"meets every budget, objective {rm.objective!r}"), file=sys.stderr)
                    if again:
                        milp_infeasible += 1
                        continue
                if rm.status != "optimal":
                    unsolved += 1
                    if rf.status == "optimal":
                        slack = 2 * max(args.gap, 1e-12) * max(1.0, abs(rf.objective))
                        bound = rm.details.get("bound")
                        if (rm.objective is not None and rm.objective < rf.objective - slack) or \
                                (bound is not None and bound > rf.objective + slack):
                            print(f"CONTRADICTION n={n} seed={seed}: fast proves {rf.objective!r}, HiGHS has incumbent "
                                  f"{rm.objective!r} and bound {bound!r}", file=sys.stderr)
                            bad += 1
                        else:
                            bracketed += 1
                elif rf.status == "optimal" and abs(rf.objective - rm.objective) > 2 * max(args.gap, 1e-12) * max(1.0, abs(rm.objective)):
                    print(f"MISMATCH n={n} seed={seed}: fast {rf.objective!r} milp {rm.objective!r} "
                          f"(both meet every budget; objectives recomputed from the placements)", file=sys.stderr)
                    bad += 1
        if not tf:
            print(f"n={n}: every solve crashed ({crashes})")
            bad += 1
            continue
        bad += crashes
        mf = statistics.median(tf)
        mm = statistics.median(tm) if tm else float("nan")
        print(f"n={n!s:>5} free≈{statistics.median(free):.0f}  fast {mf:.4f} s ({min(tf):.4f}–{max(tf):.4f}),"
              f" CPU {statistics.median(cpu):.4f} s ({min(cpu):.4f}–{max(cpu):.4f})"
              + ("" if not tm else f"  milp {mm:.3f} s ({min(tm):.3f}–{max(tm):.3f}), not optimal in limit: {unsolved}"
                 f"  speed-up ×{mm / mf:.0f}  MILP answer infeasible: {milp_infeasible}  bracketed: {bracketed}") + f"  fast not optimal in limit: {fast_unsolved}  crashes: {crashes}"
              f"  paths {dict(paths)}")
        lines.append(f"| {n} | {statistics.median(free):.0f} | {mf:.4f} ({min(tf):.4f}–{max(tf):.4f}) | {fast_unsolved}/{len(tf)} | "
                     + (f"{mm:.3f} ({min(tm):.3f}–{max(tm):.3f}) | {unsolved}/{len(tm)} | ×{mm / mf:.0f} |" if tm else "— | — | — |")
                     + f" {', '.join(f'{k}: {v}' for k, v in paths.items())} |")
    if args.md:
        head = (f"\n### UNO speed, gap {args.gap:g}, {args.snics} sNIC(s) — {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, "
                f"2 cores (shared), Python {platform.python_version()}\n\n"
                f"`tandem bench uno -- --family {args.family} --sizes {' '.join(map(str, args.sizes))} --runs {args.runs} --gap {args.gap:g} "
                f"--milp-limit {args.milp_limit:g} --snics {args.snics}`\n\n")
        with open(args.md, "a") as f:
            f.write(head + "\n".join(lines) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
