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


def openssl_gbps(seconds: int, elapsed: bool = False) -> float | None:
    """One `openssl speed -evp aes-128-gcm -bytes 1400` run: Gbps, or None without
    openssl. By default openssl divides by its CPU (user) time; `elapsed` adds
    `-elapsed` (wall time, like our loops)."""
    exe = shutil.which("openssl")
    if not exe:
        return None
    cmd = [exe, "speed", *(["-elapsed"] if elapsed else []), "-seconds", str(seconds), "-evp", "aes-128-gcm",
           "-bytes", "1400"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
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
    flags = set()
    if os.path.exists("/proc/cpuinfo"):
        for line in open("/proc/cpuinfo"):
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    print("CPU AES features:", " ".join(f for f in ("aes", "pclmulqdq", "avx2", "vaes", "vpclmulqdq") if f in flags) or "none",
          "(ring picks AES-NI+CLMUL or VAES+VPCLMULQDQ/AVX2 code at run time)")
    ours, ours_cpu, ossl, ossl_wall = [], [], [], []
    for _ in range(a.runs):
        (w, c), = _dp.nf_bench_secgw_decrypt("aes128gcm", 1400, a.packets, 1, False)
        ours.append(w)
        ours_cpu.append(c)
        g = openssl_gbps(a.openssl_seconds)
        if g is not None:
            ossl.append(g)
            ossl_wall.append(openssl_gbps(a.openssl_seconds, elapsed=True))
    s, sc = med(ours), med(ours_cpu)
    runs = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    print(f"secgw decrypt aes128gcm 1400 B: {s:.2f} Gbps wall (runs {runs(ours)})  goal >= 20")
    print(f"  same loop per CPU time: {sc:.2f} Gbps (runs {runs(ours_cpu)})")
    if s < 20:
        fails.append("secgw decrypt < 20 Gbps")
    if ossl:
        o, w = med(ossl), med(ossl_wall)
        print(f"openssl speed -evp aes-128-gcm -bytes 1400 (CPU time): {o:.2f} Gbps (runs {runs(ossl)})")
        print(f"openssl speed -elapsed ... (wall time): {w:.2f} Gbps (runs {runs(ossl_wall)})")
        print(f"  ratio secgw/openssl: wall/wall {s / w:.2f}, CPU/CPU {sc / o:.2f}, wall/openssl-default {s / o:.2f}"
              f"  goal >= 0.70")
        if s / w < 0.7 or (sc and sc / o < 0.7):
            fails.append("secgw < 0.7x openssl")
    else:
        print("openssl not installed: ratio not measured")
    x = _dp.nf_bench_secgw_decrypt("aes256gcm", 1400, a.packets, a.runs, False)
    print(f"secgw decrypt aes256gcm 1400 B: {med([w for w, _ in x]):.2f} Gbps wall, {med([c for _, c in x]):.2f} CPU")
    x = _dp.nf_bench_secgw_encrypt("aes128gcm", 1400, a.packets, a.runs)
    print(f"secgw encrypt aes128gcm 1400 B: {med(x):.2f} Gbps wall")
    x = _dp.nf_bench_secgw_decrypt("aes128gcm", 1280, a.packets, a.runs, True)
    cw, cc = med([w for w, _ in x]), med([c for _, c in x])
    print(f"secgw decrypt + l7fw 1280 B: {cw:.2f} Gbps wall, {cc:.2f} CPU  goal >= 10")
    if cw < 10:
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
    print("\nsecgw state is per SA (one SA pair here), so its flow count is the SA count;")
    print("B/flow = per-flow records / flows (13-byte key included); shared B = multi-flow state.")
    print("goals missed: " + ("; ".join(fails) if fails else "none"))
    return 0


if __name__ == "__main__":
    sys.exit(run_restoring_affinity(main))
