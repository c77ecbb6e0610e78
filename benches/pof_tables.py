"""OVS-POF-TC Tables II and III: MILP vs the paper's heuristics vs our exact
O(n) algorithm, plus the speed goals.

Usage: tandem bench pof_tables -- [--seeds 3] [--runs 5] [--milp-max 100000]
       [--milp-time-limit 120] [--tau1-us 4] [--quick]
       [--fp-sizes 100,1000] [--fr-sizes 60+40,600+400 | none]
Instances follow §VI: M^sn = 4,800, packet sizes uniform over {64..1024} B,
rates uniform in [100, 40,000] Mbps, C^kr = 0.534 Mpps x packet size; for
flow replacement the existing flows were offloaded first-come-first-serve.
For every size prints objective (us) and time (s) of each method; the time
is the median of `--runs` runs on the seed-0 instance (the MILP runs once:
it is slow). Every method's objective is recomputed with the same formula,
and the run fails if the exact objective is above any other method's on any
seed (minimisation). The MILP is only run up to `--milp-max` flows, with a
time limit; larger rows print "-" like the paper's.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from tandem.placement.pof.exact import solve_fp, solve_fr
from tandem.placement.pof.heuristic import heuristic_fp, heuristic_fr
from tandem.placement.pof.milp import solve_fp_milp, solve_fr_milp
from tandem.placement.pof.model import PofParams, fp_objective, fr_objective, random_fp, random_fr
from tandem.placement.solver import SolverOptions

FP_SIZES = (100, 1_000, 10_000, 100_000, 1_000_000, 3_000_000)
FR_SIZES = ((60, 40), (600, 400), (6_000, 4_000), (60_000, 40_000), (600_000, 400_000), (600_000, 2_400_000))


def timed(fn: Callable[[], object], runs: int) -> tuple[object, float]:
    ts, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return out, statistics.median(ts)


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--milp-max", type=int, default=100_000)
    ap.add_argument("--milp-time-limit", type=float, default=120.0)
    ap.add_argument("--tau1-us", type=float, default=4.0)
    ap.add_argument("--quick", action="store_true", help="sizes up to 100,000 only")
    ap.add_argument("--fp-sizes", help="comma list of flow counts (default: the paper's)")
    ap.add_argument("--fr-sizes", help="comma list of EXISTING+NEW (default: the paper's); 'none' skips")
    a = ap.parse_args()
    params = PofParams(tau1_us=a.tau1_us)
    opts = SolverOptions(time_limit_s=a.milp_time_limit, explain_infeasible=False)
    fp_sizes = [n for n in FP_SIZES if not a.quick or n <= 100_000]
    fr_sizes = [s for s in FR_SIZES if not a.quick or sum(s) <= 100_000]
    if a.fp_sizes:
        fp_sizes = [] if a.fp_sizes == "none" else [int(v) for v in a.fp_sizes.split(",")]
    if a.fr_sizes:
        fr_sizes = [] if a.fr_sizes == "none" else [tuple(int(x) for x in v.split("+")) for v in a.fr_sizes.split(",")]
    bad = 0
    print(f"# OVS-POF-TC Tables II/III — tau1 {params.tau1_us:g}, tau2 {params.tau2_us:g}, tau3 {params.tau3_us:g}, "
          f"tau_add {params.tau_add_us:g}, tau_del {params.tau_del_us:g} us; M^sn {params.capacity}; "
          f"{a.seeds} seeds; times = median of {a.runs} runs (MILP: one run, time limit {a.milp_time_limit:g} s)\n")
    print("## Table II — flow placement\n")
    print("| flows | MILP-FP obj | MILP time (s) | MILP status | heuristic obj | heur. time (s) | heur. gap | exact obj "
          "| exact time (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in fp_sizes:
        row = None
        for seed in range(a.seeds):
            inst = random_fp(n, seed, params)
            runs = a.runs if seed == 0 else 1
            ex, t_ex = timed(lambda: solve_fp(inst), runs)
            hx, t_h = timed(lambda: heuristic_fp(inst), runs)
            h_obj = fp_objective(inst, hx)
            m_obj = m_t = m_st = None
            if n <= a.milp_max and (seed == 0 or n <= 10_000):
                m = solve_fp_milp(inst, opts)
                m_t, m_st = m.solve_time_s + m.build_time_s, m.status.value
                m_obj = fp_objective(inst, m.offload) if m.objective is not None else None
            for other in (h_obj, m_obj):
                if other is not None and ex.objective > other + 1e-6:
                    bad += 1
                    print(f"  EXACT WORSE: n={n} seed={seed} exact {ex.objective} > {other}", file=sys.stderr)
            if seed == 0:
                row = (m_obj, m_t, m_st, h_obj, t_h, ex.objective, t_ex)
        m_obj, m_t, m_st, h_obj, t_h, e_obj, t_ex = row
        gap = (h_obj - e_obj) / e_obj * 100
        print(f"| {n:,} | {fmt(m_obj)} | {'-' if m_t is None else f'{m_t:.3f}'} | {m_st or '-'} | {fmt(h_obj)} "
              f"| {t_h:.4f} | {gap:.4f}% | {fmt(e_obj)} | {t_ex:.4f} |")
        sys.stdout.flush()
    print("\n## Table III — flow replacement\n")
    print("| existing | new | MILP-FR obj | MILP time (s) | MILP status | heuristic obj | heur. time (s) | heur. gap "
          "| exact obj | exact time (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for ne, nw in fr_sizes:
        row = None
        for seed in range(a.seeds):
            inst = random_fr(ne, nw, seed, params)
            runs = a.runs if seed == 0 else 1
            ex, t_ex = timed(lambda: solve_fr(inst), runs)
            (he, hw), t_h = timed(lambda: heuristic_fr(inst), runs)
            h_obj = fr_objective(inst, he, hw)
            m_obj = m_t = m_st = None
            if ne + nw <= a.milp_max and (seed == 0 or ne + nw <= 10_000):
                m = solve_fr_milp(inst, opts)
                m_t, m_st = m.solve_time_s + m.build_time_s, m.status.value
                m_obj = fr_objective(inst, m.offload[:ne], m.offload[ne:]) if m.objective is not None else None
            for other in (h_obj, m_obj):
                if other is not None and ex.objective > other + 1e-6:
                    bad += 1
                    print(f"  EXACT WORSE: {ne}+{nw} seed={seed} exact {ex.objective} > {other}", file=sys.stderr)
            if seed == 0:
                row = (m_obj, m_t, m_st, h_obj, t_h, ex.objective, t_ex)
        m_obj, m_t, m_st, h_obj, t_h, e_obj, t_ex = row
        gap = (h_obj - e_obj) / e_obj * 100
        print(f"| {ne:,} | {nw:,} | {fmt(m_obj)} | {'-' if m_t is None else f'{m_t:.3f}'} | {m_st or '-'} "
              f"| {fmt(h_obj)} | {t_h:.4f} | {gap:.4f}% | {fmt(e_obj)} | {t_ex:.4f} |")
        sys.stdout.flush()
    print(f"\nexact objective <= every other method on every instance: {'yes' if bad == 0 else f'NO ({bad})'}")
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
