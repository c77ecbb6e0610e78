"""Classifier speed, side by side with DPDK's rte_acl (dpdk-test-acl).

  tandem bench classifier [--rules 10000] [--traces 60000] [--seed 1] [--iter 20] [--runs 5]

Generates one 5-tuple rule set and trace with ../shared/bench/classbench_gen.py,
loads rules.flows (ovs-ofctl syntax) into table 0 of the Rust pipeline, checks
that the classifier returns the expected rule for every packet of trace.csv,
and times the lookups inside Rust (keys are built before the clock starts, as
dpdk-test-acl prepares its trace). If `dpdk-test-acl` is installed (Debian
package dpdk-dev) it runs on the same files, on the same core, in the same run.
Prints both lookup rates (median of --runs) and the ratio. Installs nothing.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tandem.dataplane import Switch
from tandem.rules.ofctl import parse_flows
from tandem.rules.packets import build_frame
from tandem.testing.bench import run_restoring_affinity

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GEN = REPO.parent / "shared" / "bench" / "classbench_gen.py"


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def run_dpdk(out: Path, traces: int, iters: int) -> float | None:
    exe = shutil.which("dpdk-test-acl")
    if exe is None:
        return None
    cmd = [exe, "--no-huge", "-m", "1024", "-l", "0", "--", f"--rulesf={out / 'acl.rules'}",
           f"--tracef={out / 'acl.trace'}", f"--tracenum={traces}", f"--iter={iters}", "--verbose=1"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    m = re.findall(r"([\d.]+) pkt/sec", p.stdout + p.stderr)
    if not m:
        print(f"dpdk-test-acl produced no rate (exit {p.returncode}):\n{(p.stdout + p.stderr)[-800:]}", file=sys.stderr)
        return None
    return float(m[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rules", type=int, default=10000)
    ap.add_argument("--traces", type=int, default=60000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iter", type=int, default=20, help="passes over the trace per timed run (dpdk-test-acl --iter)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per side; the median is reported")
    ap.add_argument("--gen", type=Path, default=DEFAULT_GEN)
    ap.add_argument("--out", type=Path, default=None, help="keep the generated files here")
    a = ap.parse_args()
    if not a.gen.exists():
        print(f"error: rule generator not found at {a.gen} (use --gen PATH)", file=sys.stderr)
        return 2
    try:
        os.sched_setaffinity(0, {0})  # one core, the one dpdk-test-acl gets (-l 0)
    except (AttributeError, OSError):
        pass
    out = a.out or Path(tempfile.mkdtemp(prefix="tandem-classbench-"))
    subprocess.run([sys.executable, str(a.gen), "--rules", str(a.rules), "--traces", str(a.traces),
                    "--seed", str(a.seed), "--out", str(out)], check=True)

    rules = parse_flows((out / "rules.flows").read_text(), str(out / "rules.flows"))
    sw = Switch(range(1, 17), n_tables=1)
    t0 = time.perf_counter()
    sw.add_rules(rules)
    load_s = time.perf_counter() - t0
    frames, expected = [], []
    with open(out / "trace.csv") as f:
        for row in csv.DictReader(f):
            proto = int(row["proto"])
            l4 = {"tcp_src" if proto == 6 else "udp_src": int(row["src_port"]),
                  "tcp_dst" if proto == 6 else "udp_dst": int(row["dst_port"])}
            frames.append(build_frame(ipv4_src=ip(row["src_ip"]), ipv4_dst=ip(row["dst_ip"]), ip_proto=proto, **l4))
            expected.append(int(row["expected_rule_index"]))
    n = a.rules
    want = [-1 if e < 0 else n - e for e in expected]  # rule i has priority N - i

    p = sw.pipeline
    got, _, _ = p.bench_lookup(0, 1, frames, 1, False)
    wrong = [i for i, (g, w) in enumerate(zip(got, want)) if g != w]
    got_c, _, _ = p.bench_lookup(0, 1, frames, 2, True)
    wrong_c = [i for i, (g, w) in enumerate(zip(got_c, want)) if g != w]

    # Interleave the runs (ours, rte_acl, ours, ...) so both see the same machine load.
    ours, ours_cpu, ours_cached, dpdk_runs = [], [], [], []
    have_dpdk = shutil.which("dpdk-test-acl") is not None
    for _ in range(a.runs):
        _, secs, cpu = p.bench_lookup(0, 1, frames, a.iter, False)
        ours.append(len(frames) * a.iter / secs)
        ours_cpu.append(len(frames) * a.iter / cpu if cpu else float("nan"))
        _, secs, _ = p.bench_lookup(0, 1, frames, a.iter, True)
        ours_cached.append(len(frames) * a.iter / secs)
        if have_dpdk:
            r = run_dpdk(out, a.traces, a.iter)
            if r:
                dpdk_runs.append(r)
    med = statistics.median
    dpdk = med(dpdk_runs) if dpdk_runs else None

    print(f"machine: {os.cpu_count()} cores, load average {' / '.join(f'{x:.2f}' for x in os.getloadavg())} (1 / 5 / 15 min)")
    print(f"rule set: {n} ClassBench-style 5-tuple rules ({len(rules)} OpenFlow rules), {len(frames)} packets, seed {a.seed}")
    print(f"tandem classifier: {len(rules)} rules loaded in {load_s:.2f} s; "
          f"correct for {len(frames) - len(wrong)}/{len(frames)} packets (cached path: {len(frames) - len(wrong_c)}/{len(frames)})")
    for i in wrong[:5]:
        print(f"  packet {i}: expected priority {want[i]}, got {got[i]}")
    print(f"tandem lookups/s (decision trees + tuple space fallback, batched, no cache): {med(ours) / 1e6:.2f} M wall "
          f"({med(ours_cpu) / 1e6:.2f} M per CPU-second)  [median of {a.runs} x {a.iter} passes]")
    print(f"tandem lookups/s (one by one through the exact-match flow cache):  {med(ours_cached) / 1e6:.2f} M wall")
    if dpdk is None:
        print("rte_acl: dpdk-test-acl not installed (apt-get install dpdk-dev); no side-by-side figure")
    else:
        print(f"rte_acl lookups/s (dpdk-test-acl, 1 core, same run, interleaved):   {dpdk / 1e6:.2f} M wall  [median of {len(dpdk_runs)}]")
        ratios = [o / d for o, d in zip(ours, dpdk_runs)]
        print(f"ratio tandem/rte_acl (wall, no cache): {med(ours) / dpdk:.2f}   (goal >= 1.0; "
              f"per interleaved pair: {', '.join(f'{r:.2f}' for r in ratios)})")
    if a.out is None:
        shutil.rmtree(out, ignore_errors=True)
    return 0 if not wrong and not wrong_c else 1


if __name__ == "__main__":
    sys.exit(run_restoring_affinity(main))
