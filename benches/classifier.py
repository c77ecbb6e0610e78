"""Classifier speed, side by side with DPDK's rte_acl (dpdk-test-acl).

  tandem bench classifier [--rules 10000] [--traces 60000] [--seed 1] [--iter 20] [--runs 5]
  tandem bench classifier --rules FILE --trace FILE [--iter 20] [--runs 5] [--alg NAME]

Rules and trace are ClassBench / dpdk-test-acl files: generated with
../shared/bench/classbench_gen.py (acl.rules, acl.trace, and trace.csv with the
expected rule of every packet), or given with --rules FILE --trace FILE. The
rules go straight into a dp-core classifier, one classifier rule per line
(port ranges are held as ranges; a port range without a protocol is one rule,
not a tcp + udp pair). Before timing, every packet's answer is checked three
ways: against a linear scan of the rules, against the generator's expected
rule (when there is a trace.csv), and against rte_acl's own per-packet results
(dpdk-test-acl --verbose=3, one pass). Then our batched lookups (timed inside
Rust on pre-built keys, as dpdk-test-acl pre-builds its trace) and
dpdk-test-acl (same files, same core, --alg default unless --alg is given)
run interleaved, --runs pairs. Prints the medians, every pair's ratio, and
per-CPU-second figures (ours: this thread's CPU time; rte_acl: the child's
CPU time minus that of a one-pass run, i.e. its search loop). Where the CPU
has AVX-512 the trees are walked with it; the scalar walk's answers are
checked too, and with --scalar-pairs N it is timed against the AVX-512 walk
in N interleaved pairs in this process (an A/B that a busy machine disturbs
less than a ratio to another program). Installs nothing (`make bench-deps`
installs dpdk-dev).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tandem import _dp
from tandem.rules import classbench
from tandem.testing.bench import run_restoring_affinity

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GEN = REPO.parent / "shared" / "bench" / "classbench_gen.py"


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_dpdk(rules: Path, trace: Path, n: int, iters: int, alg: str | None, verbose: int = 1) -> tuple[str, float]:
    """dpdk-test-acl's output and the CPU seconds it used."""
    cmd = ["dpdk-test-acl", "--no-huge", "-m", "1024", "-l", "0", "--", f"--rulesf={rules}", f"--tracef={trace}",
           f"--tracenum={n}", f"--iter={iters}", f"--verbose={verbose}"]
    if alg:
        cmd.append(f"--alg={alg}")
    c0 = child_cpu()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    return p.stdout + p.stderr, child_cpu() - c0


def dpdk_rate(out: str) -> float | None:
    m = re.findall(r"([\d.]+) pkt/sec", out)
    return float(m[-1]) if m else None


