"""Wall-clock speed of the real NFs (dp-nf), one core, median of --runs.

  tandem bench nfs [--runs 5] [--packets 200000] [--quick]

Measures, in one invocation and on one pinned core:
  * SECGW decrypt (ESP tunnel, AES-GCM-128) at 1,400-byte frames, Gbps, next to
    `openssl speed -evp aes-128-gcm -bytes 1400` (the raw-crypto limit of this
    CPU), run the same number of times in the same process tree; the ratio is
    median / median;
  * SECGW decrypt with AES-GCM-256, and SECGW encrypt at 1,400 B;
  * SECGW decrypt + L7FW chain at 1,280-byte frames, Gbps;
  * every other NF at 64-byte frames over 1,000 flows, Mpps;
  * state export + import of 1,000 flows per NF (time) and bytes of state per
    flow (per-flow records; shared state listed separately).
Goals (issue 11): SECGW ≥ 20 Gbps and ≥ 0.7× openssl; chain ≥ 10 Gbps; others
≥ 5 Mpps; export+import ≤ 1 ms. The NF loops run inside Rust
(`tandem._dp.nf_bench_*`); each packet is a fresh copy of a pre-built frame.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

from tandem import _dp
from tandem.testing.bench import run_restoring_affinity

OTHERS = ["l7fw", "asset_monitor", "nat", "maglev_lb", "monitor", "logger", "header_classifier", "payload_analyzer", "alert"]
ALL = ["secgw"] + OTHERS


def openssl_gbps(seconds: int) -> float | None:
    """One `openssl speed -evp aes-128-gcm -bytes 1400` run: Gbps, or None without openssl."""
    exe = shutil.which("openssl")
    if not exe:
        return None
    out = subprocess.run([exe, "speed", "-seconds", str(seconds), "-evp", "aes-128-gcm", "-bytes", "1400"],
                         capture_output=True, text=True, check=True).stdout
    m = re.search(r"^AES-128-GCM\s+([\d.]+)k", out, re.M | re.I)
    if not m:
        raise RuntimeError(f"cannot read openssl speed output:\n{out}")
    return float(m.group(1)) * 1000 * 8 / 1e9


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def main() -> int:
    ap = argparse.ArgumentParser(prog="tandem bench nfs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--packets", type=int, default=200_000, help="packets per SECGW repetition")
    ap.add_argument("--mpackets", type=int, default=2_000_000, help="packets per 64-byte repetition")
    ap.add_argument("--openssl-seconds", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="small counts (smoke test)")
    a = ap.parse_args()
    if a.quick:
        a.runs, a.packets, a.mpackets = 3, 20_000, 200_000
    if hasattr(os, "sched_setaffinity"):
        cpu = sorted(os.sched_getaffinity(0))[-1]
        os.sched_setaffinity(0, {cpu})
        print(f"pinned to CPU {cpu}")
    print("load:", open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else "?")
    fails: list[str] = []

    # SECGW decrypt vs openssl, interleaved run by run
    ours, ossl = [], []
    for _ in range(a.runs):
        ours += _dp.nf_bench_secgw_decrypt("aes128gcm", 1400, a.packets, 1, False)
        g = openssl_gbps(a.openssl_seconds)
        if g is not None:
            ossl.append(g)
    s = med(ours)
    print(f"secgw decrypt aes128gcm 1400 B: {s:.2f} Gbps (runs {', '.join(f'{x:.1f}' for x in ours)})  goal >= 20")
    if s < 20:
        fails.append("secgw decrypt < 20 Gbps")
    if ossl:
        o = med(ossl)
        print(f"openssl speed -evp aes-128-gcm -bytes 1400: {o:.2f} Gbps (runs {', '.join(f'{x:.1f}' for x in ossl)})")
        print(f"  ratio secgw/openssl: {s / o:.2f}  goal >= 0.70")
        if s / o < 0.7:
            fails.append("secgw < 0.7x openssl")
    else:
        print("openssl not installed: ratio not measured")
    x = _dp.nf_bench_secgw_decrypt("aes256gcm", 1400, a.packets, a.runs, False)
    print(f"secgw decrypt aes256gcm 1400 B: {med(x):.2f} Gbps")
    x = _dp.nf_bench_secgw_encrypt("aes128gcm", 1400, a.packets, a.runs)
    print(f"secgw encrypt aes128gcm 1400 B: {med(x):.2f} Gbps")
    x = _dp.nf_bench_secgw_decrypt("aes128gcm", 1280, a.packets, a.runs, True)
    print(f"secgw decrypt + l7fw 1280 B: {med(x):.2f} Gbps  goal >= 10")
    if med(x) < 10:
        fails.append("secgw+l7fw < 10 Gbps")

    print(f"\n{'NF':<18} {'Mpps@64B':>9} {'exp+imp 1k flows':>17} {'flows':>6} {'B/flow':>7} {'shared B':>9}")
    for kind in ALL:
        mpps = med(_dp.nf_bench_mpps(kind, 64, 1000, a.mpackets, a.runs)) if kind != "secgw" else float("nan")
        secs, n, bpf, shared = _dp.nf_bench_state(kind, 1000, a.runs)
        t = med(secs)
        print(f"{kind:<18} {mpps:>9.2f} {t * 1e3:>14.3f} ms {n:>6} {bpf:>7.1f} {shared:>9}")
        if kind != "secgw" and mpps < 5:
            fails.append(f"{kind} < 5 Mpps")
        if t > 1e-3:
            fails.append(f"{kind} export+import > 1 ms")
    print("\nsecgw state is per SA (one SA pair here), so its flow count is the SA count.")
    print("goals missed: " + ("; ".join(fails) if fails else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(run_restoring_affinity(main))
