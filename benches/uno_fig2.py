"""UNO Fig. 2 predicted by the emulator: no offload vs full offload, 1-3 chained NFs.

The PCIe link is the device-level TLP model (no constant fitted to Fig. 2), so
every UNO number printed is a prediction with its error. Writes DIR/uno_fig2.csv,
DIR/uno_fig2_vs_paper.csv and DIR/uno_fig2.png.

    tandem bench uno_fig2 [-- --out DIR] [--duration 0.05] [--seed 1]

Without --out the files go to benches/results/uno_fig2/.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.experiments import uno_fig2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "uno_fig2")
    ap.add_argument("--duration", type=float, default=0.05, help="simulated seconds per point")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    points = uno_fig2.run((1, 2, 3), duration_s=a.duration, seed=a.seed)
    csv_path, png = uno_fig2.write_outputs(points, a.out)
    print(f"{'mode':13s} {'NFs':>3s} {'chain Gb/s':>10s} {'PCIe Gb/s':>9s} {'crossings':>9s} {'p50 µs @10%':>11s}")
    for p in points:
        print(f"{p.mode:13s} {p.nfs:3d} {p.throughput_gbps:10.2f} {p.pcie_gbps:9.2f} {p.pcie_crossings:9.2f} "
              f"{p.latency_us_p50:11.1f}")
    print("\nUNO §2.3 number            UNO   emulated  error   label")
    for r in uno_fig2.compare(points):
        print(f"{r['mode']} k={r['nfs']} {r['field']:16s} {r['uno']:5.1f} {r['emulated']:9.2f} {r['error_pct']:+6.1f} %  "
              f"{r['label']}")
    print(f"wrote {csv_path}" + (f" and {png}" if png else " (matplotlib missing: no PNG)"))


if __name__ == "__main__":
    main()