def dpdk_answers(out: str, n_pkts: int, n_rules: int) -> list[int] | None:
    """Per-packet rule index from dpdk-test-acl --verbose=3 (-1: none)."""
    got = [-2] * n_pkts
    for m in re.finditer(r"ipv4_5tuple: (\d+), category: 0, result: (\d+)", out):
        i, r = int(m.group(1)) - 1, int(m.group(2))
        if 0 <= i < n_pkts:
            got[i] = r if r < n_rules else -1
    return None if -2 in got else got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", default="10000", help="rules to generate, or a ClassBench rule file (with --trace)")
    ap.add_argument("--trace", type=Path, default=None, help="ClassBench trace file (with --rules FILE)")
    ap.add_argument("--traces", type=int, default=60000, help="packets to generate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iter", type=int, default=20, help="passes over the trace per timed run (dpdk-test-acl --iter)")
    ap.add_argument("--runs", type=int, default=5, help="interleaved pairs; medians are reported")
    ap.add_argument("--alg", default=None, help="dpdk-test-acl --alg (default: its default, the best path of the CPU)")
    ap.add_argument("--gen", type=Path, default=DEFAULT_GEN)
    ap.add_argument("--out", type=Path, default=None, help="keep the generated files here")
    ap.add_argument("--scalar-pairs", type=int, default=0, help="also time the scalar tree walk against the AVX-512 one, N interleaved pairs")
    a = ap.parse_args()
    try:
        os.sched_setaffinity(0, {0})  # one core, the one dpdk-test-acl gets (-l 0)
    except (AttributeError, OSError):
        pass
    tmp = None
    expected = None
    if a.rules.isdigit() and a.trace is None:
        if not a.gen.exists():
            print(f"error: rule generator not found at {a.gen} (use --gen PATH)", file=sys.stderr)
            return 2
        out = a.out or Path(tmp := tempfile.mkdtemp(prefix="tandem-classbench-"))
        subprocess.run([sys.executable, str(a.gen), "--rules", a.rules, "--traces", str(a.traces),
                        "--seed", str(a.seed), "--out", str(out)], check=True)
        rules_path, trace_path = out / "acl.rules", out / "acl.trace"
        rows = (out / "trace.csv").read_text().splitlines()[1:]
        expected = [int(r.rsplit(",", 1)[1]) for r in rows]
        what = f"{a.rules} generated ClassBench-style rules, {a.traces} packets, seed {a.seed}"
    elif a.rules.isdigit() or a.trace is None:
        print("error: --rules FILE and --trace FILE go together", file=sys.stderr)
        return 2
    else:
        rules_path, trace_path = Path(a.rules), a.trace
        what = f"rules {rules_path}, trace {trace_path}"
    try:
        rules, pkts = classbench.load(rules_path, trace_path)
    except classbench.ClassBenchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    b = _dp.AclBench([(r.src, r.src_len, r.dst, r.dst_len, *r.sport, *r.dport, r.proto, r.proto_mask) for r in rules],
                     [(p.src, p.dst, p.sport, p.dport, p.proto) for p in pkts])
    n = len(pkts)
    ours_ans = b.answers()
    simd = b.uses_simd()
    ref = b.reference()
    checks = [("linear scan of the rules", ref)]
    if expected is not None:
        checks.append(("generator's expected rule", expected))
    have_dpdk = shutil.which("dpdk-test-acl") is not None
    dpdk_ans = None
    if have_dpdk:
        out_v, _ = run_dpdk(rules_path, trace_path, n, 1, a.alg, verbose=3)
        dpdk_ans = dpdk_answers(out_v, n, len(rules))
        if dpdk_ans is None:
            print(f"dpdk-test-acl gave no per-packet results:\n{out_v[-800:]}", file=sys.stderr)
            return 1
        checks.append(("rte_acl's results", dpdk_ans))
    bad = False
    lines = []
    for name, want in checks:
        wrong = [i for i, (g, w) in enumerate(zip(ours_ans, want)) if g != w]
        lines.append(f"  tandem vs {name}: {n - len(wrong)}/{n} packets agree")
        for i in wrong[:3]:
            lines.append(f"    packet {i}: tandem rule {ours_ans[i]}, {name} {want[i]}")
        bad |= bool(wrong)
    if dpdk_ans is not None:
        wrong = sum(1 for d, r in zip(dpdk_ans, ref) if d != r)
        lines.append(f"  rte_acl vs linear scan of the rules: {n - wrong}/{n} packets agree")
    scalar_pairs = []
    if simd:
        b.set_simd(False)
        scalar_ans = b.answers()
        wrong = sum(1 for g, r in zip(scalar_ans, ref) if g != r)
        lines.append(f"  tandem's scalar tree walk vs linear scan of the rules: {n - wrong}/{n} packets agree")
        bad |= wrong > 0
        for _ in range(a.scalar_pairs):
            _, cpu_s = b.time(a.iter)
            b.set_simd(True)
            b.answers()  # rebuild
            _, cpu_v = b.time(a.iter)
            b.set_simd(False)
            b.answers()
            scalar_pairs.append((n * a.iter / cpu_v, n * a.iter / cpu_s))
        b.set_simd(True)
        b.answers()

    # rte_acl's setup CPU (EAL, rule load, build): a one-pass run, median of 3
    setup = None
    if have_dpdk:
        setup = statistics.median(run_dpdk(rules_path, trace_path, n, 1, a.alg)[1] for _ in range(3))
    ours, ours_cpu, dpdk, dpdk_cpu = [], [], [], []
    for _ in range(a.runs):
        secs, cpu = b.time(a.iter)
        ours.append(n * a.iter / secs)
        ours_cpu.append(n * a.iter / cpu if cpu else float("nan"))
        if have_dpdk:
            out_t, cpu_d = run_dpdk(rules_path, trace_path, n, a.iter, a.alg)
            r = dpdk_rate(out_t)
            if r is None:
                print(f"dpdk-test-acl produced no rate:\n{out_t[-800:]}", file=sys.stderr)
                return 1
            dpdk.append(r)
            search = cpu_d - setup  # the (iter - 1) extra passes' CPU, plus one pass
            dpdk_cpu.append(n * (a.iter - 1) / search if a.iter > 1 and search > 0 else float("nan"))
    med = statistics.median
    stats = b.tree_stats()
    print(f"machine: {os.cpu_count()} cores, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min)")
    print(f"input: {what}")
    print(f"tandem classifier: {len(rules)} rules -> {b.n_rules()} classifier rules"
          + (f"; decision trees {stats[0] * 16 / 1e6:.1f} MB, {stats[1]} dimensions, {stats[4]} rules in trees, "
             f"{stats[3]} subtables left to tuple space" if stats else ""))
    print("answers checked before timing:")
    print("\n".join(lines))
    print(f"tandem lookups/s (batched, no cache, {'AVX-512' if simd else 'scalar'} tree walk): {med(ours) / 1e6:.2f} M wall, "
          f"{med(ours_cpu) / 1e6:.2f} M per CPU-second  [median of {a.runs} x {a.iter} passes]")
    if scalar_pairs:
        r = [v / s_ for v, s_ in scalar_pairs]
        print(f"AVX-512 vs scalar tree walk, per CPU-second: {med(v for v, _ in scalar_pairs) / 1e6:.2f} M vs "
              f"{med(s_ for _, s_ in scalar_pairs) / 1e6:.2f} M; ratio {med(r):.2f} (pairs: {', '.join(f'{x:.2f}' for x in r)})")
    if not have_dpdk:
        print("rte_acl: dpdk-test-acl not installed (make bench-deps); no side-by-side figure")
    else:
        alg = a.alg or "default"
        print(f"rte_acl lookups/s (dpdk-test-acl --alg={alg}, 1 core, interleaved): {med(dpdk) / 1e6:.2f} M (its own clock), "
              f"{med(dpdk_cpu) / 1e6:.2f} M per CPU-second of its search")
        ratios = [o / d for o, d in zip(ours, dpdk)]
        print(f"ratio tandem/rte_acl: {med(ratios):.2f} (median of pairs: {', '.join(f'{r:.2f}' for r in ratios)}); "
              f"per CPU-second: {med(ours_cpu) / med(dpdk_cpu):.2f}")
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run_restoring_affinity(main))
