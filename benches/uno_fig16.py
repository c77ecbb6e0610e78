"""UNO Fig. 16 as a prediction: sweep the PCIe budget T (10–100 Gbps) on the Fig. 15
placement graph and write host/sNIC cores and PCIe use as CSV and PNG. The DPI
costs are calibrated on UNO §5.3 (5 host / 10 sNIC cores at 9 Gbps); UNO does not
publish Fig. 15's edge weights, so only the curve's shape (host cores falling,
sNIC cores rising, flat once the sNIC is full) can be compared.

    tandem bench uno_fig16 --out DIR [--input examples/uno-fig15-dpi.yaml] [--step 5]

Both exact methods are run at every T; the bench fails if they disagree.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

from tandem.placement.uno.io import load_problem
from tandem.placement.uno.sweep import sweep_pcie

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(prog="tandem bench uno_fig16")
    ap.add_argument("--out", type=Path, default=Path("out/uno_fig16"))
    ap.add_argument("--input", type=Path, default=ROOT / "examples" / "uno-fig15-dpi.yaml")
    ap.add_argument("--step", type=float, default=5.0)
    args = ap.parse_args()
    p = load_problem(args.input)
    Ts = [10 + args.step * i for i in range(int(90 / args.step) + 1)]
    fast = sweep_pcie(p, Ts, "fast")
    milp = sweep_pcie(p, Ts, "milp")
    for a, b in zip(fast, milp):
        if abs(a["objective"] - b["objective"]) > 1e-6 * max(1.0, abs(b["objective"])):
            print(f"MISMATCH at T={a['T_gbps']}: fast {a['objective']} vs milp {b['objective']}", file=sys.stderr)
            return 1
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "uno_fig16.csv"
    cols = ["T_gbps", "host_cores", "snic_cores", "pcie_used_gbps", "pcie_up_gbps", "pcie_down_gbps", "offloaded_nfs",
            "objective", "status", "solve_time_s"]
    with csv_path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols + ["milp_solve_time_s"])
        for a, b in zip(fast, milp):
            w.writerow([a[c] for c in cols] + [b["solve_time_s"]])
    print(f"{'T':>6} {'host cores':>11} {'sNIC cores':>11} {'PCIe used':>10} {'NFs on sNIC':>12} {'fast ms':>8} {'milp ms':>8}")
    for a, b in zip(fast, milp):
        print(f"{a['T_gbps']:6.0f} {a['host_cores']:11.2f} {a['snic_cores']:11.2f} {a['pcie_used_gbps']:10.2f} "
              f"{a['offloaded_nfs']:12d} {a['solve_time_s'] * 1e3:8.1f} {b['solve_time_s'] * 1e3:8.1f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: CSV only (pip install -e '.[plot]')", file=sys.stderr)
        print(f"wrote {csv_path}")
        return 0
    T = [r["T_gbps"] for r in fast]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    ax1.plot(T, [r["host_cores"] for r in fast], "o-", label="x86 host cores")
    ax1.plot(T, [r["snic_cores"] for r in fast], "s-", label="sNIC cores")
    ax1.axhline(p.snics[0].capacity.get("cores", 0), ls=":", c="gray", label="sNIC capacity D")
    ax1.set_xlabel("maximum PCIe bandwidth T (Gbps)"); ax1.set_ylabel("cores"); ax1.legend(); ax1.set_title("(a) core usage")
    ax2.plot(T, [r["pcie_used_gbps"] for r in fast], "o-", label="PCIe used")
    ax2.plot(T, T, ":", c="gray", label="T")
    ax2.set_xlabel("maximum PCIe bandwidth T (Gbps)"); ax2.set_ylabel("Gbps"); ax2.legend(); ax2.set_title("(b) PCIe usage")
    fig.suptitle("UNO Fig. 16 (predicted shape): DPI placement on the Fig. 15 graph")
    fig.tight_layout()
    png = args.out / "uno_fig16.png"
    fig.savefig(png, dpi=120)
    print(f"wrote {csv_path} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
