"""Input fuzz at scale: N damaged inputs (default 100,000) through the real commands.

Every input kind of tandem.testing.fuzz - scenario, rules, groups, topology,
uno, smartchain, pof-fp, pof-fr, pcap - in turn, each case seeded by
(--seed, case number), so a failure is reproducible alone with
`--only CASE`. Each case must end in success or clean error lines with a
documented exit code (README "Exit codes") within 2 s, never a traceback;
worker processes run the cases, each under an address-space limit, and report
their peak resident memory (the 1 GB bound is checked against it); the 2 s bound
is on each case's CPU time (wall time, printed too, depends on the machine's load). Prints
counts per kind and exit code, the slowest case, peak memory, and every
contract violation (exit status 1 if there is one).

    tandem bench fuzz [-- --cases 100000 --workers 2 --seed 1 --kinds scenario,rules]
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tandem.testing.fuzz import KINDS, TIME_LIMIT_S, make_case, run_case, verdict

MEMORY_LIMIT = 1 << 30  # peak RSS bound per case (checked on the worker's peak)
ADDRESS_SPACE = 6 << 30  # hard stop for a runaway allocation (virtual: libraries count too)


def _init_worker() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = ADDRESS_SPACE if hard == resource.RLIM_INFINITY else min(ADDRESS_SPACE, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    import logging

    logging.disable(logging.CRITICAL)


def _case_rng(seed: int, i: int) -> random.Random:
    return random.Random(seed * 1_000_003 + i)


def run_chunk(args: tuple[int, list[int], list[str], int]) -> list[tuple]:
    seed, indices, kinds, run_every = args
    out = []
    work = Path(tempfile.mkdtemp(prefix="tandem-fuzz-"))
    try:
        for i in indices:
            kind = kinds[i % len(kinds)]
            case = make_case(kind, _case_rng(seed, i), run_valid=(i // len(kinds)) % run_every == 0)
            d = work / str(i)
            t = time.perf_counter()
            try:
                outcomes = run_case(case, d)
                problems = [v for v in (verdict(o) for o in outcomes) if v]
                codes = tuple(o.code for o in outcomes)
                slowest = max(o.seconds for o in outcomes)
                cpu = max(o.cpu_seconds or 0.0 for o in outcomes)
            except BaseException as e:  # noqa: BLE001 - the harness itself must keep going
                problems, codes, slowest = [f"harness: {type(e).__name__}: {e}"], (-1,), time.perf_counter() - t
                cpu = slowest
            peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            if peak_kb * 1024 > MEMORY_LIMIT:
                problems.append(f"peak memory {peak_kb / 1024:.0f} MB > {MEMORY_LIMIT >> 20} MB")
            out.append((i, kind, codes, slowest, peak_kb, problems, cpu))
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, of: {', '.join(KINDS)}")
    ap.add_argument("--run-every", type=int, default=10,
                    help="also `tandem run` every Nth valid scenario/pcap case (runs are the slow part)")
    ap.add_argument("--only", type=int, default=None, help="run one case number (to reproduce a failure)")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        sys.exit(f"unknown kind(s) {', '.join(unknown)}; known: {', '.join(KINDS)}")
    indices = [args.only] if args.only is not None else list(range(args.cases))
    chunk = 200
    jobs = [(args.seed, indices[k:k + chunk], kinds, args.run_every) for k in range(0, len(indices), chunk)]
    t0 = time.monotonic()
    results: list[tuple] = []
    print(f"fuzz: {len(indices):,} cases over {', '.join(kinds)}; {args.workers} worker(s); seed {args.seed}; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)
    with mp.get_context("fork").Pool(args.workers, initializer=_init_worker) as pool:
        next_report = 0.1
        for part in pool.imap_unordered(run_chunk, jobs):
            results += part
            if len(results) / len(indices) >= next_report:
                print(f"  {len(results):,}/{len(indices):,} cases, {time.monotonic() - t0:.0f} s", flush=True)
                next_report += 0.1
    wall = time.monotonic() - t0
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    bad = []
    for i, kind, codes, slowest, peak, problems, _ in results:
        by_kind[kind][codes[0]] += 1
        if len(codes) > 1:
            by_kind[kind][f"run:{codes[1]}"] += 1
        if problems:
            bad.append((i, kind, problems))
    slow = max(results, key=lambda r: r[3])
    slow_cpu = max(results, key=lambda r: r[6])
    peak = max(r[4] for r in results)
    print(f"\n{'kind':12} {'cases':>8} {'exit 0':>8} {'exit 1':>8} {'exit 2':>8} {'exit 3':>7} {'other':>6} {'+run ok':>8} {'+run err':>8}")
    for kind in kinds:
        c = by_kind[kind]
        n = sum(v for k, v in c.items() if not str(k).startswith("run:"))
        other = sum(v for k, v in c.items() if isinstance(k, int) and k not in (0, 1, 2, 3))
        run_ok = c.get("run:0", 0)
        run_err = sum(v for k, v in c.items() if str(k).startswith("run:") and k != "run:0")
        print(f"{kind:12} {n:8,} {c[0]:8,} {c[1]:8,} {c[2]:8,} {c[3]:7,} {other:6,} {run_ok:8,} {run_err:8,}")
    print(f"\n{len(results):,} cases in {wall:.0f} s wall; slowest case {slow_cpu[6]:.3f} s CPU (#{slow_cpu[0]}, {slow_cpu[1]}; "
          f"limit {TIME_LIMIT_S} s), {slow[3]:.3f} s wall (#{slow[0]}, {slow[1]}; load {os.getloadavg()[0]:.1f}); "
          f"peak worker RSS {peak / 1024:.0f} MB (limit {MEMORY_LIMIT >> 20} MB)")
    print(f"contract violations (traceback, undocumented exit code, no message, over time/memory): {len(bad)}")
    for i, kind, problems in sorted(bad)[:20]:
        print(f"  case {i} ({kind}): {'; '.join(problems)[:300]}   (reproduce: tandem bench fuzz -- --seed {args.seed} --kinds {','.join(kinds)} --only {i})")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
