"""FairNIC isolation in the emulator: Fig. 10 (core isolation) and Fig. 12
(coprocessor rate limiting) as tables of throughput against packet size.

Fig. 10 runs examples/fairnic-isolation.yaml (two OVS-like tenants on seven
sNIC cores each, tenant b's packets ten times as costly, both offered more than
their cores take): OVS 1 alone, both without isolation, both with it. Fig. 12
runs two tenants sharing a 10 Gb/s compression engine (OVS 2 sends 10x the
bytes per request, emulated by 10x longer packets), without and with 5 Gb/s
token buckets each. Prints Gb/s per tenant and what the paper reports
in words (the paper gives plots only).

    tandem bench fairnic [-- --duration 0.005] [--sizes 400,800,1400]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from tandem.emu.scenario import build_from_scenario
from tandem.model import parse_scenario_text

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fairnic-isolation.yaml"

ZIP = Path(__file__).resolve().parents[1] / "examples" / "fairnic-accelerator.yaml"


def gbps(doc: dict, duration: float) -> dict[str, float]:
    """Delivered Gb/s per tenant of one run."""
    m, _ = build_from_scenario(parse_scenario_text(yaml.safe_dump(doc)))
    met = m.run(duration)
    return {t: v["throughput_gbps"] for t, v in met["tenants"].items()}


def _print_row(size: int, doc: dict, duration: float) -> None:
    """Tenant a alone, then both tenants with isolation off and on: one table row."""
    alone = yaml.safe_load(yaml.safe_dump(doc))
    del alone["traffic"]["b"]
    a = gbps(alone, duration)["a"]
    doc["run"]["isolation"] = False
    off = gbps(doc, duration)
    doc["run"]["isolation"] = True
    on = gbps(doc, duration)
    print(f"{size:6d} {a:10.2f} {off['a']:12.2f} {off['b']:12.2f} {on['a']:8.2f} {on['b']:8.2f}")


def fig10(sizes: list[int], duration: float) -> None:
    base = yaml.safe_load(EXAMPLE.read_text())
    print("Fig. 10 — core isolation (Gb/s; offered 5 Mpps each)")
    print(f"{'size B':>6s} {'OVS1 alone':>10s} {'OVS1 non-iso':>12s} {'OVS2 non-iso':>12s} {'OVS1 iso':>8s} {'OVS2 iso':>8s}")
    for size in sizes:
        doc = yaml.safe_load(yaml.safe_dump(base))
        for src in doc["traffic"].values():
            src["packet_size"] = f"{size}B"
        # Ports fast enough that only the cores limit (the example's 40 GbE would cap 1400 B).
        doc["devices"]["snic0"]["ports"] = {p: {"rate": "100Gbps"} for p in doc["devices"]["snic0"]["ports"]}
        _print_row(size, doc, duration)
    print("  paper (predicted, shape only; nothing fitted to it): non-isolated, OVS 1 and OVS 2 have the same throughput (head-of-line blocking);")
    print("  isolated, each runs at its own rate and OVS 1 matches its alone line.")


def fig12(sizes: list[int], duration: float) -> None:
    base = yaml.safe_load(ZIP.read_text())
    print("Fig. 12 — coprocessor rate limiting (Gb/s; OVS 2's requests are 10x the bytes)")
    print(f"{'size B':>6s} {'OVS1 alone':>10s} {'OVS1 non-iso':>12s} {'OVS2 non-iso':>12s} {'OVS1 iso':>8s} {'OVS2 iso':>8s}")
    for size in sizes:
        doc = yaml.safe_load(yaml.safe_dump(base))
        doc["traffic"]["a"]["packet_size"] = f"{size}B"
        # 10x the data per request: OVS 2's packets are 10x as long (its offered Gb/s scales alike).
        doc["traffic"]["b"]["packet_size"] = f"{min(size * 10, 9000)}B"
        doc["traffic"]["b"]["bandwidth"] = "40Gbps"
        doc["devices"]["snic0"]["ports"] = {p: {"rate": "100Gbps"} for p in ("a_in", "a_out", "b_in", "b_out")}
        _print_row(size, doc, duration)
    print("  paper (predicted, shape only; nothing fitted to it): without rate limiting OVS 2's large requests pull OVS 1 down; with it OVS 1 is back")
    print("  at its alone throughput and OVS 2 is held to its half of the coprocessor.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=0.005, help="simulated seconds per point")
    ap.add_argument("--sizes", default="400,600,800,1000,1200,1400", help="packet sizes in bytes")
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    fig10(sizes, a.duration)
    print()
    fig12(sizes, a.duration)


if __name__ == "__main__":
    main()
