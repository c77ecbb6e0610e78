"""What `tandem bench NAME` does for a benchmark that is a reproduced figure: run the
experiment(s) of `tandem reproduce` (one implementation per figure), print the data
table, the paper-vs-Tandem values with their labels and the verdict, and the load.

    tandem bench uno_fig2 [--out DIR] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

from tandem.reproduce import report, runner


def print_summary(s: dict, out: Path) -> None:
    print(f"## {s['name']} — {s['paper_short']} {s['figure']}: {s['shows']}")
    with (out / s["name"] / "data.csv").open() as f:
        rows = list(csv.reader(f))
    if rows:
        width = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(len(rows[0]))]
        for r in rows[:60]:
            print("  " + "  ".join(c[:14].rjust(min(w, 14)) for c, w in zip(r, width)))
        if len(rows) > 60:
            print(f"  ... {len(rows) - 60} more rows in data.csv")
    print(f"  {'value':44s} {'paper':>14s} {'Tandem':>14s}  label       verdict")
    for v in s["values"]:
        paper = report.fmt(v["paper"]) if v["paper"] is not None else (v["paper_text"] or "")
        print(f"  {v['what'][:44]:44s} {paper[:14]:>14s} {report.fmt(v['ours'])[:14]:>14s}  {v['label']:11s} "
              f"{v['verdict']}" + (f" ({v['why']})" if v["verdict"] == "differs" else ""))
    print(f"  trend: {s['trend'].get('says')}")
    print(f"  verdict: {s['verdict']}  ({s['seconds']:.1f} s; files in {out / s['name']})")


def bench_main(names: list[str], doc: str) -> int:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/bench-reproduce"))
    ap.add_argument("--quick", action="store_true", help="the smallest sizes")
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min)")
    bad = 0
    for n in names:
        s = runner.run_one(n, a.out, quick=a.quick)
        print_summary(s, a.out)
        bad += s["verdict"] not in (runner.REPRODUCED, runner.TREND)
    return 1 if bad else 0
